package geo

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airbusgeo/godal"
)

// pythonGDAL is the interpreter with rasterio and GDAL's Python bindings.
const pythonGDAL = "/usr/bin/python3"

// serveAlone copies the product file alone (no sidecar, no style) into a
// fresh directory served over HTTP on 127.0.0.1 (stopped at the end of the
// test) and returns its /vsicurl/ name and the names the server was asked
// for. That is how a COG server or object store hands it to a client.
func serveAlone(t *testing.T, product string) (string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(product)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "product.tif"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	fs := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		fs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, want 127.0.0.1", srv.URL)
	}
	return "/vsicurl/" + srv.URL + "/product.tif", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// clientEnv is the environment of a GDAL client reading COGs over HTTP as
// COG servers do: no directory listing, so no sidecar is ever looked for.
func clientEnv() []string {
	return append(os.Environ(), "GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR", "CPL_VSIL_CURL_ALLOWED_EXTENSIONS=.tif", "GDAL_HTTP_MAX_RETRY=0")
}

// TestProductOverHTTPAlone reads a product the way clients do, from the file
// alone over /vsicurl/ with GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR: with
// gdalinfo and with rasterio, every reader must find the no-data of both
// bands, the colour table with a transparent no-data entry, the class names,
// the reliability unit and the values.
func TestProductOverHTTPAlone(t *testing.T) {
	if _, err := exec.LookPath("gdalinfo"); err != nil {
		t.Skip("gdalinfo not installed (apt-get install gdal-bin)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.tif")
	pc := productCases[0]
	const cols, rows = 600, 530
	spec := writeTestProduct(t, path, pc, cols, rows, map[string]string{"MODEL_CHECKSUM": "abc"})
	url, asked := serveAlone(t, path)

	// Expected counts: no-data pixels and pixels per class.
	wantNoData := 0
	wantCount := map[int]int{}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			v, _ := productPixel(spec.Classes, r, c)
			if v == ClassNoData {
				wantNoData++
			} else {
				wantCount[int(v)]++
			}
		}
	}

	t.Run("gdalinfo", func(t *testing.T) {
		cmd := exec.Command("gdalinfo", "-json", "-hist", url)
		cmd.Env = clientEnv()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gdalinfo %s: %v", url, err)
		}
		var info struct {
			Files []string `json:"files"`
			Bands []struct {
				Description         string                       `json:"description"`
				NoData              *float64                     `json:"noDataValue"`
				Unit                string                       `json:"unit"`
				ColorInterpretation string                       `json:"colorInterpretation"`
				Metadata            map[string]map[string]string `json:"metadata"`
				ColorTable          *struct{ Entries [][4]int }  `json:"colorTable"`
			} `json:"bands"`
			Metadata map[string]map[string]string `json:"metadata"`
		}
		if err := json.Unmarshal(out, &info); err != nil {
			t.Fatalf("gdalinfo -json: %v", err)
		}
		for _, f := range info.Files {
			if strings.HasSuffix(f, auxSuffix) {
				t.Errorf("gdalinfo read a sidecar %s; the test serves the TIFF alone", f)
			}
		}
		if len(info.Bands) != 2 {
			t.Fatalf("got %d bands, want 2", len(info.Bands))
		}
		cls, rel := info.Bands[0], info.Bands[1]
		for i, b := range info.Bands {
			if b.NoData == nil || *b.NoData != pc.relNoData {
				t.Errorf("band %d no-data: got %v, want %v inside the TIFF", i+1, b.NoData, pc.relNoData)
			}
		}
		if cls.ColorInterpretation != "Palette" || cls.ColorTable == nil {
			t.Fatalf("class band: colour interpretation %q, colour table %v; want a palette", cls.ColorInterpretation, cls.ColorTable != nil)
		}
		if e := cls.ColorTable.Entries[int(pc.relNoData)]; e[3] != 0 {
			t.Errorf("colour table entry of no-data: got %v, want transparent", e)
		}
		for _, c := range spec.Classes {
			if e := cls.ColorTable.Entries[c.Value]; e != [4]int{int(c.Color[0]), int(c.Color[1]), int(c.Color[2]), 255} {
				t.Errorf("colour of class %d: got %v, want %v", c.Value, e, c.Color)
			}
			if got := cls.Metadata[""][fmt.Sprintf("CLASS_%d", c.Value)]; got != c.Name {
				t.Errorf("class %d name inside the TIFF: got %q, want %q", c.Value, got, c.Name)
			}
		}
		if got := cls.Metadata[""][fmt.Sprintf("CLASS_%d", int(pc.relNoData))]; got != "no data" {
			t.Errorf("no-data value's description: got %q, want \"no data\"", got)
		}
		if rel.Unit != ReliabilityUnit || rel.ColorInterpretation == "Alpha" || rel.Description != "reliability" {
			t.Errorf("reliability band: unit %q, colour interpretation %q, description %q; want unit %q, not alpha",
				rel.Unit, rel.ColorInterpretation, rel.Description, ReliabilityUnit)
		}
		if got := info.Metadata[""]["PNEC_MODEL_CHECKSUM"]; got != "abc" {
			t.Errorf("PNEC_MODEL_CHECKSUM inside the TIFF: got %q", got)
		}
		for _, p := range asked() {
			if p != "/product.tif" {
				t.Errorf("the client asked for %s", p)
			}
		}
	})

	t.Run("rasterio", func(t *testing.T) {
		if err := exec.Command(pythonGDAL, "-c", "import rasterio").Run(); err != nil {
			t.Skipf("%s cannot import rasterio (apt-get install python3-rasterio)", pythonGDAL)
		}
		script := `
import json, sys, numpy as np, rasterio
with rasterio.Env(GDAL_DISABLE_READDIR_ON_OPEN="EMPTY_DIR"):
    with rasterio.open(sys.argv[1]) as s:
        cls = s.read(1, masked=True)
        rel = s.read(2, masked=True)
        vals, counts = np.unique(cls.compressed(), return_counts=True)
        print(json.dumps({
            "files": s.files, "nodata": list(s.nodatavals), "units": list(s.units),
            "masked_class": int(cls.mask.sum()), "masked_rel": int(rel.mask.sum()),
            "counts": {str(int(v)): int(n) for v, n in zip(vals, counts)},
            "cmap_nodata": list(s.colormap(1)[255]), "tags1": s.tags(1),
            "rel_max": float(rel.max()), "rel_min": float(rel.min()),
        }))
`
		cmd := exec.Command(pythonGDAL, "-c", script, url)
		cmd.Env = clientEnv()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("rasterio over %s: %v", url, err)
		}
		var got struct {
			Files      []string
			Nodata     []float64
			Units      []string
			MaskedCls  int `json:"masked_class"`
			MaskedRel  int `json:"masked_rel"`
			Counts     map[string]int
			CmapNoData []int `json:"cmap_nodata"`
			Tags1      map[string]string
			RelMax     float64 `json:"rel_max"`
			RelMin     float64 `json:"rel_min"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("rasterio output %s: %v", out, err)
		}
		if len(got.Files) != 1 {
			t.Errorf("rasterio files: got %v, want the TIFF alone", got.Files)
		}
		if len(got.Nodata) != 2 || got.Nodata[0] != pc.relNoData || got.Nodata[1] != pc.relNoData {
			t.Errorf("rasterio nodata: got %v, want %v for both bands", got.Nodata, pc.relNoData)
		}
		if len(got.Units) != 2 || got.Units[1] != ReliabilityUnit {
			t.Errorf("rasterio units: got %v, want reliability in %s", got.Units, ReliabilityUnit)
		}
		// Class no-data is masked, never counted as a class.
		if got.MaskedCls != wantNoData {
			t.Errorf("rasterio masked class pixels: got %d, want %d", got.MaskedCls, wantNoData)
		}
		if len(got.Counts) != len(wantCount) {
			t.Errorf("rasterio class values: got %v, want %v", got.Counts, wantCount)
		}
		for v, n := range wantCount {
			if got.Counts[fmt.Sprint(v)] != n {
				t.Errorf("rasterio pixels of class %d: got %d, want %d", v, got.Counts[fmt.Sprint(v)], n)
			}
		}
		if got.MaskedRel < wantNoData || got.RelMin < 0 || got.RelMax > 100 {
			t.Errorf("rasterio reliability: %d masked (want at least %d), range %v..%v (want within 0..100)", got.MaskedRel, wantNoData, got.RelMin, got.RelMax)
		}
		if len(got.CmapNoData) != 4 || got.CmapNoData[3] != 0 {
			t.Errorf("rasterio colormap entry of no-data: got %v, want transparent", got.CmapNoData)
		}
		for _, c := range spec.Classes {
			if n := got.Tags1[fmt.Sprintf("CLASS_%d", c.Value)]; n != c.Name {
				t.Errorf("rasterio class %d name: got %q, want %q", c.Value, n, c.Name)
			}
		}
	})
}

// TestProductCOGValidator runs GDAL's own COG validator, full check, on
// products of each layout, and of an odd block size with overviews.
func TestProductCOGValidator(t *testing.T) {
	if err := exec.Command(pythonGDAL, "-c", "import osgeo_utils.samples.validate_cloud_optimized_geotiff").Run(); err != nil {
		t.Skipf("%s lacks GDAL's COG validator (apt-get install python3-gdal)", pythonGDAL)
	}
	dir := t.TempDir()
	var files []string
	for _, pc := range productCases {
		path := filepath.Join(dir, pc.name+".tif")
		writeTestProduct(t, path, pc, 600, 530, nil)
		files = append(files, path)
		if pc.float32 {
			files = append(files, ReliabilityPath(path))
		}
	}
	for _, f := range files {
		out, err := exec.Command(pythonGDAL, "-m", "osgeo_utils.samples.validate_cloud_optimized_geotiff", "--full-check=yes", f).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "is a valid cloud optimized GeoTIFF") {
			t.Errorf("COG validator on %s: %v\n%s", filepath.Base(f), err, out)
		}
	}
}

// TestProductBlockSizeOverviews: with --co BLOCKSIZE=128 (the COG driver's
// smallest) a 344x332 product
// gets the overview levels GDAL's COG driver gives it (2), and the default
// compression is DEFLATE with the predictor; ZSTD only when asked for.
func TestProductBlockSizeOverviews(t *testing.T) {
	for _, tc := range []struct {
		name     string
		co       []string
		levels   int
		compress string
	}{
		{"default", nil, 0, "DEFLATE"},
		{"blocksize 128", []string{"BLOCKSIZE=128"}, 2, "DEFLATE"},
		{"zstd", []string{"COMPRESS=ZSTD"}, 0, "ZSTD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.tif")
			p, err := CreateProduct(path, ProductSpec{Cols: 344, Rows: 332, Classes: testClasses(3), CreationOptions: tc.co})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			cl := make([]uint16, 344*332)
			rl := make([]float32, 344*332)
			for i := range cl {
				cl[i] = uint16(1 + 2*(i%3))
				rl[i] = float32(i%100) / 100
			}
			if err := p.WriteRows(0, cl, rl); err != nil {
				t.Fatal(err)
			}
			if err := p.Commit(t.Context()); err != nil {
				if tc.compress == "ZSTD" && strings.Contains(err.Error(), "ZSTD") {
					t.Skipf("this GDAL has no ZSTD: %v", err)
				}
				t.Fatal(err)
			}
			out := gdalinfoOutput(t, "-json", path)
			var info struct {
				Metadata map[string]map[string]string `json:"metadata"`
				Bands    []struct {
					Block     []int `json:"block"`
					Overviews []any `json:"overviews"`
				} `json:"bands"`
			}
			if err := json.Unmarshal(out, &info); err != nil {
				t.Fatal(err)
			}
			if n := len(info.Bands[0].Overviews); n != tc.levels {
				t.Errorf("overview levels: got %d, want %d", n, tc.levels)
			}
			is := info.Metadata["IMAGE_STRUCTURE"]
			if is["COMPRESSION"] != tc.compress {
				t.Errorf("compression: got %q, want %s", is["COMPRESSION"], tc.compress)
			}
			if is["PREDICTOR"] != "2" {
				t.Errorf("predictor: got %q, want 2 (horizontal)", is["PREDICTOR"])
			}
		})
	}
}

// TestProductUngeoreferenced: no georeference in, none out.
func TestProductUngeoreferenced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.tif")
	p, err := CreateProduct(path, ProductSpec{Cols: 40, Rows: 30, Classes: testClasses(2), ReliabilityFloat32: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WriteRows(0, make([]uint16, 1200), make([]float32, 1200)); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, ReliabilityPath(path)} {
		s, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		in := s.Info()
		s.Close()
		if in.HasGeoTransform || in.WKT != "" {
			t.Errorf("%s: got geotransform %v (%v) and CRS %q, want none", filepath.Base(f), in.GeoTransform, in.HasGeoTransform, in.WKT)
		}
	}
}

// TestProductSidecarOnlyRepeats: everything the .aux.xml sidecar says is
// also inside the TIFF (category names as CLASS_<value>, the PNEC domain as
// PNEC_* items), and the sidecar declares no no-data of its own.
func TestProductSidecarOnlyRepeats(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.tif")
	writeTestProduct(t, path, productCases[0], 60, 50, map[string]string{"MODEL_CHECKSUM": "abc"})
	b, err := os.ReadFile(path + auxSuffix)
	if err != nil {
		t.Fatal(err)
	}
	var pam pamDataset
	if err := xml.Unmarshal(b, &pam); err != nil {
		t.Fatalf("sidecar: %v", err)
	}
	// Opened without sibling files: what the TIFF alone says.
	ds, err := godal.Open(path, godal.RasterOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	cls := ds.Bands()[0]
	n := 0
	for _, band := range pam.Bands {
		if band.NoData != "" {
			t.Errorf("sidecar band %d declares no-data %s", band.Band, band.NoData)
		}
		for v, name := range band.Categories {
			if name == "" {
				continue
			}
			n++
			if got := cls.Metadata(fmt.Sprintf("CLASS_%d", v)); got != name {
				t.Errorf("category %d %q: inside the TIFF CLASS_%d=%q", v, name, v, got)
			}
		}
	}
	if n != len(testClasses(6)) {
		t.Errorf("sidecar has %d category names, want %d", n, len(testClasses(6)))
	}
	for _, md := range pam.Metadata {
		for _, it := range md.Items {
			if got := ds.Metadata("PNEC_" + it.Key); got != it.Value {
				t.Errorf("sidecar %s/%s=%q: inside the TIFF PNEC_%s=%q", md.Domain, it.Key, it.Value, it.Key, got)
			}
		}
	}
}
