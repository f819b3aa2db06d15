package tempfiles

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestIsTempOf(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		want      bool
	}{
		{".scene.tif.pnec-123456.tmp.tif", "scene", true}, // geo's product temporary
		{".scene.tif.pnec-123456.tmp.tif.aux.xml", "scene", true},
		{".scene.tif.pnec-2678848612.stage.tif", "scene", true},
		{".scene.tif.pnec-1.stage.IMD", "scene", true},     // a sidecar GDAL wrote for a stage
		{".scene.v2.tif.pnec-1.stage.tif", "scene", false}, // scene.v2's
		{".scene.v2.tif.pnec-1.stage.tif", "scene.v2", true},
		{"scene.tif.stage", "scene", false},
		{".scene.json.pnec-tmp-0a1b2c3d", "scene", true}, // WriteFile
		{"scene.tif", "scene", false},
		{"scene.json", "scene", false},
		{"scene.tif.aux.xml", "scene", false},
		{".scene.pnec-lock", "scene", false},
		{"tmpscene.tif", "tmpscene", false},
		{".scene2.tif.pnec-1.tmp.tif", "scene", false},
		{".other.tif.pnec-1.tmp.tif", "scene", false},
		{".scene.reliability.tif.pnec-1.stage.tif", "scene", true}, // the Float32 reliability's
		{".scene.qml.pnec-tmp-0a1b2c3d", "scene", true},            // the style's
		{".scene.vrt.pnec-1.stage.tif", "scene", false},
		{".scene.tif.pnec-1.other.tif", "scene", false},
		// Names without pnec's marker are not pnec's (a scene
		// named like this was removed as a stale temporary): other tools'
		// temporaries, a user's files.
		{".scene.tif.123456.tmp.tif", "scene", false},
		{".scene.tif.9.stage.tif", "scene", false},
		{"scene.tif.tmp", "scene", false},
		{"scene.qml.tmp", "scene", false},
	} {
		if got := IsTempOf(tc.name, tc.key); got != tc.want {
			t.Errorf("IsTempOf(%q, %q) = %v, want %v", tc.name, tc.key, got, tc.want)
		}
	}
}

// TestRemoveTempsKeepsInputs: a file named like a temporary of the product
// that is an input of the run (keep), through its own name or a hard link,
// stays; the real temporaries go.
func TestRemoveTempsKeepsInputs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, ".out.tif.pnec-1.tmp.tif")
	link := filepath.Join(dir, ".out.tif.pnec-2.stage.tif")
	stale := filepath.Join(dir, ".out.tif.pnec-3.stage.tif")
	for _, p := range []string{in, stale} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(in, link); err != nil {
		t.Fatal(err)
	}
	scene := filepath.Join(t.TempDir(), "scene.tif")
	if err := os.Symlink(in, scene); err != nil {
		t.Fatal(err)
	}
	keep := func(p string) bool {
		a, err1 := os.Stat(p)
		b, err2 := os.Stat(scene)
		return err1 == nil && err2 == nil && os.SameFile(a, b)
	}
	n, err := RemoveTemps(dir, "out", keep)
	if err != nil || n != 1 {
		t.Errorf("RemoveTemps: %d, %v; want 1 removed", n, err)
	}
	for _, p := range []string{in, link} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the input %s was removed: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temporary is still there: %v", err)
	}
}

// TestLockRefusesForeignFile: a file at a lock's path that pnec did not
// make (not empty: a scene named .KEY.pnec-lock; not regular: a link) is
// refused, and stays (it was taken as the lock and removed).
func TestLockRefusesForeignFile(t *testing.T) {
	dir := t.TempDir()
	p := LockPath(dir, "out")
	if err := os.WriteFile(p, []byte("II*\x00 a scene"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(dir, "out"); !errors.Is(err, ErrNotLock) {
		t.Errorf("TryLock over a scene: %v, want ErrNotLock", err)
	}
	if b, err := os.ReadFile(p); err != nil || len(b) == 0 {
		t.Errorf("the file at the lock's path was changed: %q, %v", b, err)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, nil, 0o644)
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(dir, "out"); !errors.Is(err, ErrNotLock) {
		t.Errorf("TryLock over a link: %v, want ErrNotLock", err)
	}
	// A stale lock of a killed run (empty) is taken.
	os.Remove(p)
	os.WriteFile(p, nil, 0o644)
	l, err := TryLock(dir, "out")
	if err != nil {
		t.Fatalf("TryLock over a stale lock: %v", err)
	}
	l.Release()
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

// TestListIndexesTemps: one listing finds each product's temporaries as
// IsTempOf does name by name, keys with dots included, and Remove takes
// only the key's own (scene's, not scene.v2's), leaving the rest listed.
func TestListIndexesTemps(t *testing.T) {
	dir := t.TempDir()
	names := []string{".scene.tif.pnec-1.stage.tif", ".scene.json.pnec-tmp-ab", ".scene.v2.tif.pnec-2.tmp.tif",
		".scene.v2.reliability.tif.pnec-3.stage.tif", "scene.tif", ".other.tif.123.tmp.tif", ".a.pnec-b.tif.pnec-4.stage.tif"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"scene", "scene.v2", "a.pnec-b", "other"} {
		want := 0
		for _, n := range names {
			if IsTempOf(n, key) {
				want++
			}
		}
		if got := len(l.byKeys[key]); got != want {
			t.Errorf("key %q: %d listed, want %d (IsTempOf)", key, got, want)
		}
	}
	if n, err := l.Remove("scene", nil); n != 2 || err != nil {
		t.Errorf("Remove(scene): %d, %v; want 2", n, err)
	}
	if !l.Has("scene.v2") || l.Has("scene") {
		t.Errorf("after Remove(scene): Has(scene.v2) %v, Has(scene) %v; want true, false", l.Has("scene.v2"), l.Has("scene"))
	}
	for _, n := range []string{".scene.v2.tif.pnec-2.tmp.tif", "scene.tif", ".other.tif.123.tmp.tif"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v, want kept", n, err)
		}
	}
}
