package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/stac"
)

// BenchmarkExpandCatalog: expanding a local catalog of 1000 Items.
func BenchmarkExpandCatalog(b *testing.B) {
	d := b.TempDir()
	links := ""
	for i := 0; i < 1000; i++ {
		writeFile(b, filepath.Join(d, "items", fmt.Sprintf("i%d.json", i)), itemJSON(fmt.Sprintf("i%d", i), fmt.Sprintf(`"hsi":{"href":"x%d.tif","roles":["data"]}`, i)))
		if i > 0 {
			links += ","
		}
		links += fmt.Sprintf(`{"rel":"item","href":"items/i%d.json"}`, i)
	}
	cat := writeFile(b, filepath.Join(d, "catalog.json"), `{"type":"Catalog","id":"c","links":[`+links+`]}`)
	b.ReportAllocs()
	for b.Loop() {
		in, errs, err := Expand(context.Background(), []string{cat}, ExpandOptions{})
		if err != nil || len(errs) > 0 || len(in) != 1000 {
			b.Fatalf("got %d inputs, %v, %v", len(in), errs, err)
		}
	}
}

// BenchmarkUpToDate: the per-scene idempotence check of a rerun.
func BenchmarkUpToDate(b *testing.B) {
	d := b.TempDir()
	src := writeFile(b, filepath.Join(d, "in.tif"), "input")
	product := writeFile(b, filepath.Join(d, "p.tif"), "product")
	rec := sourceRecord(Input{Name: src})
	item, _ := json.Marshal(map[string]any{"properties": map[string]any{stac.PropSource: rec, stac.PropModelChecksum: "m", stac.PropProductFormat: stac.ProductFormat},
		"assets": map[string]any{stac.ProductAssetKey: map[string]any{"file:size": 7}}})
	writeFile(b, filepath.Join(d, "p.qml"), "<qgis/>")
	itemPath := writeFile(b, filepath.Join(d, "p.json"), string(item))
	b.ReportAllocs()
	for b.Loop() {
		if ok, why := upToDate(product, itemPath, sourceRecord(Input{Name: src}), "m", false); !ok {
			b.Fatal(why)
		}
	}
}
