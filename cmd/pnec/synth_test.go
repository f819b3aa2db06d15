package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
)

// writeSourcePair writes a small labelled scene (3 classes with distinct
// smooth spectra) to use as --spectra SCENE,LABELS without the shared data.
func writeSourcePair(t *testing.T, dir string) string {
	t.Helper()
	const rows, cols, bands = 40, 60, 16
	rng := rand.New(rand.NewPCG(1, 2))
	px := make([]float32, rows*cols*bands)
	lab := make([]float32, rows*cols)
	for i := range lab {
		c := 1 + (i%cols)/20
		lab[i] = float32(c)
		a := rng.NormFloat64()
		for b := 0; b < bands; b++ {
			x := float64(b) / bands
			px[i*bands+b] = float32(1500 + 700*float64(c)*math.Sin(math.Pi*x*float64(c)) + 50*a + 20*rng.NormFloat64())
		}
	}
	write := func(path string, n int, dt geo.DataType, data []float32) {
		w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{Cols: cols, Rows: rows, Bands: n, DataType: dt})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := w.WriteWindow(geo.Window{Cols: cols, Rows: rows}, data); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	s, l := filepath.Join(dir, "src.tif"), filepath.Join(dir, "src_gt.tif")
	write(s, bands, geo.Float32, px)
	write(l, 1, geo.Byte, lab)
	return s + "," + l
}

// gdalInfo reads a raster's description with gdalinfo -json, a reader
// independent of pnec's geo package.
func gdalInfo(t *testing.T, path string, stats bool) map[string]any {
	t.Helper()
	args := []string{"-json"}
	if stats {
		args = append(args, "-stats")
	}
	out, err := exec.Command("gdalinfo", append(args, path)...).Output()
	if err != nil {
		t.Fatalf("gdalinfo %s: %v", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSynthCommand(t *testing.T) {
	dir := t.TempDir()
	src := writeSourcePair(t, dir)
	ctx := context.Background()
	synthTo := func(name string, extra ...string) string {
		out := filepath.Join(dir, name+".tif")
		args := append([]string{"pnec", "synth", "--layout", "procedural:150x120", "--bands", "12", "--spectra", src,
			"--out", out, "--labels-out", filepath.Join(dir, name+"_gt.tif"), "--seed", "3", "--gsd", "2.5"}, extra...)
		if err := run(ctx, args); err != nil {
			t.Fatalf("pnec synth: %v", err)
		}
		return out
	}
	a := synthTo("a")
	b := synthTo("b")
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Error("same seed, different scene bytes")
	}
	info := gdalInfo(t, a, true)
	size := info["size"].([]any)
	if size[0].(float64) != 120 || size[1].(float64) != 150 {
		t.Errorf("gdalinfo size %v, want [120 150]", size)
	}
	bandsInfo := info["bands"].([]any)
	if len(bandsInfo) != 12 {
		t.Fatalf("got %d bands, want 12", len(bandsInfo))
	}
	for i, bi := range bandsInfo {
		bm := bi.(map[string]any)
		if bm["type"] != "Int16" {
			t.Errorf("band %d type %v, want Int16", i+1, bm["type"])
		}
		if sd, _ := bm["stdDev"].(float64); sd <= 0 {
			t.Errorf("band %d has standard deviation %v, want > 0", i+1, bm["stdDev"])
		}
	}
	gt := info["geoTransform"].([]any)
	if gt[1].(float64) != 2.5 {
		t.Errorf("pixel size %v, want 2.5 m", gt[1])
	}
	if wkt, _ := info["coordinateSystem"].(map[string]any)["wkt"].(string); !strings.Contains(wkt, "UTM zone 32N") {
		t.Errorf("CRS %q, want UTM zone 32N", wkt)
	}
	md, _ := info["metadata"].(map[string]any)[""].(map[string]any)
	if md["PNEC_SYNTH_SEED"] != "3" {
		t.Errorf("metadata %v lacks PNEC_SYNTH_SEED=3", md)
	}
	lab := gdalInfo(t, filepath.Join(dir, "a_gt.tif"), true)
	lb := lab["bands"].([]any)[0].(map[string]any)
	if lb["type"] != "Byte" || lb["minimum"].(float64) < 1 || lb["maximum"].(float64) > 10 {
		t.Errorf("labels band %v, want Byte values 1..10", lb)
	}

	c := synthTo("c", "--seed", "4")
	cb, _ := os.ReadFile(c)
	if bytes.Equal(ab, cb) {
		t.Error("seeds 3 and 4 gave the same scene")
	}
}

func TestSynthCommandVRT(t *testing.T) {
	dir := t.TempDir()
	src := writeSourcePair(t, dir)
	vrt := filepath.Join(dir, "big.vrt")
	err := run(context.Background(), []string{"pnec", "synth", "--layout", "procedural:100x80", "--bands", "5", "--spectra", src,
		"--out", vrt, "--labels-out", filepath.Join(dir, "big_gt.vrt"), "--vrt", "20000x20000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{vrt, filepath.Join(dir, "big_gt.vrt")} {
		info := gdalInfo(t, p, false)
		if size := info["size"].([]any); size[0].(float64) != 20000 || size[1].(float64) != 20000 {
			t.Errorf("%s: size %v, want 20000x20000", p, size)
		}
	}
	// gdal_translate reads a window far inside through the VRT.
	out := filepath.Join(dir, "win.tif")
	if b, err := exec.Command("gdal_translate", "-q", "-srcwin", "17000", "19000", "50", "40", vrt, out).CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate: %v: %s", err, b)
	}
	if info := gdalInfo(t, out, true); len(info["bands"].([]any)) != 5 {
		t.Errorf("window has %d bands, want 5", len(info["bands"].([]any)))
	}
}

func TestSynthCommandErrors(t *testing.T) {
	dir := t.TempDir()
	src := writeSourcePair(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no layout", []string{"--out", "x.tif"}, "layout"},
		{"bad type", []string{"--layout", "procedural:10x10", "--out", "x.tif", "--type", "Complex64"}, "--type Complex64"},
		{"bad vrt", []string{"--layout", "procedural:10x10", "--out", "x.vrt", "--vrt", "big"}, "--vrt"},
		{"bad procedural", []string{"--layout", "procedural:10", "--out", "x.tif"}, "ROWSxCOLS"},
		{"missing layout file", []string{"--layout", filepath.Join(dir, "nope.tif"), "--out", "x.tif"}, "nope.tif"},
		{"bad spectra", []string{"--layout", "procedural:10x10", "--out", "x.tif", "--spectra", "Mars"}, "Mars"},
		{"missing spectra file", []string{"--layout", "procedural:10x10", "--out", "x.tif", "--spectra", "a.tif,b.tif"}, "a.tif"},
		{"bad mixing", []string{"--layout", "procedural:10x10", "--out", "x.tif", "--mixing", "9", "--spectra", src}, "mixing"},
		{"negative noise", []string{"--layout", "procedural:10x10", "--out", "x.tif", "--noise", "-1", "--spectra", src}, "--noise -1: want 0 or more"},
		// Refused before the block is generated: the VRT text alone would be 1 TB.
		{"absurd vrt", []string{"--layout", "procedural:10x10", "--out", filepath.Join(dir, "huge.vrt"), "--spectra", src, "--vrt", "1000000000x1000000000"},
			"--vrt 1000000000x1000000000: VRT 1000000000x1000000000: "},
		{"vrt beyond GDAL", []string{"--layout", "procedural:10x10", "--out", filepath.Join(dir, "huge.vrt"), "--spectra", src, "--vrt", "3000000000x10"},
			"at most 2147483647 pixels a side"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), append([]string{"pnec", "synth"}, tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one mentioning %q", err, tc.want)
			}
			if err != nil && strings.ContainsAny(err.Error(), "{}\n") {
				t.Errorf("error %q prints a Go value or more than one line", err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "huge*")); len(left) > 0 {
				t.Errorf("left %v", left)
			}
		})
	}
}

// TestSynthPaviaSized makes the Pavia University-sized scene of the docs
// and checks it with rasterio.
func TestSynthPaviaSized(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 610x340x103 scene")
	}
	gt := filepath.Join("..", "..", "..", "shared", "data", "PaviaU", "paviaU_gt.mat")
	if _, err := os.Stat(gt); err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	dir := t.TempDir()
	out, labels := filepath.Join(dir, "paviau.tif"), filepath.Join(dir, "paviau_gt.tif")
	if err := run(context.Background(), []string{"pnec", "synth", "--layout", gt, "--bands", "103", "--out", out, "--labels-out", labels}); err != nil {
		t.Fatal(err)
	}
	py := `import rasterio, sys
s = rasterio.open(sys.argv[1]); l = rasterio.open(sys.argv[2]).read(1)
print(s.count, s.height, s.width, s.dtypes[0], s.crs.to_epsg(), int((l > 0).sum()), int(l.max()))`
	b, err := exec.Command("/usr/bin/python3", "-c", py, out, labels).CombinedOutput()
	if err != nil {
		t.Skipf("rasterio not available: %v %s", err, b)
	}
	if got, want := strings.TrimSpace(string(b)), "103 610 340 int16 32632 42776 9"; got != want {
		t.Errorf("rasterio: got %q, want %q", got, want)
	}
}

// TestSynthFromImportedLayout uses a ground-truth GeoTIFF made by
// 'pnec import mat' as the layout: the label output must equal it.
func TestSynthFromImportedLayout(t *testing.T) {
	data := filepath.Join("..", "..", "..", "shared", "data")
	gtMat := filepath.Join(data, "SalinasA", "SalinasA_gt.mat")
	if _, err := os.Stat(gtMat); err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	dir := t.TempDir()
	gt := filepath.Join(dir, "gt.tif")
	ctx := context.Background()
	if err := run(ctx, []string{"pnec", "import", "mat", "--labels", gtMat, "--labels-out", gt}); err != nil {
		t.Fatal(err)
	}
	labels := filepath.Join(dir, "labels.tif")
	if err := run(ctx, []string{"pnec", "synth", "--layout", gt, "--spectra", "JasperRidge", "--data-dir", data, "--bands", "50",
		"--out", filepath.Join(dir, "scene.tif"), "--labels-out", labels}); err != nil {
		t.Fatal(err)
	}
	checksum := func(p string) string {
		b, err := exec.Command("gdalinfo", "-checksum", p).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "Checksum=") {
				return strings.TrimSpace(l)
			}
		}
		t.Fatalf("gdalinfo -checksum %s: no checksum", p)
		return ""
	}
	if a, b := checksum(gt), checksum(labels); a != b {
		t.Errorf("label checksum %s, layout %s: want equal", b, a)
	}
}

// TestHelpNameStable: the app runs many times in one process (the tests)
// and each help still names the command once ("pnec synth", not
// "pnec pnec pnec ... synth").
func TestHelpNameStable(t *testing.T) {
	for i := 0; i < 3; i++ {
		for _, args := range [][]string{{"synth", "--help"}, {"import", "mat", "--help"}} {
			if _, _, err := runCaptured(t, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{{[]string{"synth", "--help"}, "pnec synth - "}, {[]string{"import", "mat", "--help"}, "pnec import mat - "}} {
		out, _, err := runCaptured(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "   "+tc.want) || strings.Contains(out, "pnec pnec") {
			t.Errorf("help of %v does not name it once as %q:\n%.300s", tc.args, tc.want, out)
		}
	}
}
