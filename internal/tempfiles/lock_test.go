package tempfiles

import (
	"errors"
	"os"
	"testing"
)

func TestIsTempOf(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		want      bool
	}{
		{".scene.tif.123456.tmp.tif", "scene", true}, // geo's product temporary
		{".scene.tif.123456.tmp.tif.aux.xml", "scene", true},
		{".scene.tif.2678848612.stage.tif", "scene", true},
		{".scene.v2.tif.1.stage.tif", "scene", false}, // scene.v2's
		{".scene.v2.tif.1.stage.tif", "scene.v2", true},
		{"scene.tif.stage", "scene", false},
		{".scene.json.pnec-tmp-0a1b2c3d", "scene", true}, // writeFileAtomic
		{"scene.tif.tmp", "scene", true},
		{"scene.tif", "scene", false},
		{"scene.json", "scene", false},
		{"scene.tif.aux.xml", "scene", false},
		{".scene.pnec-lock", "scene", false},
		{"tmpscene.tif", "tmpscene", false},
		{".scene2.tif.1.tmp.tif", "scene", false},
		{".other.tif.1.tmp.tif", "scene", false},
		{".scene.reliability.tif.1.stage.tif", "scene", true}, // the Float32 reliability's
		{".scene.qml.pnec-tmp-0a1b2c3d", "scene", true},       // the style's
		{"scene.qml.tmp", "scene", false},                     // only tif and json without the dot
		{".scene.vrt.1.stage.tif", "scene", false},
	} {
		if got := IsTempOf(tc.name, tc.key); got != tc.want {
			t.Errorf("IsTempOf(%q, %q) = %v, want %v", tc.name, tc.key, got, tc.want)
		}
	}
}

func TestLock(t *testing.T) {
	dir := t.TempDir()
	l, err := TryLock(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(dir, "s"); !errors.Is(err, ErrBusy) {
		t.Errorf("second lock got %v, want ErrBusy", err)
	}
	l2, err := TryLock(dir, "other")
	if err != nil {
		t.Fatalf("lock of another scene: %v", err)
	}
	l2.Release()
	l.Release()
	if _, err := os.Stat(LockPath(dir, "s")); !os.IsNotExist(err) {
		t.Errorf("lock file left after release: %v", err)
	}
	l3, err := TryLock(dir, "s")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l3.Release()
}
