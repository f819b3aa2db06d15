package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/spectral"
)

func TestParseRadiometry(t *testing.T) {
	tests := []struct {
		in   string
		want spectral.Radiometry
		err  bool
	}{
		{"reflectance:10000", spectral.Radiometry{Quantity: "reflectance", Scale: 10000}, false},
		{"Reflectance:1", spectral.Radiometry{Quantity: "reflectance", Scale: 1}, false},
		{"reflectance", spectral.Radiometry{Quantity: "reflectance"}, false},
		{"radiance:uW cm-2 sr-1 nm-1", spectral.Radiometry{Quantity: "radiance", Units: "uW cm-2 sr-1 nm-1"}, false},
		{"reflectance:-1", spectral.Radiometry{}, true},
		{"reflectance:0", spectral.Radiometry{}, true},
		// Once accepted, and 1e-300 made every pixel one class.
		{"reflectance:1e-300", spectral.Radiometry{}, true},
		{"reflectance:inf", spectral.Radiometry{}, true},
		{"reflectance:+Inf", spectral.Radiometry{}, true},
		{"reflectance:NaN", spectral.Radiometry{}, true},
		{"reflectance:1e300", spectral.Radiometry{}, true},
		{"reflectance:1e-6", spectral.Radiometry{Quantity: "reflectance", Scale: 1e-6}, false},
		{"reflectance:65535", spectral.Radiometry{Quantity: "reflectance", Scale: 65535}, false},
		{"reflectance:x", spectral.Radiometry{}, true},
		{"brightness", spectral.Radiometry{}, true},
	}
	for _, tt := range tests {
		got, err := parseRadiometry(tt.in)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("parseRadiometry(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestRadiometryScaleRefused: classify, batch and train refuse a
// --radiometry scale that is not finite or so far from any real one that
// the conversion overflows, before any work, with one line and nothing
// written (reflectance:1e-300 gave every pixel one class and no
// reliability, exit 0; reflectance:inf was accepted).
func TestRadiometryScaleRefused(t *testing.T) {
	modelPath, err := fixture.SpectralModelPath() // reflectance 0-10000
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scene := goodScene(t, dir) // says nothing of its radiometry
	labels := filepath.Join(dir, "labels.tif")
	_, lab := fixture.SceneData(9)
	lf := make([]float32, len(lab))
	for i, v := range lab {
		lf[i] = float32(v)
	}
	writeTyped(t, labels, fixture.Rows, fixture.Cols, 1, geo.Byte, nil, lf)
	for _, v := range []string{"reflectance:1e-300", "reflectance:inf", "reflectance:NaN", "reflectance:1e300"} {
		for _, name := range []string{"classify", "batch", "train"} {
			out := t.TempDir()
			args := map[string][]string{
				"classify": {"classify", "--quiet", "--radiometry", v, "--model", modelPath, "--scene", scene, "--out", filepath.Join(out, "p.tif")},
				"batch": {"batch", "--quiet", "--radiometry", v, "--model", modelPath, "--out-dir", out, "--report", filepath.Join(out, "r.jsonl"),
					"--datetime", "2024-06-01", scene},
				"train": {"train", "--quiet", "--radiometry", v, "--scene", scene, "--labels", labels, "--out", filepath.Join(out, "m.pnec"), "--epochs", "1"},
			}[name]
			r := runPnec(t, time.Minute, args...)
			line := strings.TrimSpace(r.stderr)
			if r.code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, "--radiometry "+v) || !strings.Contains(line, "want a finite number") {
				t.Errorf("%s --radiometry %s: exit %d, %q; want exit 1 and one line naming the flag", name, v, r.code, line)
			}
			if ents, _ := os.ReadDir(out); len(ents) > 0 {
				t.Errorf("%s --radiometry %s: wrote %v", name, v, ents)
			}
		}
	}
}

// TestBandSetCommands: classify, tiles and evaluate refuse a scene whose
// bands are not the model's in one line naming both ranges and the flag
// that resamples; with --resample-bands classify makes the product and
// says how; a scene without wavelengths gets a warning.
func TestBandSetCommands(t *testing.T) {
	bin := pnecBinary(t)
	_ = bin
	modelPath, err := fixture.SpectralModelPath()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var fine, fineW []float64
	for c := 483.0; c <= 883; c += 10 {
		fine, fineW = append(fine, c), append(fineW, 12)
	}
	shifted := filepath.Join(dir, "shifted.tif")
	if err := fixture.WriteSpectralScene(shifted, 3, fine, fineW, 0); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(dir, "bare.tif")
	if err := fixture.WriteSpectralScene(bare, 3, nil, nil, 8); err != nil {
		t.Fatal(err)
	}
	labels := filepath.Join(dir, "labels.tif")
	_, lab := fixture.SceneData(1)
	labData := make([]float32, len(lab))
	for i, v := range lab {
		labData[i] = float32(v)
	}
	if err := fixture.WriteRaster(labels, fixture.Rows, fixture.Cols, 1, labData); err != nil {
		t.Fatal(err)
	}
	refusals := map[string][]string{
		"classify": {"classify", "--model", modelPath, "--backend", "go", "-q", shifted, filepath.Join(dir, "refused.tif")},
		"tiles":    {"tiles", "--model", modelPath, "--scene", shifted},
		"evaluate": {"evaluate", "--model", modelPath, "--backend", "go", "--scene", shifted, "--labels", labels},
	}
	for name, args := range refusals {
		t.Run(name+" refuses", func(t *testing.T) {
			r := runPnec(t, 2*time.Minute, args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 1 || len(lines) != 1 {
				t.Fatalf("exit %d, stderr %q; want exit 1 and one line", r.code, r.stderr)
			}
			for _, s := range []string{shifted, "scene 41 bands, 483-883 nm", "model 8 bands, 500-850 nm", "largest centre difference 3.00 nm", "--resample-bands"} {
				if !strings.Contains(lines[0], s) {
					t.Errorf("error %q lacks %q", lines[0], s)
				}
			}
		})
	}
	t.Run("classify resamples", func(t *testing.T) {
		r := runPnec(t, 2*time.Minute, "classify", "--model", modelPath, "--backend", "go", "--resample-bands", shifted, filepath.Join(dir, "resampled.tif"))
		if r.code != 0 || !strings.Contains(r.stdout, "model bands: 8 bands resampled from") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want the product and the resampling said", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("evaluate resamples", func(t *testing.T) {
		r := runPnec(t, 2*time.Minute, "evaluate", "--model", modelPath, "--backend", "go", "--resample-bands", "--scene", shifted, "--labels", labels)
		if r.code != 0 || !strings.Contains(r.stdout, "OA") {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("classify warns without wavelengths", func(t *testing.T) {
		r := runPnec(t, 2*time.Minute, "classify", "--model", modelPath, "--backend", "go", "-q", bare, filepath.Join(dir, "bare-product.tif"))
		want := "pnec: warning: " + bare + ": the scene declares no band wavelengths: its 8 bands are taken as the model's, in order, unchecked"
		if r.code != 0 || strings.TrimSpace(r.stderr) != want {
			t.Fatalf("exit %d, stderr %q; want 0 and %q", r.code, r.stderr, want)
		}
	})
}

func TestParseQualityMask(t *testing.T) {
	tests := []struct {
		in    string
		path  string
		bands []int
		err   bool
	}{
		{"clouds.tif", "clouds.tif", nil, false},
		{"clouds.tif:2", "clouds.tif", []int{1}, false},
		{"mask.nc:1,2,5", "mask.nc", []int{0, 1, 4}, false},
		{`NETCDF:"f.nc":mask`, `NETCDF:"f.nc":mask`, nil, false},
		{`NETCDF:"f.nc":mask:3`, `NETCDF:"f.nc":mask`, []int{2}, false},
		{"m.tif:0", "", nil, true},
	}
	for _, tt := range tests {
		m, err := parseQualityMask(tt.in)
		if (err != nil) != tt.err || (!tt.err && (m.Path != tt.path || !slices.Equal(m.Bands, tt.bands))) {
			t.Errorf("parseQualityMask(%q) = %+v, %v; want %q %v (error %v)", tt.in, m, err, tt.path, tt.bands, tt.err)
		}
	}
}
