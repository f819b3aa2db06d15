package stac

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/stacschema"
)

func sampleParams(dir string) ItemParams {
	ring := orb.Ring{{-121.9, 36.6}, {-121.8, 36.6}, {-121.8, 36.5}, {-121.9, 36.5}, {-121.9, 36.6}}
	return ItemParams{
		ID: "salinas", Scene: "/data/salinas.tif", SourceItem: "/data/salinas.json", SourceItemDatetime: "2024-06-01T10:30:00Z",
		ProductPath: filepath.Join(dir, "salinas.tif"),
		ItemPath:    filepath.Join(dir, "salinas.json"),
		Info: geo.Info{
			Cols: 86, Rows: 83, Bands: 2,
			GeoRef:          geo.GeoRef{GeoTransform: [6]float64{600000, 3.7, 0, 4050000, 0, -3.7}, EPSG: 32610},
			HasGeoTransform: true,
			FootprintWGS84:  orb.Polygon{ring},
		},
		Stats: ProductStats{Rows: 83, Cols: 86, ClassCounts: map[int]int64{0: 100, 1: 5000, 6: 2038},
			ValidPixels: 7038, RelMin: 12, RelMax: 100, RelMean: 87.5, RelStdev: 9.1},
		Classes: ClassObjects([]geo.ClassInfo{
			{Value: 6, Name: "Lettuce romaine 7wk", Color: [3]uint8{0xFF, 0x7F, 0x0E}},
			{Value: 1, Name: "Brocoli green weeds 1", Color: [3]uint8{0x1F, 0x77, 0xB4}},
		}),
		ModelChecksum: strings.Repeat("ab", 32), Backend: "go", Version: "test",
		Source: SourceRecord{Name: "/data/salinas.tif", SizeBytes: 1234, ModTime: "2024-06-01T11:00:00Z"},
		Files: map[string]FileInfo{ProductAssetKey: {Checksum: "1220" + strings.Repeat("cd", 32), Size: 4321},
			styleAssetKey: {Checksum: "1220" + strings.Repeat("ef", 32), Size: 900}},
		ModelItem: "/models/salinas.pnec.json", ModelName: "salinas",
		Now:          time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC),
		NoData:       255,
		DriftVerdict: string(drift.Warn),
		Drift: drift.JSON(drift.Report{Verdict: drift.Warn, Reasons: []string{"30.0% of the network's cells are farther from their nearest prototype than 90% of the training scene's cells of that prototype (warn at 25.5%)"},
			FarShare: 0.07, DistanceRatio: 1.2, Reliability: 0.81, ReliabilityBaseline: 0.86, ReliabilityRatio: 0.81 / 0.86, BrightnessRatio: 0.93,
			BandShiftMeanSD: 0.21, BandShiftMaxSD: 0.5, BandShiftSD: []float64{0.1, 0.5}, ValidPixels: 7038,
			FeatureFarShare: 0.3, FeatureDistanceRatio: 1.1, PrototypeMarginRatio: 0.95, UncertaintyRatio: 1.01, MarginRatio: 0.9, ValidCells: 440,
			RecalibrationChangeShare: 0.031, RecalibrationBandShift: -0.25, ProbePixels: 7038}),
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
			if p[propDriftVerdict] != "warn" {
				t.Errorf("got %s %v, want warn", propDriftVerdict, p[propDriftVerdict])
			}
			d, _ := p[propDrift].(map[string]any)
			if d == nil || d["far_share"] != 0.07 || d["reliability_ratio"] != 0.9419 ||
				d["brightness_ratio"] != 0.93 || d["feature_far_share"] != 0.3 || d["margin_ratio"] != 0.9 || len(d["reasons"].([]any)) != 1 ||
				d["recalibration_change_share"] != 0.031 || d["recalibration_band_shift"] != -0.25 {
				t.Errorf("got %s %v, want the figures and the reason", propDrift, p[propDrift])
			}
			// Every limit of the verdict, a missing warn or fail limit absent.
			for _, lim := range drift.DefaultThresholds.Limits {
				for key, v := range map[string]float64{"warn_" + lim.Figure: lim.Warn, "fail_" + lim.Figure: lim.Fail} {
					if got, ok := d[key]; (v != 0 && got != v) || (v == 0 && ok) {
						t.Errorf("got %s %s = %v, want %v (absent when 0)", propDrift, key, got, v)
					}
				}
			}
			if p["proj:epsg"] != 32610.0 || p["datetime"] != "2024-06-01T10:30:00Z" || p[propDatetimeSource] != datetimeFromItem {
				t.Errorf("got proj:epsg %v datetime %v (%v), want 32610 and the source item's", p["proj:epsg"], p["datetime"], p[propDatetimeSource])
			}
			tr := p["proj:transform"].([]any)
			if tr[0] != 3.7 || tr[2] != 600000.0 || tr[4] != -3.7 || tr[5] != 4050000.0 {
				t.Errorf("got proj:transform %v, want [3.7 0 600000 0 -3.7 4050000]", tr)
			}
			bands := m["assets"].(map[string]any)[ProductAssetKey].(map[string]any)["raster:bands"].([]any)
			cls := bands[0].(map[string]any)["classification:classes"].([]any)
			if len(cls) != 2 || cls[1].(map[string]any)["value"] != 6.0 || cls[1].(map[string]any)["color_hint"] != "FF7F0E" {
				t.Errorf("got classification:classes %v, want the two classes (no-data is raster:bands' nodata)", cls)
			}
			for _, c := range cls {
				if _, ok := c.(map[string]any)["nodata"]; ok {
					t.Errorf("class %v has \"nodata\", a field classification v1.1.0 does not define", c)
				}
			}
			if st := bands[1].(map[string]any)["statistics"].(map[string]any); st["stddev"] != 9.1 || st["mean"] != 87.5 {
				t.Errorf("got reliability statistics %v, want mean 87.5 stddev 9.1", st)
			}
			if bands[1].(map[string]any)["nodata"] != 255.0 || bands[1].(map[string]any)["data_type"] != "uint8" {
				t.Errorf("got reliability band %v, want uint8 with nodata 255", bands[1])
			}
			// The source Item and the model's lie outside the Item's root: absolute.
			derived := map[string]map[string]any{}
			for _, l := range m["links"].([]any) {
				if l := l.(map[string]any); l["rel"] == "derived_from" {
					derived[l["href"].(string)] = l
				}
				if l := l.(map[string]any); l["rel"] == "self" {
					t.Errorf("got self link %v without a base URL, want none (STAC wants it absolute)", l)
				}
			}
			if d := derived["/data/salinas.json"]; len(derived) != 2 || d == nil || d["type"] != "application/geo+json" ||
				derived["/models/salinas.pnec.json"]["type"] != "application/geo+json" {
				t.Errorf("got derived_from links %v, want the source item and the model's item", derived)
			}
			if p := m["properties"].(map[string]any); p["processing:level"] != "L4" ||
				p["processing:expression"].(map[string]any)["format"] != "stac-mlm" ||
				p["processing:expression"].(map[string]any)["expression"] != "/models/salinas.pnec.json" {
				t.Errorf("got processing:level %v expression %v, want L4 and stac-mlm of the model item", p["processing:level"], p["processing:expression"])
			}
			prod := m["assets"].(map[string]any)[ProductAssetKey].(map[string]any)
			if prod["file:size"] != 4321.0 || !strings.HasPrefix(prod["file:checksum"].(string), "1220") {
				t.Errorf("got file:size %v file:checksum %v on the product, want 4321 and a sha2-256 multihash", prod["file:size"], prod["file:checksum"])
			}
			if _, ok := m["properties"].(map[string]any)["pnec:product_size_bytes"]; ok {
				t.Error("pnec:product_size_bytes is still written: the size is file:size")
			}
			if bands[0].(map[string]any)["nodata"] != 255.0 || bands[1].(map[string]any)["unit"] != geo.ReliabilityUnit {
				t.Errorf("got class band %v and reliability %v, want nodata 255 (as inside the TIFF) and unit %s", bands[0], bands[1], geo.ReliabilityUnit)
			}
			if d := cls[0].(map[string]any)["description"]; d == cls[0].(map[string]any)["name"] {
				t.Errorf("class description %q repeats the name", d)
			}
			assets := m["assets"].(map[string]any)
			if st := assets[styleAssetKey].(map[string]any); st["href"] != "salinas.qml" || st["type"] != geo.StyleMediaType {
				t.Errorf("got style asset %v, want salinas.qml (%s)", st, geo.StyleMediaType)
			}
			if _, ok := assets[reliabilityAssetKey]; ok {
				t.Error("a reliability asset without --reliability float32")
			}
		}},
		{"WKT2 without EPSG, float reliability, the user's interval", func(p *ItemParams) {
			p.Info.EPSG = 0
			p.Info.WKT = `PROJCRS["local transverse mercator",BASEGEOGCRS["WGS 84"]]`
			p.ReliabilityF32 = true
			p.SourceItemDatetime = ""
			p.Datetime = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
			p.DatetimeEnd = time.Date(2024, 6, 30, 23, 59, 59, 0, time.UTC)
		}, func(t *testing.T, m map[string]any) {
			p := m["properties"].(map[string]any)
			if p["proj:epsg"] != nil || !strings.HasPrefix(p["proj:wkt2"].(string), "PROJCRS") {
				t.Errorf("got proj:epsg %v proj:wkt2 %v, want null and the WKT2", p["proj:epsg"], p["proj:wkt2"])
			}
			// The user's interval: datetime null with its bounds, never the
			// processing time nor a made-up range.
			if v, ok := p["datetime"]; !ok || v != nil || p[propDatetimeSource] != datetimeFromUser {
				t.Errorf("got datetime %v (present %v) from %v, want null, from the user", v, ok, p[propDatetimeSource])
			}
			if p["start_datetime"] != "2024-06-01T00:00:00Z" || p["end_datetime"] != "2024-06-30T23:59:59Z" {
				t.Errorf("got start %v end %v, want the user's interval", p["start_datetime"], p["end_datetime"])
			}
			if p["processing:datetime"] != "2026-11-22T01:02:03Z" || p["created"] != "2026-11-22T01:02:03Z" {
				t.Errorf("got processing:datetime %v created %v, want the processing time", p["processing:datetime"], p["created"])
			}
			rel := m["assets"].(map[string]any)[reliabilityAssetKey].(map[string]any)
			rb := rel["raster:bands"].([]any)[0].(map[string]any)
			if rel["href"] != "salinas.reliability.tif" || rb["data_type"] != "float32" || rb["nodata"] != "nan" {
				t.Errorf("got reliability asset %v, want the Float32 COG beside the product", rel)
			}
			cb := m["assets"].(map[string]any)[ProductAssetKey].(map[string]any)["raster:bands"].([]any)[0].(map[string]any)
			if cb["data_type"] != "uint8" {
				t.Errorf("class band with float reliability: got %v, want uint8: a float reliability band must not change the class band's type", cb["data_type"])
			}
		}},
		{"scene metadata datetime", func(p *ItemParams) {
			p.SourceItemDatetime = ""
			p.Info.Metadata = map[string]string{"TIFFTAG_DATETIME": "2023:07:04 12:00:00"}
		}, wantDatetime("2023-07-04T12:00:00Z", datetimeFromScene, "2023-07-04T12:00:00Z from the scene")},
		{"GDAL ACQUISITIONDATETIME", func(p *ItemParams) {
			p.SourceItemDatetime = ""
			p.Info.Metadata = map[string]string{"ACQUISITIONDATETIME": "2022-08-09T10:11:12Z"}
		}, wantDatetime("2022-08-09T10:11:12Z", datetimeFromScene, "the scene's ACQUISITIONDATETIME")},
		{"ENVI acquisition time", func(p *ItemParams) {
			p.SourceItemDatetime = ""
			p.Info.Metadata = map[string]string{geo.MetaENVIAcquisitionTime: "2021-03-04T05:06:07Z"}
		}, func(t *testing.T, m map[string]any) {
			if p := m["properties"].(map[string]any); p["datetime"] != "2021-03-04T05:06:07Z" {
				t.Errorf("got datetime %v, want the ENVI header's acquisition time", p["datetime"])
			}
		}},
		{"user datetime wins", func(p *ItemParams) {
			p.Datetime = time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
			p.Info.Metadata = map[string]string{"TIFFTAG_DATETIME": "2023:07:04 12:00:00"}
		}, wantDatetime("2020-05-06T07:08:09Z", datetimeFromUser, "--datetime's")},
		{"base URL, a plain scene file", func(p *ItemParams) {
			p.BaseURL = "https://data.example.org/maps/"
			p.SourceItem, p.SourceItemDatetime = "", ""
			p.Datetime = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
		}, func(t *testing.T, m map[string]any) {
			links := map[string][]string{}
			for _, l := range m["links"].([]any) {
				l := l.(map[string]any)
				links[l["rel"].(string)] = append(links[l["rel"].(string)], l["href"].(string))
			}
			if got := links["self"]; len(got) != 1 || got[0] != "https://data.example.org/maps/salinas.json" {
				t.Errorf("got self %v, want the absolute URL under the base URL", got)
			}
			// A scene file is no STAC object: only the model's Item is derived_from.
			if got := links["derived_from"]; len(got) != 1 || got[0] != "/models/salinas.pnec.json" {
				t.Errorf("got derived_from %v, want only the model's item", got)
			}
			if lin := m["properties"].(map[string]any)["processing:lineage"].(string); !strings.Contains(lin, "/data/salinas.tif") {
				t.Errorf("lineage %q does not name the source scene", lin)
			}
		}},
		{"ungeoreferenced product", func(p *ItemParams) {
			p.Info.EPSG, p.Info.WKT, p.Info.FootprintWGS84 = 0, "", nil
			p.Info.GeoTransform, p.Info.HasGeoTransform = [6]float64{0, 1, 0, 0, 0, 1}, false
		}, func(t *testing.T, m map[string]any) {
			if m["geometry"] != nil || m["bbox"] != nil {
				t.Errorf("got geometry %v bbox %v, want null and none", m["geometry"], m["bbox"])
			}
			p := m["properties"].(map[string]any)
			if p["proj:transform"] != nil || p["proj:bbox"] != nil {
				t.Errorf("got proj:transform %v proj:bbox %v, want none: a product without a projection has no proj transform", p["proj:transform"], p["proj:bbox"])
			}
		}},
		{"in a collection", func(p *ItemParams) {
			p.CollectionID = "nightly"
			p.CollectionPath = filepath.Join(filepath.Dir(p.ItemPath), "..", "collection.json")
			p.SourceItem = filepath.Join(filepath.Dir(p.ItemPath), "..", "sources", "salinas.json")
			p.ModelItem = ""
		}, func(t *testing.T, m map[string]any) {
			if m["collection"] != "nightly" {
				t.Errorf("got collection %v, want nightly", m["collection"])
			}
			want := map[string]string{"root": "../collection.json", "parent": "../collection.json",
				"collection": "../collection.json", "derived_from": "../sources/salinas.json"}
			got := map[string]string{}
			for _, l := range m["links"].([]any) {
				l := l.(map[string]any)
				got[l["rel"].(string)] = l["href"].(string)
			}
			for rel, href := range want {
				if got[rel] != href {
					t.Errorf("link %s: got %q, want %q (relative: under the collection's root)", rel, got[rel], href)
				}
			}
			p := m["properties"].(map[string]any)
			if lin := p["processing:lineage"].(string); !strings.Contains(lin, " ../sources/salinas.json ") {
				t.Errorf("lineage %q: want the source Item relative to the Item", lin)
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
		{"no id", stacschema.ItemSchema, func(m map[string]any) { delete(m, "id") }},
		{"bbox of 3", stacschema.ItemSchema, func(m map[string]any) { m["bbox"] = []any{1, 2, 3} }},
		{"datetime null without range", stacschema.ItemSchema, func(m map[string]any) { m["properties"].(map[string]any)["datetime"] = nil }},
		{"asset without href", stacschema.ItemSchema, func(m map[string]any) {
			delete(m["assets"].(map[string]any)[ProductAssetKey].(map[string]any), "href")
		}},
		{"epsg as string", ProjectionSchema, func(m map[string]any) { m["properties"].(map[string]any)["proj:epsg"] = "32610" }},
		{"unknown proj field", ProjectionSchema, func(m map[string]any) { m["properties"].(map[string]any)["proj:code"] = "EPSG:1" }},
		{"shape of 3", ProjectionSchema, func(m map[string]any) { m["properties"].(map[string]any)["proj:shape"] = []any{1, 2, 3} }},
		{"bad colour hint", ClassificationSchema, func(m map[string]any) {
			b := m["assets"].(map[string]any)[ProductAssetKey].(map[string]any)["raster:bands"].([]any)[0].(map[string]any)
			b["classification:classes"].([]any)[0].(map[string]any)["color_hint"] = "#12345"
		}},
		{"class without description", ClassificationSchema, func(m map[string]any) {
			b := m["assets"].(map[string]any)[ProductAssetKey].(map[string]any)["raster:bands"].([]any)[0].(map[string]any)
			delete(b["classification:classes"].([]any)[0].(map[string]any), "description")
		}},
		{"raster data type", RasterSchema, func(m map[string]any) {
			b := m["assets"].(map[string]any)[ProductAssetKey].(map[string]any)["raster:bands"].([]any)[0].(map[string]any)
			b["data_type"] = "byte"
		}},
		{"processing datetime", ProcessingSchema, func(m map[string]any) {
			m["properties"].(map[string]any)["processing:datetime"] = "2026-11-22T01:02:03+01:00"
		}},
		{"render without assets", RenderSchema, func(m map[string]any) {
			r := m["properties"].(map[string]any)["renders"].(map[string]any)[RenderClasses].(map[string]any)
			delete(r, "assets")
		}},
		{"render colormap not an object", RenderSchema, func(m map[string]any) {
			r := m["properties"].(map[string]any)["renders"].(map[string]any)[RenderClasses].(map[string]any)
			r["colormap"] = "tab10"
		}},
		{"extension not declared", ClassificationSchema, func(m map[string]any) { m["stac_extensions"] = []any{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			json.Unmarshal(good, &m)
			tc.mutate(m)
			b, _ := json.Marshal(m)
			err := stacschema.Store(t).Validate(b, tc.schema)
			if err == nil {
				t.Fatalf("got no error from %s, want the item rejected", tc.schema)
			}
			if !errors.Is(err, stacschema.ErrInvalid) {
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
	meta := CollectionMeta{ID: "nightly", License: "CC-BY-4.0", Classes: sampleParams(dir).Classes, NoData: 255, ReliabilityF32: true, Thumbnail: true}
	for _, it := range items {
		if err := AddToCollection(coll, meta, it.path, it.bbox, [2]string{it.dt, it.dt}, nil); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(coll)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"https://schemas.stacspec.org/v1.0.0/collection-spec/json-schema/collection.json", ClassificationSchema, RasterSchema, RenderSchema} {
		if err := stacschema.Store(t).Validate(b, u); err != nil {
			t.Errorf("collection does not validate against %s: %v", u, err)
		}
	}
	var m struct {
		Title, Description, License string
		Links                       []map[string]string
		Extent                      struct {
			Spatial  struct{ Bbox [][]float64 }
			Temporal struct{ Interval [][]string }
		}
		Summaries struct {
			Classes []ClassObject    `json:"classification:classes"`
			Bands   []map[string]any `json:"raster:bands"`
		}
		ItemAssets map[string]map[string]any `json:"item_assets"`
		Extensions []string                  `json:"stac_extensions"`
	}
	json.Unmarshal(b, &m)
	links := map[string][]string{}
	for _, l := range m.Links {
		links[l["rel"]] = append(links[l["rel"]], l["href"])
	}
	if strings.Join(links["item"], " ") != "a.json b.json" || len(links["self"]) != 0 || strings.Join(links["root"], " ") != "collection.json" {
		t.Errorf("got links %v, want root (relative), no self without a base URL, and items a.json and b.json once each", m.Links)
	}
	// A Collection a client can use without opening an Item.
	if m.Title == "" || m.Description == "" || m.License != "CC-BY-4.0" {
		t.Errorf("got title %q description %q license %q, want both and CC-BY-4.0", m.Title, m.Description, m.License)
	}
	if len(m.Summaries.Classes) != 2 || len(m.Summaries.Bands) != 2 || m.Summaries.Bands[1]["unit"] != geo.ReliabilityUnit || m.Summaries.Bands[0]["nodata"] != 255.0 {
		t.Errorf("got summaries %+v, want the two classes and two bands with nodata 255", m.Summaries)
	}
	for _, k := range []string{ProductAssetKey, styleAssetKey, reliabilityAssetKey, ThumbnailAssetKey} {
		if m.ItemAssets[k]["type"] == nil {
			t.Errorf("item_assets lacks %s: %v", k, m.ItemAssets)
		}
	}
	if !slices.Contains(m.Extensions, ItemAssetsSchema) {
		t.Errorf("stac_extensions %v lacks %s", m.Extensions, ItemAssetsSchema)
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

// TestBuildItemNeedsDatetime: a scene whose acquisition time nothing gives
// gets no Item (ErrNoDatetime) rather than a made-up interval.
func TestBuildItemNeedsDatetime(t *testing.T) {
	p := sampleParams(t.TempDir())
	p.SourceItemDatetime = ""
	if _, err := BuildItem(p); !errors.Is(err, ErrNoDatetime) || !strings.Contains(err.Error(), "/data/salinas.tif") {
		t.Errorf("got %v, want ErrNoDatetime naming the scene", err)
	}
}

// BenchmarkBuildItem: building and encoding one product's STAC Item.
func BenchmarkBuildItem(b *testing.B) {
	p := sampleParams(b.TempDir())
	b.ReportAllocs()
	for b.Loop() {
		item, err := BuildItem(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(item); err != nil {
			b.Fatal(err)
		}
	}
}

// wantDatetime is a check of an Item's datetime and of where it came from
// (propDatetimeSource); want says what was expected in the error.
func wantDatetime(datetime, source, want string) func(*testing.T, map[string]any) {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		p := m["properties"].(map[string]any)
		if p["datetime"] != datetime || p[propDatetimeSource] != source {
			t.Errorf("got datetime %v from %v, want %s", p["datetime"], p[propDatetimeSource], want)
		}
	}
}
