package pipelines

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pnec/pnec/stac"
)

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
	writeItemFormat := func(r stac.SourceRecord, sum string, size int64, format int) {
		b, _ := json.Marshal(map[string]any{"properties": map[string]any{stac.PropSource: r, stac.PropModelChecksum: sum, stac.PropProductFormat: format},
			"assets": map[string]any{stac.ProductAssetKey: map[string]any{"file:size": size}}})
		writeFile(t, item, string(b))
	}
	writeItem := func(r stac.SourceRecord, sum string, size int64) { writeItemFormat(r, sum, size, stac.ProductFormat) }
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
		// Products of an older format (class no-data only in the sidecar) are redone.
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
