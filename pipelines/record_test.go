package pipelines

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
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
	} {
		if got := isTempOf(tc.name, tc.key); got != tc.want {
			t.Errorf("isTempOf(%q, %q) = %v, want %v", tc.name, tc.key, got, tc.want)
		}
	}
}

func TestUpToDate(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "in.tif"), "input")
	product := writeFile(t, filepath.Join(dir, "out.tif"), "product-bytes")
	item := filepath.Join(dir, "out.json")
	rec := sourceRecord(Input{Name: src})
	if rec.SizeBytes != 5 || rec.ModTime == "" {
		t.Fatalf("got record %+v, want size 5 and an mtime", rec)
	}
	style := writeFile(t, filepath.Join(dir, "out.qml"), "<qgis/>")
	floatRel := false
	writeItemFormat := func(r SourceRecord, sum string, size int64, format int) {
		b, _ := json.Marshal(map[string]any{"properties": map[string]any{propSource: r, propModelChecksum: sum, propProductFormat: format},
			"assets": map[string]any{productAssetKey: map[string]any{"file:size": size}}})
		writeFile(t, item, string(b))
	}
	writeItem := func(r SourceRecord, sum string, size int64) { writeItemFormat(r, sum, size, productFormat) }
	changed := rec
	changed.ModTime = time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	for _, tc := range []struct {
		name    string
		setup   func()
		want    bool
		wantWhy string
	}{
		{"fresh", func() { writeItem(rec, "m1", 13) }, true, ""},
		{"no item", func() { os.Remove(item) }, false, "no STAC item"},
		{"bad item", func() { writeFile(t, item, "{") }, false, "unreadable STAC item"},
		{"item without record", func() { writeFile(t, item, `{"properties":{}}`) }, false, "STAC item has no pnec record"},
		{"input changed", func() { writeItem(changed, "m1", 13) }, false, "input changed"},
		{"model changed", func() { writeItem(rec, "m2", 13) }, false, "model changed"},
		{"product truncated", func() { writeItem(rec, "m1", 14) }, false, "product size differs from the record"},
		// Products of pnec before issue 12 (class no-data only in the sidecar) are redone.
		{"older product format", func() { writeItemFormat(rec, "m1", 13, 0) }, false, "product format changed"},
		{"no style", func() { writeItem(rec, "m1", 13); os.Rename(style, style+".x") }, false, "no QGIS style"},
		{"float reliability asked, none there", func() { os.Rename(style+".x", style); floatRel = true }, false, "no Float32 reliability file"},
		{"no product", func() { floatRel = false; os.Rename(product, product+".x") }, false, "no product"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			got, why := upToDate(product, item, sourceRecord(Input{Name: src}), "m1", floatRel)
			if got != tc.want || why != tc.wantWhy {
				t.Errorf("got %v %q, want %v %q", got, why, tc.want, tc.wantWhy)
			}
		})
	}
}

func TestSceneLock(t *testing.T) {
	dir := t.TempDir()
	l, err := tryLock(dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tryLock(dir, "s"); !errors.Is(err, errBusy) {
		t.Errorf("second lock got %v, want errBusy", err)
	}
	l2, err := tryLock(dir, "other")
	if err != nil {
		t.Fatalf("lock of another scene: %v", err)
	}
	l2.release()
	l.release()
	if _, err := os.Stat(lockPath(dir, "s")); !os.IsNotExist(err) {
		t.Errorf("lock file left after release: %v", err)
	}
	l3, err := tryLock(dir, "s")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l3.release()
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.json")
	for _, content := range []string{"one", "two"} {
		if err := writeFileAtomic(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("got %q, want %q", b, content)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("got %d files, want only x.json", len(ents))
	}
	if err := writeFileAtomic(filepath.Join(dir, "missing", "x.json"), []byte("a")); err == nil {
		t.Error("write into a missing directory: got no error")
	}
}
