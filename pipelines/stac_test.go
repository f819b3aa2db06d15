package pipelines

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/pipelines/internal/jsonschema"
)

func sampleParams(dir string) ItemParams {
	ring := orb.Ring{{-121.9, 36.6}, {-121.8, 36.6}, {-121.8, 36.5}, {-121.9, 36.5}, {-121.9, 36.6}}
	return ItemParams{
		Input:       Input{Name: "/data/salinas.tif", Key: "salinas", ItemDatetime: "2024-06-01T10:30:00Z", Item: "/data/salinas.json"},
		ProductPath: filepath.Join(dir, "salinas.tif"),
		ItemPath:    filepath.Join(dir, "salinas.json"),
		Info: geo.Info{
			Cols: 86, Rows: 83, Bands: 2,
			GeoRef:         geo.GeoRef{GeoTransform: [6]float64{600000, 3.7, 0, 4050000, 0, -3.7}, EPSG: 32610},
			FootprintWGS84: orb.Polygon{ring},
		},
		Stats: ProductStats{Rows: 83, Cols: 86, ClassCounts: map[int]int64{0: 100, 1: 5000, 6: 2038},
			ValidPixels: 7038, RelMin: 12, RelMax: 100, RelMean: 87.5, RelStdev: 9.1},
		Classes: []ClassObject{
			{Value: 1, Description: "Brocoli green weeds 1", Name: "Brocoli green weeds 1", ColorHint: "1F77B4"},
			{Value: 6, Description: "Lettuce romaine 7wk", Name: "Lettuce romaine 7wk", ColorHint: "FF7F0E"},
		},
		ModelChecksum: strings.Repeat("ab", 32), Backend: "go", Version: "test",
		Source:       SourceRecord{Name: "/data/salinas.tif", SizeBytes: 1234, ModTime: "2024-06-01T11:00:00Z"},
		ProductBytes: 4321,
		Now:          time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC),
	}
}

func TestBuildItemValidates(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		change func(*ItemParams)
		check  func(t *testing.T, m map[string]any)
	}{
		{"EPSG", func(*ItemParams) {}, func(t *testing.T, m map[string]any) {
			p := m["properties"].(map[string]any)
			if p["proj:epsg"] != 32610.0 || p["datetime"] != "2024-06-01T10:30:00Z" || p[propDatetimeSource] != datetimeFromItem {
				t.Errorf("got proj:epsg %v datetime %v (%v), want 32610 and the source item's", p["proj:epsg"], p["datetime"], p[propDatetimeSource])
			}
			tr := p["proj:transform"].([]any)
			if tr[0] != 3.7 || tr[2] != 600000.0 || tr[4] != -3.7 || tr[5] != 4050000.0 {
				t.Errorf("got proj:transform %v, want [3.7 0 600000 0 -3.7 4050000]", tr)
			}
			bands := m["assets"].(map[string]any)[productAssetKey].(map[string]any)["raster:bands"].([]any)
			cls := bands[0].(map[string]any)["classification:classes"].([]any)
			if len(cls) != 2 || cls[1].(map[string]any)["value"] != 6.0 || cls[1].(map[string]any)["color_hint"] != "FF7F0E" {
				t.Errorf("got classification:classes %v, want the two classes", cls)
			}
			if st := bands[1].(map[string]any)["statistics"].(map[string]any); st["stddev"] != 9.1 || st["mean"] != 87.5 {
				t.Errorf("got reliability statistics %v, want mean 87.5 stddev 9.1", st)
			}
			if bands[1].(map[string]any)["nodata"] != 255.0 || bands[1].(map[string]any)["data_type"] != "uint8" {
				t.Errorf("got reliability band %v, want uint8 with nodata 255", bands[1])
			}
			links := m["links"].([]any)
			if l := links[0].(map[string]any); l["rel"] != "derived_from" || l["href"] != "/data/salinas.json" {
				t.Errorf("got link %v, want derived_from the source item", l)
			}
		}},
		{"WKT2 without EPSG, float reliability, no source datetime", func(p *ItemParams) {
			p.Info.EPSG = 0
			p.Info.WKT = `PROJCRS["local transverse mercator",BASEGEOGCRS["WGS 84"]]`
			p.ReliabilityF32 = true
			p.Input.ItemDatetime = ""
		}, func(t *testing.T, m map[string]any) {
			p := m["properties"].(map[string]any)
			if p["proj:epsg"] != nil || !strings.HasPrefix(p["proj:wkt2"].(string), "PROJCRS") {
				t.Errorf("got proj:epsg %v proj:wkt2 %v, want null and the WKT2", p["proj:epsg"], p["proj:wkt2"])
			}
			if p["datetime"] != "2026-11-22T01:02:03Z" || p[propDatetimeSource] != datetimeFromProcessed {
				t.Errorf("got datetime %v from %v, want the processing time, said so", p["datetime"], p[propDatetimeSource])
			}
		}},
		{"scene metadata datetime", func(p *ItemParams) {
			p.Input.ItemDatetime = ""
			p.Info.Metadata = map[string]string{"TIFFTAG_DATETIME": "2023:07:04 12:00:00"}
		}, func(t *testing.T, m map[string]any) {
			p := m["properties"].(map[string]any)
			if p["datetime"] != "2023-07-04T12:00:00Z" || p[propDatetimeSource] != datetimeFromScene {
				t.Errorf("got datetime %v from %v, want 2023-07-04T12:00:00Z from the scene", p["datetime"], p[propDatetimeSource])
			}
		}},
		{"local grid without CRS", func(p *ItemParams) {
			p.Info.EPSG, p.Info.WKT, p.Info.FootprintWGS84 = 0, "", nil
			p.Info.GeoTransform = [6]float64{0, 1, 0, 0, 0, 1}
		}, func(t *testing.T, m map[string]any) {
			if m["geometry"] != nil || m["bbox"] != nil {
				t.Errorf("got geometry %v bbox %v, want null and none", m["geometry"], m["bbox"])
			}
		}},
		{"in a collection", func(p *ItemParams) { p.CollectionID = "nightly" }, func(t *testing.T, m map[string]any) {
			if m["collection"] != "nightly" {
				t.Errorf("got collection %v, want nightly", m["collection"])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sampleParams(dir)
			tc.change(&p)
			item, err := BuildItem(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.MarshalIndent(item, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			validateItem(t, b)
			var m map[string]any
			json.Unmarshal(b, &m)
			tc.check(t, m)
			exts := strings.Join(toStrings(m["stac_extensions"]), " ")
			for _, u := range []string{ClassificationSchema, ProjectionSchema, ProcessingSchema, RasterSchema} {
				if !strings.Contains(exts, u) {
					t.Errorf("stac_extensions %q lacks %s", exts, u)
				}
			}
		})
	}
}

func toStrings(x any) []string {
	var out []string
	for _, v := range x.([]any) {
		out = append(out, v.(string))
	}
	return out
}

// TestSchemasCatchBadItems: the validator and shipped schemas reject items
// with the faults a writer could make, so that TestBuildItemValidates can fail.
func TestSchemasCatchBadItems(t *testing.T) {
	item, err := BuildItem(sampleParams(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(item)
	for _, tc := range []struct {
		name, schema string
		mutate       func(m map[string]any)
	}{
		{"no id", itemSchemas[0], func(m map[string]any) { delete(m, "id") }},
		{"bbox of 3", itemSchemas[0], func(m map[string]any) { m["bbox"] = []any{1, 2, 3} }},
		{"datetime null without range", itemSchemas[0], func(m map[string]any) { m["properties"].(map[string]any)["datetime"] = nil }},
		{"asset without href", itemSchemas[0], func(m map[string]any) {
			delete(m["assets"].(map[string]any)[productAssetKey].(map[string]any), "href")
		}},
		{"epsg as string", ProjectionSchema, func(m map[string]any) { m["properties"].(map[string]any)["proj:epsg"] = "32610" }},
		{"unknown proj field", ProjectionSchema, func(m map[string]any) { m["properties"].(map[string]any)["proj:code"] = "EPSG:1" }},
		{"shape of 3", ProjectionSchema, func(m map[string]any) { m["properties"].(map[string]any)["proj:shape"] = []any{1, 2, 3} }},
		{"bad colour hint", ClassificationSchema, func(m map[string]any) {
			b := m["assets"].(map[string]any)[productAssetKey].(map[string]any)["raster:bands"].([]any)[0].(map[string]any)
			b["classification:classes"].([]any)[0].(map[string]any)["color_hint"] = "#12345"
		}},
		{"class without description", ClassificationSchema, func(m map[string]any) {
			b := m["assets"].(map[string]any)[productAssetKey].(map[string]any)["raster:bands"].([]any)[0].(map[string]any)
			delete(b["classification:classes"].([]any)[0].(map[string]any), "description")
		}},
		{"raster data type", RasterSchema, func(m map[string]any) {
			b := m["assets"].(map[string]any)[productAssetKey].(map[string]any)["raster:bands"].([]any)[0].(map[string]any)
			b["data_type"] = "byte"
		}},
		{"processing datetime", ProcessingSchema, func(m map[string]any) {
			m["properties"].(map[string]any)["processing:datetime"] = "2026-11-22T01:02:03+01:00"
		}},
		{"extension not declared", ClassificationSchema, func(m map[string]any) { m["stac_extensions"] = []any{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			json.Unmarshal(good, &m)
			tc.mutate(m)
			b, _ := json.Marshal(m)
			err := schemaStore(t).Validate(b, tc.schema)
			if err == nil {
				t.Fatalf("got no error from %s, want the item rejected", tc.schema)
			}
			if !strings.Contains(err.Error(), jsonschema.ErrInvalid.Error()) {
				t.Errorf("got %v, want a validation failure (not a schema loading error)", err)
			}
		})
	}
}

func TestCollection(t *testing.T) {
	dir := t.TempDir()
	coll := filepath.Join(dir, "collection.json")
	items := []struct {
		path string
		bbox []float64
		dt   string
	}{
		{filepath.Join(dir, "a.json"), []float64{1, 2, 3, 4}, "2024-06-02T00:00:00Z"},
		{filepath.Join(dir, "b.json"), []float64{0, 3, 2, 5}, "2024-06-01T00:00:00Z"},
		{filepath.Join(dir, "a.json"), []float64{1, 2, 3, 4}, "2024-06-02T00:00:00Z"}, // again: no duplicate link
	}
	for _, it := range items {
		if err := addToCollection(coll, "nightly", it.path, it.bbox, it.dt); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(coll)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemaStore(t).Validate(b, "https://schemas.stacspec.org/v1.0.0/collection-spec/json-schema/collection.json"); err != nil {
		t.Errorf("collection does not validate: %v", err)
	}
	var m struct {
		Links  []map[string]string
		Extent struct {
			Spatial  struct{ Bbox [][]float64 }
			Temporal struct{ Interval [][]string }
		}
	}
	json.Unmarshal(b, &m)
	if len(m.Links) != 2 || m.Links[0]["href"] != "a.json" || m.Links[1]["href"] != "b.json" {
		t.Errorf("got links %v, want items a.json and b.json once each", m.Links)
	}
	if got := m.Extent.Spatial.Bbox; len(got) != 1 || got[0][0] != 0 || got[0][1] != 2 || got[0][2] != 3 || got[0][3] != 5 {
		t.Errorf("got bbox %v, want [[0 2 3 5]]", got)
	}
	if got := m.Extent.Temporal.Interval; len(got) != 1 || got[0][0] != "2024-06-01T00:00:00Z" || got[0][1] != "2024-06-02T00:00:00Z" {
		t.Errorf("got interval %v, want [[2024-06-01 2024-06-02]]", got)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), "tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
