package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/model/backend"
)

func classifyFixture(t *testing.T) (modelPath, scene, dir string) {
	t.Helper()
	modelPath = fixture.Model(t)
	dir = t.TempDir()
	scene = filepath.Join(dir, "scene.tif")
	fixture.Scene(t, scene, 3)
	return modelPath, scene, dir
}

func gdalinfoMap(t *testing.T, path string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("gdalinfo"); err != nil {
		t.Skip("gdalinfo not on PATH (install gdal-bin)")
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

func TestClassifyCommand(t *testing.T) {
	modelPath, scene, dir := classifyFixture(t)
	tests := []struct {
		name     string
		args     []string
		out      string
		wantOut  []string // substrings of stdout
		wantType string   // reliability band type
	}{
		{"flags whole image", []string{"--scene", scene, "--out", filepath.Join(dir, "a.tif")}, "a.tif",
			[]string{"whole image", "valid pixels 1280 of 1280"}, "Byte"},
		{"positional tiled float32", []string{"--tile", "16", "--overlap", "4", "--reliability", "float32", "--co", "BLOCKSIZE=256", scene, filepath.Join(dir, "b.tif")}, "b.tif",
			[]string{"tiles (", "stitch+recovery"}, "Byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"classify", "--model", modelPath, "--backend", "go"}, tt.args...)
			stdout, stderr, err := runCaptured(t, args...)
			if err != nil {
				t.Fatalf("classify: %v\n%s", err, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			// Not a terminal: plain progress lines.
			if !strings.Contains(stderr, "tile 1/") {
				t.Errorf("stderr lacks plain progress lines:\n%s", stderr)
			}
			info := gdalinfoMap(t, filepath.Join(dir, tt.out))
			size, _ := json.Marshal(info["size"])
			if string(size) != "[40,32]" {
				t.Errorf("size %s, want [40,32]", size)
			}
			bands, _ := info["bands"].([]any)
			if len(bands) != 2 {
				t.Fatalf("%d bands, want 2", len(bands))
			}
			if b2, _ := bands[1].(map[string]any); b2["type"] != tt.wantType {
				t.Errorf("reliability type %v, want %s", b2["type"], tt.wantType)
			}
			// --reliability float32 keeps the product and adds a Float32 file.
			_, err = os.Stat(geo.ReliabilityPath(filepath.Join(dir, tt.out)))
			if f32 := slices.Contains(tt.args, "float32"); f32 != (err == nil) {
				t.Errorf("float32 reliability file: exists %v, want %v", err == nil, f32)
			}
			md, _ := info["metadata"].(map[string]any)
			isl, _ := md["IMAGE_STRUCTURE"].(map[string]any)
			if isl["LAYOUT"] != "COG" {
				t.Errorf("IMAGE_STRUCTURE LAYOUT %v, want COG", isl["LAYOUT"])
			}
		})
	}
}

func TestClassifyCommandErrors(t *testing.T) {
	modelPath, scene, dir := classifyFixture(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no output", []string{"--scene", scene}, "need a scene and an output"},
		{"three args", []string{scene, "a.tif", "b.tif"}, "unexpected arguments"},
		{"bad reliability", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--reliability", "int8"}, "--reliability int8"},
		{"bad memory", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--max-memory", "lots"}, "--max-memory lots"},
		{"overlap without tile", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--overlap", "8"}, "--overlap needs --tile"},
		{"overlap too wide", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--tile", "16", "--overlap", "16"}, "overlap 16 px"},
		{"bad co", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--co", "ZSTD"}, "--co zstd"},
		{"missing scene", []string{"--scene", filepath.Join(dir, "nope.tif"), "--out", filepath.Join(dir, "x.tif")}, "nope.tif"},
		{"tile without context", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--tile", "3"}, "--tile 3: tile too small"},
		{"tile smaller than overlap plus window", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--tile", "16", "--overlap", "12"}, "recovery window"},
		{"huge tile", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--tile", "9223372036854775807"}, "--tile 9223372036854775807: want a tile side of 1..2147483647 pixels"},
		{"huge overlap", []string{"--scene", scene, "--out", filepath.Join(dir, "x.tif"), "--tile", "64", "--overlap", "9223372036854775807"}, "--overlap 9223372036854775807: want 0..2147483647 pixels"},
		{"out is a directory", []string{"--scene", scene, "--out", dir}, "is a directory"},
		{"out in a missing directory", []string{"--scene", scene, "--out", filepath.Join(dir, "no", "x.tif")}, "does not exist"},
		// The library refuses these; the command words them by flag.
		{"out named by its flag", []string{"--scene", scene, "--out", filepath.Join(dir, "no", "x.tif")}, "--out " + filepath.Join(dir, "no", "x.tif") + ": unusable output path"},
		{"out is the model", []string{"--scene", scene, "--out", modelPath}, "--out " + modelPath + " is --model " + modelPath},
		{"out is the scene", []string{"--scene", scene, "--out", scene}, "--out " + scene + " is --scene " + scene},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCaptured(t, append([]string{"classify", "--quiet", "--model", modelPath, "--backend", "go"}, tt.args...)...)
			if err == nil {
				t.Fatal("got nil error")
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tt.want)) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "x.tif")); !os.IsNotExist(err) {
				t.Errorf("x.tif exists after a failure")
			}
		})
	}
}

func TestTilesCommand(t *testing.T) {
	modelPath, scene, _ := classifyFixture(t)
	stdout, _, err := runCaptured(t, "tiles", "--scene", scene, "--model", modelPath, "--tile", "16", "--overlap", "4")
	if err != nil {
		t.Fatal(err)
	}
	// 32 rows: origins 0, 12, 16 (last shifted back); 40 cols: 0, 12, 24.
	if !strings.Contains(stdout, "9 tiles (3 down x 3 across) of 16x16, overlap 4 px") {
		t.Errorf("plan line missing:\n%s", stdout)
	}
	if n := strings.Count(stdout, "\ntile "); n != 9 {
		t.Errorf("%d tile lines, want 9:\n%s", n, stdout)
	}
	stdout, _, err = runCaptured(t, "tiles", "--scene", scene, "--tile", "16", "--overlap", "4", "--geojson")
	if err != nil {
		t.Fatal(err)
	}
	var fc struct {
		Type     string
		CRS      struct{ Properties struct{ Name string } }
		Features []struct {
			Geometry struct {
				Type        string
				Coordinates [][][2]float64
			}
			Properties struct{ Read [4]int }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &fc); err != nil {
		t.Fatalf("--geojson output: %v\n%s", err, stdout)
	}
	if fc.Type != "FeatureCollection" || len(fc.Features) != 9 {
		t.Fatalf("got %s with %d features, want a FeatureCollection of 9", fc.Type, len(fc.Features))
	}
	if fc.CRS.Properties.Name != "urn:ogc:def:crs:EPSG::32631" {
		t.Errorf("crs %q, want EPSG 32631", fc.CRS.Properties.Name)
	}
	// Footprints are in the scene's CRS: 10 m pixels from (500000, 4800000).
	gt := fixture.GeoRef.GeoTransform
	for i, f := range fc.Features {
		rd := f.Properties.Read
		ring := f.Geometry.Coordinates[0]
		want := [2]float64{gt[0] + float64(rd[0])*gt[1], gt[3] + float64(rd[1])*gt[5]}
		if f.Geometry.Type != "Polygon" || len(ring) != 5 || ring[0] != want {
			t.Errorf("feature %d: %s ring %v, want 5 points from %v", i, f.Geometry.Type, ring, want)
		}
	}
}

// TestClassifyRemovesStaleTemporaries leaves in the output directory what a
// classify killed with SIGKILL leaves (staging files of the product and its
// Float32 reliability, a style temporary, its lock file) and checks that
// the next classify of the same output removes them, leaves another
// product's alone, and that while another process holds the output's lock
// a classify refuses and removes nothing.
func TestClassifyRemovesStaleTemporaries(t *testing.T) {
	modelPath, scene, dir := classifyFixture(t)
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := []string{".map.tif.pnec-123.stage.tif", ".map.tif.pnec-123.stage.tif.aux.xml", ".map.tif.pnec-456.tmp.tif",
		".map.reliability.tif.pnec-789.stage.tif", ".map.qml.pnec-tmp-0a1b2c3d", ".map.pnec-lock"}
	// Another product's, and names without pnec's marker (another tool's).
	others := []string{".other.tif.pnec-1.stage.tif", ".map.v2.tif.pnec-1.stage.tif", ".map.tif.1.stage.tif"}
	for _, n := range append(append([]string(nil), stale...), others...) {
		data := []byte("x")
		if strings.HasSuffix(n, ".pnec-lock") {
			data = nil // pnec's lock files are empty
		}
		if err := os.WriteFile(filepath.Join(out, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	product := filepath.Join(out, "map.tif")
	args := []string{"classify", "--model", modelPath, "--backend", "go", "--scene", scene, "--out", product}

	held, err := tempfiles.TryLock(out, "map")
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCaptured(t, args...)
	if err == nil || !strings.Contains(err.Error(), "another process is writing it") {
		t.Errorf("classify while the output's lock is held: %v, want 'another process is writing it'\n%s", err, stderr)
	}
	for _, n := range stale[:len(stale)-1] {
		if _, err := os.Stat(filepath.Join(out, n)); err != nil {
			t.Errorf("%s removed while another process held the lock: %v", n, err)
		}
	}
	held.Release()
	if err := os.WriteFile(filepath.Join(out, ".map.pnec-lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	_, stderr, err = runCaptured(t, args...)
	if err != nil {
		t.Fatalf("classify: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "removed 5 stale temporary file(s)") {
		t.Errorf("stderr does not report the 5 stale temporaries:\n%s", stderr)
	}
	ents, _ := os.ReadDir(out)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	want := append([]string{"map.qml", "map.thumbnail.png", "map.tif", "map.tif.aux.xml"}, others...)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("output directory holds %v, want %v", got, want)
	}
}

// TestNoPluginMessage: an XLA backend without a PJRT plugin fails with
// pnec's one line, not GoMLX's hint for Go developers (import its
// autoinstall package).
func TestNoPluginMessage(t *testing.T) {
	modelPath, scene, dir := classifyFixture(t)
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", t.TempDir())
	_, stderr, err := runCaptured(t, "classify", "--model", modelPath, "--backend", "xla:cpu", "--scene", scene, "--out", filepath.Join(dir, "x.tif"))
	if err == nil {
		t.Skip("an XLA CPU plugin was found here")
	}
	if !errors.Is(err, backend.ErrNoPlugin) || strings.Contains(err.Error(), "autoinstall") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %q, want backend.ErrNoPlugin's one line\n%s", err, stderr)
	}
}
