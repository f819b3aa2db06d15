package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/matfile"
)

// impDataFile returns <repo root>/../shared/data/rel, skipping when absent.
func impDataFile(t *testing.T, rel string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// Tests run in cmd/pnec: the repository root is two levels up.
	p := filepath.Join(wd, "..", "..", "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s absent; skipping (the shared data folder is needed)", p)
	}
	return p
}

// impCaptureStderr runs f with os.Stderr redirected and returns what was written.
func impCaptureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() {
		os.Stderr = old
	}()
	f()
	w.Close()
	os.Stderr = old
	return <-done
}

// impReadBack reads a whole GeoTIFF with geo.
func impReadBack(t *testing.T, path string) (geo.Info, []float32) {
	t.Helper()
	sc, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	info := sc.Info()
	blk, err := sc.ReadWindow(context.Background(), geo.Window{Cols: info.Cols, Rows: info.Rows})
	if err != nil {
		t.Fatal(err)
	}
	return info, blk.Data
}

// impGdalinfo runs gdalinfo -json, an independent reader of the output.
func impGdalinfo(t *testing.T, path string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("gdalinfo"); err != nil {
		t.Skip("gdalinfo not installed")
	}
	out, err := exec.Command("gdalinfo", "-json", path).Output()
	if err != nil {
		t.Fatalf("gdalinfo %s: %v", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func impBandTypes(m map[string]any) []string {
	var ts []string
	for _, b := range m["bands"].([]any) {
		ts = append(ts, b.(map[string]any)["type"].(string))
	}
	return ts
}

func impEqual(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: value %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestImportMatSalinasA(t *testing.T) {
	cube := impDataFile(t, "SalinasA/SalinasA_corrected.mat")
	gt := impDataFile(t, "SalinasA/SalinasA_gt.mat")
	dir := t.TempDir()
	out, labelsOut := filepath.Join(dir, "sa.tif"), filepath.Join(dir, "sa_gt.tif")
	stderr := impCaptureStderr(t, func() {
		if err := run(context.Background(), []string{"pnec", "import", "mat", "--cube", cube, "--labels", gt, "--out", out, "--labels-out", labelsOut}); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(stderr, "notice: no georeference given") || !strings.Contains(stderr, "local pixel grid") {
		t.Errorf("stderr %q: want the local-grid notice", stderr)
	}
	rows, cols, bands, want, err := matfile.ReadImage(cube, "salinasA_corrected")
	if err != nil {
		t.Fatal(err)
	}
	info, got := impReadBack(t, out)
	if info.Rows != rows || info.Cols != cols || info.Bands != bands || info.DataType != "Int16" {
		t.Fatalf("cube: got %dx%dx%d %s, want %dx%dx%d Int16", info.Rows, info.Cols, info.Bands, info.DataType, rows, cols, bands)
	}
	impEqual(t, "cube", got, want)
	if info.HasGeoTransform || info.WKT != "" || info.Metadata["PNEC_GRID"] != "local" {
		t.Errorf("local grid: got geotransform %v (has %v), WKT %q, PNEC_GRID %q; want none, none, local", info.GeoTransform, info.HasGeoTransform, info.WKT, info.Metadata["PNEC_GRID"])
	}
	_, _, _, wantGT, err := matfile.ReadImage(gt, "")
	if err != nil {
		t.Fatal(err)
	}
	linfo, gotGT := impReadBack(t, labelsOut)
	if linfo.DataType != "Byte" || linfo.Rows != rows || linfo.Cols != cols || linfo.HasNoData[0] {
		t.Fatalf("labels: got %dx%d %s nodata %v, want %dx%d Byte without nodata", linfo.Rows, linfo.Cols, linfo.DataType, linfo.HasNoData[0], rows, cols)
	}
	impEqual(t, "labels", gotGT, wantGT)

	// An independent reader agrees on size, type and the absence of georeferencing.
	m := impGdalinfo(t, out)
	size := m["size"].([]any)
	if int(size[0].(float64)) != cols || int(size[1].(float64)) != rows {
		t.Errorf("gdalinfo size %v, want [%d %d]", size, cols, rows)
	}
	if ts := impBandTypes(m); len(ts) != bands || ts[0] != "Int16" {
		t.Errorf("gdalinfo: %d bands of %v, want %d Int16", len(ts), ts[:1], bands)
	}
	if _, ok := m["geoTransform"]; ok {
		t.Errorf("gdalinfo reports a geotransform %v for a local grid", m["geoTransform"])
	}
}

func TestImportMatJasperRidgeGeoreferenced(t *testing.T) {
	cube := impDataFile(t, "JasperRidge/JasperRidge2_R198.mat")
	gt := impDataFile(t, "JasperRidge/JasperRidge_gt.mat")
	dir := t.TempDir()
	out, labelsOut := filepath.Join(dir, "jr.tif"), filepath.Join(dir, "jr_gt.tif")
	err := run(context.Background(), []string{"pnec", "import", "mat", "--cube", cube, "--labels", gt + ":jasper_gt",
		"--out", out, "--labels-out", labelsOut, "--epsg", "32610", "--origin", "560000,4140000", "--pixel-size", "20"})
	if err != nil {
		t.Fatal(err)
	}
	rows, cols, bands, want, err := matfile.ReadUnmixing(cube)
	if err != nil {
		t.Fatal(err)
	}
	info, got := impReadBack(t, out)
	if info.Rows != 100 || info.Cols != 100 || info.Bands != 198 || rows != 100 || cols != 100 || bands != 198 {
		t.Fatalf("cube: got %dx%dx%d, want 100x100x198", info.Rows, info.Cols, info.Bands)
	}
	// uint16-stored values up to 5437 fit Int16.
	if info.DataType != "Int16" {
		t.Errorf("cube type %s, want Int16", info.DataType)
	}
	impEqual(t, "cube", got, want)
	wantGT := [6]float64{560000, 20, 0, 4140000, 0, -20}
	if info.GeoTransform != wantGT || info.EPSG != 32610 {
		t.Errorf("georeference: got %v EPSG %d, want %v EPSG 32610", info.GeoTransform, info.EPSG, wantGT)
	}
	_, _, _, wantLabels, err := matfile.ReadImage(gt, "jasper_gt")
	if err != nil {
		t.Fatal(err)
	}
	linfo, gotLabels := impReadBack(t, labelsOut)
	impEqual(t, "labels", gotLabels, wantLabels)
	if linfo.GeoTransform != wantGT || linfo.EPSG != 32610 {
		t.Errorf("labels georeference: got %v EPSG %d, want %v EPSG 32610", linfo.GeoTransform, linfo.EPSG, wantGT)
	}
	m := impGdalinfo(t, out)
	gtj := m["geoTransform"].([]any)
	for i, v := range wantGT {
		if gtj[i].(float64) != v {
			t.Errorf("gdalinfo geoTransform %v, want %v", gtj, wantGT)
			break
		}
	}
	cs, _ := m["coordinateSystem"].(map[string]any)
	if wkt, _ := cs["wkt"].(string); !strings.Contains(wkt, `ID["EPSG",32610]`) {
		t.Errorf("gdalinfo CRS does not name EPSG:32610: %.200s", wkt)
	}
}

func TestImportMatLabelsOnly(t *testing.T) {
	split := impDataFile(t, "Houston2013/houston_gt_trte.mat")
	out := filepath.Join(t.TempDir(), "tr.tif")
	if err := run(context.Background(), []string{"pnec", "import", "mat", "--labels", split + ":houston_gt_tr", "--labels-out", out}); err != nil {
		t.Fatal(err)
	}
	info, got := impReadBack(t, out)
	if info.Rows != 349 || info.Cols != 1905 || info.Bands != 1 || info.DataType != "Byte" {
		t.Fatalf("got %dx%dx%d %s, want 349x1905x1 Byte", info.Rows, info.Cols, info.Bands, info.DataType)
	}
	n := 0
	for _, v := range got {
		if v != 0 {
			n++
		}
	}
	if n != 2832 {
		t.Errorf("labelled pixels: got %d, want 2832 (data README)", n)
	}
}

// TestImportMatV73 builds a MATLAB v7.3-like file (a 512-byte MAT header in
// front of an HDF5 file holding the label map transposed, as MATLAB stores
// it) and imports it through GDAL's HDF5 driver.
func TestImportMatV73(t *testing.T) {
	if _, err := exec.LookPath("gdal_translate"); err != nil {
		t.Skip("gdal_translate not installed")
	}
	gt := impDataFile(t, "SalinasA/SalinasA_gt.mat")
	rows, cols, _, want, err := matfile.ReadImage(gt, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// HDF5 sees MATLAB's rows x cols array as cols x rows (row-major).
	tr := make([]float32, len(want))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			tr[c*rows+r] = want[r*cols+c]
		}
	}
	tif := filepath.Join(dir, "t.tif")
	w, err := geo.CreateGeoTIFF(tif, geo.RasterSpec{Cols: rows, Rows: cols, Bands: 1, DataType: geo.Byte})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteWindow(geo.Window{Cols: rows, Rows: cols}, tr); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	nc := filepath.Join(dir, "t.nc")
	if out, err := exec.Command("gdal_translate", "-q", "-of", "netCDF", "-co", "FORMAT=NC4", "-co", "WRITE_BOTTOMUP=NO", tif, nc).CombinedOutput(); err != nil {
		t.Skipf("this GDAL cannot write NetCDF-4 (HDF5): %v %s", err, out)
	}
	body, err := os.ReadFile(nc)
	if err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 512)
	copy(hdr, "MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 .")
	copy(hdr[124:], "\x00\x02IM")
	mat := filepath.Join(dir, "v73.mat")
	if err := os.WriteFile(mat, append(hdr, body...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "v73.tif")
	if err := run(context.Background(), []string{"pnec", "import", "mat", "--labels", mat + ":Band1", "--labels-out", out}); err != nil {
		t.Fatal(err)
	}
	info, got := impReadBack(t, out)
	if info.Rows != rows || info.Cols != cols {
		t.Fatalf("got %dx%d, want %dx%d", info.Rows, info.Cols, rows, cols)
	}
	impEqual(t, "v7.3 labels", got, want)

	// Without :VAR, one line saying what to do.
	err = run(context.Background(), []string{"pnec", "import", "mat", "--labels", mat, "--labels-out", out + "2"})
	if err == nil || !strings.Contains(err.Error(), "v7.3") || !strings.Contains(err.Error(), ":VAR") {
		t.Errorf("v7.3 without VAR: got %v, want an error asking for :VAR", err)
	}
}

func TestImportMatErrors(t *testing.T) {
	salinas := impDataFile(t, "SalinasA/SalinasA_corrected.mat")
	jasperGT := impDataFile(t, "JasperRidge/JasperRidge_gt.mat")
	salinasGT := impDataFile(t, "SalinasA/SalinasA_gt.mat")
	dir := t.TempDir()
	// A v7.3 header with no HDF5 behind it: GDAL cannot open it either.
	fake := filepath.Join(dir, "fake73.mat")
	hdr := make([]byte, 600)
	copy(hdr, "MATLAB 7.3 MAT-file")
	copy(hdr[124:], "\x00\x02IM")
	if err := os.WriteFile(fake, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	out, lout := filepath.Join(dir, "o.tif"), filepath.Join(dir, "l.tif")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"nothing", []string{}, "give --cube, --labels or both"},
		{"no out", []string{"--cube", salinas}, "--cube needs --out"},
		{"missing file", []string{"--cube", filepath.Join(dir, "absent.mat"), "--out", out}, "no such file"},
		{"wrong var", []string{"--cube", salinas + ":nope", "--out", out}, `no such variable "nope"`},
		{"mismatched sizes", []string{"--cube", salinas, "--labels", jasperGT, "--out", out, "--labels-out", lout}, "must match"},
		{"labels are a cube", []string{"--labels", salinas, "--labels-out", lout}, "want a 2-D label map"},
		{"v7.3 unreadable", []string{"--cube", fake + ":cube", "--out", out}, "v7.3 (HDF5)"},
		{"epsg alone", []string{"--labels", salinasGT, "--labels-out", lout, "--epsg", "32610"}, "go together"},
		{"bad origin", []string{"--labels", salinasGT, "--labels-out", lout, "--origin", "1;2", "--pixel-size", "1"}, "--origin"},
		{"bad pixel size", []string{"--labels", salinasGT, "--labels-out", lout, "--origin", "1,2", "--pixel-size", "-3"}, "--pixel-size"},
		{"same outputs", []string{"--cube", salinas, "--labels", salinasGT, "--out", out, "--labels-out", out}, "same file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), append([]string{"pnec", "import", "mat"}, tc.args...))
			if err == nil {
				t.Fatal("got no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("got a multi-line error %q", err)
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() != "fake73.mat" {
					t.Errorf("left %s in the output folder", e.Name())
				}
			}
		})
	}
}
