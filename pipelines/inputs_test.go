package pipelines

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
)

func itemJSON(id string, assets string) string {
	return `{"type":"Feature","stac_version":"1.0.0","id":"` + id + `","geometry":null,
	"properties":{"datetime":"2024-06-01T10:30:00Z","updated":"2024-06-02T00:00:00Z"},"links":[],"assets":{` + assets + `}}`
}

func names(in []Input) []string {
	var out []string
	for _, x := range in {
		out = append(out, x.Name)
	}
	return out
}

func errText(errs []*InputError) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}

func TestExpandLocal(t *testing.T) {
	d := t.TempDir()
	a := writeFile(t, filepath.Join(d, "scenes", "a.tif"), "x")
	b := writeFile(t, filepath.Join(d, "scenes", "b.TIF"), "x")
	writeFile(t, filepath.Join(d, "scenes", "notes.txt"), "x")
	writeFile(t, filepath.Join(d, "scenes", ".hidden.tif"), "x")
	dup := writeFile(t, filepath.Join(d, "other", "a.tif"), "x")
	item := writeFile(t, filepath.Join(d, "stac", "item.json"), itemJSON("acq-1", `"hsi":{"href":"data/acq1.tif","roles":["data"]},"thumb":{"href":"t.png","roles":["thumbnail"]}`))
	os.MkdirAll(filepath.Join(d, "empty"), 0o755)

	for _, tc := range []struct {
		name     string
		args     []string
		opts     ExpandOptions
		want     []string
		wantErrs []string // substrings, one per expected InputError
	}{
		{"file", []string{a}, ExpandOptions{}, []string{a}, nil},
		{"directory", []string{filepath.Join(d, "scenes")}, ExpandOptions{}, []string{a, b}, nil},
		{"glob", []string{filepath.Join(d, "*", "a.tif")}, ExpandOptions{}, []string{dup, a}, nil},
		{"duplicates removed", []string{a, a, filepath.Join(d, "scenes", "*.tif")}, ExpandOptions{}, []string{a}, nil},
		{"missing file", []string{filepath.Join(d, "nope.tif"), a}, ExpandOptions{}, []string{a}, []string{"nope.tif: no such file or directory"}},
		{"glob without match", []string{filepath.Join(d, "*.hdr")}, ExpandOptions{}, nil, []string{"no files match"}},
		{"empty directory", []string{filepath.Join(d, "empty")}, ExpandOptions{}, nil, []string{"empty: directory holds no raster or STAC files"}},
		{"stac item", []string{item}, ExpandOptions{}, []string{filepath.Join(d, "stac", "data", "acq1.tif")}, nil},
		{"stac item --asset", []string{item}, ExpandOptions{Asset: "thumb"}, []string{filepath.Join(d, "stac", "t.png")}, nil},
		{"stac item missing asset", []string{item}, ExpandOptions{Asset: "swir"}, nil, []string{`item has no asset "swir" (assets: hsi, thumb)`}},
		{"vsi name kept", []string{"/vsizip/archive.zip/scene.tif"}, ExpandOptions{}, []string{"/vsizip/archive.zip/scene.tif"}, nil},
		{"subdataset kept", []string{`HDF5:"x.h5"://cube`}, ExpandOptions{}, []string{`HDF5:"x.h5"://cube`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs, err := Expand(context.Background(), tc.args, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if strings.Join(names(got), "|") != strings.Join(want, "|") {
				t.Errorf("got inputs %q, want %q", names(got), want)
			}
			if len(errs) != len(tc.wantErrs) {
				t.Fatalf("got errors %q, want %d matching %q", errText(errs), len(tc.wantErrs), tc.wantErrs)
			}
			for i, w := range tc.wantErrs {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("got error %q, want it to contain %q", errs[i], w)
				}
			}
		})
	}
}

func TestExpandSTACErrors(t *testing.T) {
	d := t.TempDir()
	for _, tc := range []struct {
		name, doc string
		wantErr   error
		wantText  string
	}{
		{"bad JSON", `{"type":"Feature",`, nil, "bad JSON"},
		{"not STAC", `{"type":"Point","coordinates":[0,0]}`, ErrNotSTAC, `type "Point"`},
		{"href escapes", itemJSON("x", `"hsi":{"href":"../../etc/passwd","roles":["data"]}`), ErrOutsideCatalog, "(../ past the folder)"},
		{"href escapes after clean", itemJSON("x", `"hsi":{"href":"data/../../x.tif","roles":["data"]}`), ErrOutsideCatalog, "(../ past the folder)"},
		{"no data role", itemJSON("x", `"a":{"href":"a.tif"},"b":{"href":"b.tif"}`), ErrNoAsset, "name the one to classify"},
		{"two data assets", itemJSON("x", `"a":{"href":"a.tif","roles":["data"]},"b":{"href":"b.tif","roles":["data"]}`), ErrNoAsset, "several assets"},
		{"no href", itemJSON("x", `"a":{"roles":["data"]}`), ErrNoAsset, "no href"},
		{"odd scheme", itemJSON("x", `"a":{"href":"ftp://h/a.tif","roles":["data"]}`), nil, `unsupported URL scheme "ftp"`},
		{"empty item collection", `{"type":"FeatureCollection","features":[]}`, nil, "no features"},
		{"catalog without links", `{"type":"Catalog","id":"c","stac_version":"1.0.0","description":"d","links":[]}`, nil, "no item or child links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, filepath.Join(d, strings.ReplaceAll(tc.name, " ", "_")+".json"), tc.doc)
			got, errs, err := Expand(context.Background(), []string{p}, ExpandOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 || len(errs) != 1 {
				t.Fatalf("got inputs %q and errors %q, want one error", names(got), errText(errs))
			}
			if tc.wantErr != nil && !errors.Is(errs[0], tc.wantErr) {
				t.Errorf("got error %v, want it to wrap %v", errs[0], tc.wantErr)
			}
			if !strings.Contains(errs[0].Error(), tc.wantText) || !strings.Contains(errs[0].Error(), p) {
				t.Errorf("got error %q, want it to name %s and contain %q", errs[0], p, tc.wantText)
			}
		})
	}
}

func TestExpandCatalogs(t *testing.T) {
	d := t.TempDir()
	writeFile(t, filepath.Join(d, "cat", "catalog.json"), `{"type":"Catalog","id":"root","stac_version":"1.0.0","description":"d",
		"links":[{"rel":"self","href":"./catalog.json"},{"rel":"child","href":"./c1/collection.json"},{"rel":"item","href":"./i0/i0.json"}]}`)
	writeFile(t, filepath.Join(d, "cat", "i0", "i0.json"), itemJSON("i0", `"hsi":{"href":"./i0.tif","roles":["data"]}`))
	writeFile(t, filepath.Join(d, "cat", "c1", "collection.json"), `{"type":"Collection","id":"c1","stac_version":"1.0.0","description":"d","license":"proprietary",
		"extent":{},"links":[{"rel":"parent","href":"../catalog.json"},{"rel":"item","href":"i1/i1.json"},{"rel":"item","href":"i2/i2.json"}]}`)
	writeFile(t, filepath.Join(d, "cat", "c1", "i1", "i1.json"), itemJSON("i1", `"hsi":{"href":"i1.tif","roles":["data"]}`))
	writeFile(t, filepath.Join(d, "cat", "c1", "i2", "i2.json"), itemJSON("i2", `"hsi":{"href":"s3://bucket/i2.tif","roles":["data"]}`))
	ic := writeFile(t, filepath.Join(d, "ic.json"), `{"type":"FeatureCollection","features":[`+
		itemJSON("f1", `"hsi":{"href":"https://example.com/f1.tif","roles":["data"]}`)+`,`+
		itemJSON("f2", `"hsi":{"href":"f2.tif","roles":["data"]}`)+`]}`)

	got, errs, err := Expand(context.Background(), []string{filepath.Join(d, "cat", "catalog.json"), ic}, ExpandOptions{})
	if err != nil || len(errs) > 0 {
		t.Fatalf("Expand: %v %s", err, errText(errs))
	}
	want := []string{
		"/vsicurl/https://example.com/f1.tif",
		"/vsis3/bucket/i2.tif",
		filepath.Join(d, "cat", "c1", "i1", "i1.tif"),
		filepath.Join(d, "cat", "i0", "i0.tif"),
		filepath.Join(d, "f2.tif"),
	}
	sort.Strings(want)
	if strings.Join(names(got), "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", names(got), want)
	}
	for _, in := range got {
		if in.ItemID == "" || in.Key != in.ItemID || in.ItemDatetime != "2024-06-01T10:30:00Z" {
			t.Errorf("input %s: got item id %q key %q datetime %q, want the item's", in.Name, in.ItemID, in.Key, in.ItemDatetime)
		}
	}
}

func TestExpandHTTP(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/stac/catalog.json", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"type":"Catalog","id":"c","stac_version":"1.0.0","description":"d","links":[{"rel":"item","href":"items/a.json"},{"rel":"item","href":"items/missing.json"}]}`))
	})
	mux.HandleFunc("/stac/items/a.json", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(itemJSON("a", `"hsi":{"href":"../data/a.tif","roles":["data"]},"hsi2":{"href":"a.tif","roles":["metadata"]}`)))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	got, errs, err := Expand(context.Background(), []string{srv.URL + "/stac/catalog.json"}, ExpandOptions{Asset: "hsi2"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "/vsicurl/" + srv.URL + "/stac/items/a.tif"; len(got) != 1 || got[0].Name != want {
		t.Errorf("got %q, want [%s]", names(got), want)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "missing.json") || !strings.Contains(errs[0].Error(), "404") {
		t.Errorf("got errors %q, want one naming missing.json with 404", errText(errs))
	}
	// The data asset's ../ href leaves the folder of the item given as input on the server too.
	_, errs, _ = Expand(context.Background(), []string{srv.URL + "/stac/items/a.json"}, ExpandOptions{})
	if len(errs) != 1 || !errors.Is(errs[0], ErrOutsideCatalog) {
		t.Errorf("got errors %q, want ErrOutsideCatalog", errText(errs))
	}
	// From the catalog, the same href stays inside the catalog's folder.
	got, errs, _ = Expand(context.Background(), []string{srv.URL + "/stac/catalog.json"}, ExpandOptions{})
	if want := "/vsicurl/" + srv.URL + "/stac/data/a.tif"; len(got) != 1 || got[0].Name != want {
		t.Errorf("got %q (errors %q), want [%s]", names(got), errText(errs), want)
	}
}

func TestKeys(t *testing.T) {
	in := []Input{
		{Name: "/a/scene.tif"}, {Name: "/b/scene.tif"}, {Name: "/vsizip/x.zip/other.img"},
		{Name: "/c/item", ItemID: "S2 tile/2024"}, {Name: `HDF5:"f.h5"://cube`},
	}
	assignKeys(in)
	seen := map[string]bool{}
	for _, x := range in {
		if seen[x.Key] {
			t.Errorf("key %q used twice", x.Key)
		}
		seen[x.Key] = true
		if strings.ContainsAny(x.Key, "/\\ :\"") || strings.HasPrefix(x.Key, ".") || x.Key == "" {
			t.Errorf("key %q of %s is not a safe file name", x.Key, x.Name)
		}
	}
	if !strings.HasPrefix(in[0].Key, "scene-") || !strings.HasPrefix(in[1].Key, "scene-") {
		t.Errorf("colliding keys got %q, %q, want scene-<hash>", in[0].Key, in[1].Key)
	}
	if in[2].Key != "other" || in[3].Key != "S2_tile_2024" {
		t.Errorf("got keys %q, %q, want other, S2_tile_2024", in[2].Key, in[3].Key)
	}
}

// FuzzExpandSTAC: any bytes as a STAC document give inputs or errors, never a panic,
// and every local input found from a local document stays inside its directory
// (the catalog policy: remote ones only may be elsewhere).
func FuzzExpandSTAC(f *testing.F) {
	f.Add([]byte(itemJSON("a", `"hsi":{"href":"a.tif","roles":["data"]}`)))
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"type":"Feature","assets":{"x":{"href":"../y","roles":["data"]}}}]}`))
	f.Add([]byte(`{"type":"Catalog","links":[{"rel":"child","href":"doc.json"}]}`))
	f.Add([]byte(`{"type":"Feature","assets":{"x":{"href":"a/./../../b","roles":["data"]}}}`))
	f.Add([]byte(`{"type":"Feature","assets":{"x":{"href":"/etc/passwd","roles":["data"]}}}`))
	f.Add([]byte(`{"type":"Feature","assets":{"x":{"href":"file:///etc/passwd","roles":["data"]}}}`))
	f.Add([]byte(`{"type":"Feature","assets":{"x":{"href":"/vsizip//etc/a.zip/b","roles":["data"]}}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		d := t.TempDir()
		p := filepath.Join(d, "doc.json")
		if err := os.WriteFile(p, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		got, _, err := Expand(context.Background(), []string{p}, ExpandOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range got {
			if isRemote(in.Name) {
				continue
			}
			if rel, err := filepath.Rel(d, in.Name); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("input %q escapes %s", in.Name, d)
			}
		}
	})
}

// TestExpandDeliveries: a directory of sensor deliveries gives one scene
// per delivery (an EnMAP folder or ZIP, an EMIT reflectance file), not the
// rasters inside a delivery nor the companion files (EMIT's mask file); an
// EnMAP folder given by itself is one scene.
func TestExpandDeliveries(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "incoming")
	folder, err := fixture.WriteEnMAP(in, fixture.EnMAPOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := fixture.WriteEnMAP(in, fixture.EnMAPOptions{Seed: 2, Zip: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{folder.Labels, zipped.Labels} {
		if err := os.Remove(l); err != nil { // the fixture's labels, not part of a delivery
			t.Fatal(err)
		}
	}
	for _, n := range []string{"EMIT_L2A_RFL_001_20230316T045133_2307503_005.nc", "EMIT_L2A_MASK_001_20230316T045133_2307503_005.nc"} {
		if err := os.WriteFile(filepath.Join(in, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, errs, err := Expand(context.Background(), []string{in}, ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		names = append(names, filepath.Base(g.Name))
	}
	want := []string{filepath.Base(folder.Path), "EMIT_L2A_RFL_001_20230316T045133_2307503_005.nc", filepath.Base(zipped.Path)}
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Errorf("got scenes %q (errors %v), want %q", names, errs, want)
	}
	got, _, _ = Expand(context.Background(), []string{folder.Path}, ExpandOptions{})
	if len(got) != 1 || got[0].Name != folder.Path {
		t.Errorf("the EnMAP folder by itself: got %+v, want one scene", got)
	}
}
