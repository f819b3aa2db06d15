package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
