package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"
	"github.com/pnec/pnec/geo"
)

// infoRun runs pnec with args and returns what it printed on stdout.
func infoRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	runErr := run(context.Background(), append([]string{"pnec"}, args...))
	w.Close()
	os.Stdout = old
	return string(<-done), runErr
}

// infoScene writes a 12x8x3 Int16 UTM scene with nodata -1 at 6 pixels and wavelengths.
func infoScene(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scene.tif")
	nd := -1.0
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{
		Cols: 12, Rows: 8, Bands: 3, DataType: geo.Int16,
		GeoRef:        geo.GeoRef{GeoTransform: [6]float64{570000, 10, 0, 4830000, 0, -10}, EPSG: 32631},
		NoData:        &nd,
		WavelengthsNM: []float64{450, 550, 650},
		BandNames:     []string{"blue", "green", "red"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data := make([]float32, 12*8*3)
	for i := range data {
		data[i] = float32(i % 97)
	}
	for p := 0; p < 6; p++ { // pixels 0..5 of row 0 invalid through band 1
		data[p*3+1] = -1
	}
	if err := w.WriteWindow(geo.Window{Cols: 12, Rows: 8}, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInfoText(t *testing.T) {
	path := infoScene(t)
	out, err := infoRun(t, "info", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"size:           12 cols x 8 rows, 3 bands",
		"data type:      Int16",
		"nodata:         -1 (all bands)",
		"CRS:            EPSG:32631 (WGS 84 / UTM zone 31N)",
		"geotransform:   [570000, 10, 0, 4830000, 0, -10]",
		`footprint:      {"type":"Polygon","coordinates":[[[3.867576,43.619693]`,
		"valid pixels:   93.75% (90 of 96)",
		"wavelengths:    3 of 3 bands, 450-650 nm: 450, 550, 650",
		`band names:     "blue", "green", "red"`,
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestInfoJSON(t *testing.T) {
	path := infoScene(t)
	out, err := infoRun(t, "--config", "GDAL_CACHEMAX=64", "info", "--json", path)
	if err != nil {
		t.Fatal(err)
	}
	var got geo.Report
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if got.Cols != 12 || got.Rows != 8 || got.Bands != 3 || got.DataType != "Int16" {
		t.Errorf("size/type: got %dx%dx%d %s", got.Cols, got.Rows, got.Bands, got.DataType)
	}
	if got.CRS == nil || got.CRS.EPSG != 32631 || !strings.Contains(got.CRS.WKT, "UTM zone 31N") {
		t.Errorf("crs: got %+v", got.CRS)
	}
	if got.GeoTransform == nil || *got.GeoTransform != [6]float64{570000, 10, 0, 4830000, 0, -10} {
		t.Errorf("geotransform: got %v", got.GeoTransform)
	}
	if got.Footprint == nil || got.Footprint.Type != "Polygon" {
		t.Fatalf("footprint: got %+v", got.Footprint)
	}
	// 120 m x 80 m near 3.867 E, 43.62 N; the ring is closed.
	fp, ok := got.Footprint.Coordinates.(orb.Polygon)
	if !ok {
		t.Fatalf("footprint: got %T, want a polygon", got.Footprint.Coordinates)
	}
	ring := fp[0]
	if ring[0] != ring[len(ring)-1] {
		t.Error("footprint ring is not closed")
	}
	b := fp.Bound()
	if math.Abs(b.Min[0]-3.8676) > 1e-3 || math.Abs(b.Max[1]-43.6197) > 1e-3 || b.Max[0]-b.Min[0] > 0.002 {
		t.Errorf("footprint bound (x=lon): got %v", b)
	}
	if got.ValidFraction == nil || math.Abs(*got.ValidFraction-90.0/96) > 1e-12 {
		t.Errorf("valid fraction: got %v, want %v", got.ValidFraction, 90.0/96)
	}
	if len(got.NoData) != 3 || got.NoData[2] == nil || *got.NoData[2] != -1 {
		t.Errorf("nodata: got %v", got.NoData)
	}
	if len(got.WavelengthsNM) != 3 || *got.WavelengthsNM[1] != 550 {
		t.Errorf("wavelengths: got %v", got.WavelengthsNM)
	}
}

func TestInfoErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.tif")
	if _, err := infoRun(t, "info", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing scene: got %v, want an error naming %s", err, missing)
	}
	if _, err := infoRun(t, "info"); err == nil || !strings.Contains(err.Error(), "SCENE") {
		t.Errorf("no argument: got %v", err)
	}
	if _, err := infoRun(t, "--config", "NOEQUALS", "info", infoScene(t)); err == nil || !strings.Contains(err.Error(), "NOEQUALS") {
		t.Errorf("bad --config: got %v", err)
	}
	// A local grid (no CRS, no geotransform) is described as such.
	local := filepath.Join(dir, "local.tif")
	w, err := geo.CreateGeoTIFF(local, geo.RasterSpec{Cols: 2, Rows: 2, Bands: 1, DataType: geo.Byte})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteWindow(geo.Window{Cols: 2, Rows: 2}, []float32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	out, err := infoRun(t, "info", "--skip-valid", local)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CRS:            none (local pixel grid)", "footprint:      none (no CRS)", "nodata:         none"} {
		if !strings.Contains(out, want) {
			t.Errorf("local grid output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "valid pixels:   not measured (the scene was not read)") {
		t.Errorf("--skip-valid does not say the valid pixels were not measured:\n%s", out)
	}
}

// TestInfoReadsIntegerScenes: a scene of integer bands without nodata has
// only valid pixels by type, and info once said "100%" without reading it,
// also when GDAL could not read it (a truncated file, a VRT whose source is
// gone). It reads now: those fail naming the scene, a good one says 100%.
func TestInfoReadsIntegerScenes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "int16.tif")
	w, err := geo.CreateGeoTIFF(good, geo.RasterSpec{Cols: 256, Rows: 256, Bands: 4, DataType: geo.Int16})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, 256*256*4)
	for i := range data {
		data[i] = float32(i % 1000)
	}
	if err := w.WriteWindow(geo.Window{Cols: 256, Rows: 256}, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	out, err := infoRun(t, "info", good)
	if err != nil || !strings.Contains(out, "valid pixels:   100.00%") {
		t.Fatalf("good Int16 scene: %v\n%s", err, out)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.tif")
	if err := os.WriteFile(truncated, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	vrt := filepath.Join(dir, "gone.vrt")
	if err := os.WriteFile(vrt, []byte(`<VRTDataset rasterXSize="256" rasterYSize="256">
  <VRTRasterBand dataType="Int16" band="1">
    <SimpleSource><SourceFilename relativeToVRT="1">gone.tif</SourceFilename><SourceBand>1</SourceBand></SimpleSource>
  </VRTRasterBand>
</VRTDataset>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{truncated, vrt} {
		out, err := infoRun(t, "info", p)
		if err == nil || !strings.Contains(err.Error(), filepath.Base(p)) {
			t.Errorf("info %s: %v, want an error naming it\n%s", p, err, out)
		}
		if strings.Contains(out, "100.00%") {
			t.Errorf("info %s reports 100%% valid:\n%s", p, out)
		}
	}
}

// TestInfoShowsScaleOffset: bands with a scale and offset (applied on
// every read) show them in the text and the JSON.
func TestInfoShowsScaleOffset(t *testing.T) {
	if _, err := exec.LookPath("gdal_translate"); err != nil {
		t.Skip("gdal_translate not on PATH (install gdal-bin)")
	}
	scaled := filepath.Join(t.TempDir(), "scaled.tif")
	if b, err := exec.Command("gdal_translate", "-q", "-a_scale", "0.0001", "-a_offset", "-0.1", infoScene(t), scaled).CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate: %v %s", err, b)
	}
	out, err := infoRun(t, "info", scaled)
	if err != nil || !strings.Contains(out, "scale/offset:   x0.0001 +-0.1 in every band") {
		t.Errorf("text: %v, want the scale and offset:\n%s", err, out)
	}
	js, err := infoRun(t, "info", "--json", "--skip-valid", scaled)
	if err != nil {
		t.Fatal(err)
	}
	var rep geo.Report
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Scale) != 3 || rep.Scale[2] != 0.0001 || rep.Offset[0] != -0.1 {
		t.Errorf("JSON scale %v offset %v, want 0.0001 and -0.1 for 3 bands", rep.Scale, rep.Offset)
	}
	plain, err := infoRun(t, "info", "--skip-valid", infoScene(t))
	if err != nil || strings.Contains(plain, "scale/offset") {
		t.Errorf("a scene without scale/offset shows one: %v\n%s", err, plain)
	}
}

// TestInfoSceneFlag: --scene gives the scene as every command does, the
// argument alone stays the short spelling with the same output, and a
// scene given both ways (or none) is one clear error.
func TestInfoSceneFlag(t *testing.T) {
	path := infoScene(t)
	byFlag, err := infoRun(t, "info", "--scene", path)
	if err != nil {
		t.Fatal(err)
	}
	byArg, err := infoRun(t, "info", path)
	if err != nil {
		t.Fatal(err)
	}
	if byFlag != byArg {
		t.Errorf("--scene and the argument differ:\n%s\n---\n%s", byFlag, byArg)
	}
	for _, args := range [][]string{{"info", "--scene", path, path}, {"info"}} {
		if _, err := infoRun(t, args...); err == nil || !strings.Contains(err.Error(), "scene") {
			t.Errorf("pnec %s: %v, want an error about the scene", strings.Join(args, " "), err)
		}
	}
}
