package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/sensors"
	"github.com/pnec/pnec/spectral"
)

// sensorCase is one sensor's product fixture for the end-to-end test.
type sensorCase struct {
	name    string
	product string
	// write writes a delivery: seed varies the noise, shift moves the grid east.
	write func(dir string, seed uint64, shift int, masked bool) (fixture.Delivery, error)
	masks bool // the product delivers quality masks
	// noTime: the fixture carries no acquisition time pnec reads, so batch
	// is given --datetime (EnMAP, EMIT and PRISMA deliveries carry theirs).
	noTime bool
}

var sensorCases = []sensorCase{
	{name: "EnMAP", product: sensors.ProductEnMAPL2A, masks: true,
		write: func(dir string, seed uint64, shift int, masked bool) (fixture.Delivery, error) {
			return fixture.WriteEnMAP(dir, fixture.EnMAPOptions{Seed: seed, ShiftCols: shift, Zip: seed%2 == 0, Cloud: masked, Defects: masked})
		}},
	{name: "DESIS", product: sensors.ProductDESISL2A, noTime: true,
		write: func(dir string, seed uint64, shift int, _ bool) (fixture.Delivery, error) {
			return fixture.WriteDESIS(dir, fixture.DESISOptions{Seed: seed, ShiftCols: shift})
		}},
	{name: "EMIT", product: sensors.ProductEMITL2A, masks: true,
		write: func(dir string, seed uint64, shift int, masked bool) (fixture.Delivery, error) {
			return fixture.WriteEMIT(dir, fixture.EMITOptions{Seed: seed, ShiftCols: shift, Mask: masked})
		}},
	{name: "PRISMA", product: sensors.ProductPRISMAL2D,
		write: func(dir string, seed uint64, shift int, _ bool) (fixture.Delivery, error) {
			return fixture.WritePRISMA(dir, fixture.PRISMAOptions{Seed: seed, ShiftCols: shift})
		}},
	{name: "Tanager", product: sensors.ProductTanagerSR, masks: true,
		write: func(dir string, seed uint64, shift int, masked bool) (fixture.Delivery, error) {
			return fixture.WriteTanager(dir, fixture.TanagerOptions{Seed: seed, ShiftCols: shift, Cloud: masked})
		}},
	{name: "AVIRIS-3 NetCDF", product: sensors.ProductAVIRIS3, noTime: true,
		write: func(dir string, seed uint64, shift int, _ bool) (fixture.Delivery, error) {
			return fixture.WriteAVIRIS3NC(dir, fixture.AVIRIS3Options{Seed: seed, ShiftCols: shift})
		}},
	{name: "AVIRIS-NG", product: sensors.ProductAVIRISNG, noTime: true,
		write: func(dir string, seed uint64, shift int, _ bool) (fixture.Delivery, error) {
			return fixture.WriteAVIRISNG(dir, fixture.AVIRISOptions{Seed: seed, ShiftCols: shift, RotateDeg: 30})
		}},
}

// classAgreement is the share of a product's classified pixels whose class
// is the delivery's (its own layout: another delivery's differs, so a
// flipped or transposed map shows), and the number of classified pixels.
func classAgreement(t *testing.T, product string, d fixture.Delivery) (float64, int) {
	t.Helper()
	s, err := geo.Open(product)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetBandPlan(&spectral.Plan{Read: []int{0}, Out: 1}); err != nil {
		t.Fatal(err)
	}
	blk, err := s.ReadWindow(context.Background(), geo.Window{Cols: fixture.Cols, Rows: fixture.Rows})
	if err != nil {
		t.Fatal(err)
	}
	same, n := 0, 0
	for i, v := range blk.Data {
		if blk.Valid[i] {
			n++
			if int32(v) == d.Classes[i] {
				same++
			}
		}
	}
	return float64(same) / float64(max(n, 1)), n
}

// TestSensorDeliveries: each sensor's product, as delivered, is described
// by pnec info, trains a model, and that model classifies another delivery
// of the sensor (other ground, other noise) into a product on that
// delivery's grid, by classify and by batch; product masks become no-data.
func TestSensorDeliveries(t *testing.T) {
	pnecBinary(t)
	for _, sc := range sensorCases {
		t.Run(sc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, err := sc.write(filepath.Join(dir, "a"), 1, 0, false)
			if errors.Is(err, fixture.ErrNoPython) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := sc.write(filepath.Join(dir, "b"), 2, 40, sc.masks)
			if err != nil {
				t.Fatal(err)
			}
			limit := 3 * time.Minute
			r := runPnec(t, limit, "info", "--json", a.Path)
			var rep geo.Report
			if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil {
				t.Fatalf("info: exit %d (%v), stderr %s", r.code, err, r.stderr)
			}
			if rep.Product != sc.product || rep.Bands != len(a.CentresNM) || rep.Radiometry == nil || rep.Radiometry.Quantity != "reflectance" {
				t.Errorf("info: product %q, %d bands, radiometry %+v; want %q, %d bands, reflectance", rep.Product, rep.Bands, rep.Radiometry, sc.product, len(a.CentresNM))
			}
			all := fixture.Rows*fixture.Cols - a.NoData
			if rep.ValidFraction == nil || *rep.ValidFraction != float64(all)/float64(fixture.Rows*fixture.Cols) {
				t.Errorf("info: valid fraction %v, want %d of %d pixels (bad bands make no pixel invalid)", rep.ValidFraction, all, fixture.Rows*fixture.Cols)
			}
			modelPath := filepath.Join(dir, "m.pnec")
			r = runPnec(t, limit, "train", "--scene", a.Path, "--labels", a.Labels, "--out", modelPath, "--epochs", "60",
				"--hidden", "32", "--lr", "0.003", "--warmup", "2", "--window", "3", "--train-per-class", "20", "--backend", "go")
			if r.code != 0 || !strings.Contains(r.stdout, "values: reflectance 0-1") {
				t.Fatalf("train: exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
			}
			out := filepath.Join(dir, "b.tif")
			r = runPnec(t, limit, "classify", "--model", modelPath, "--backend", "go", "-q", b.Path, out)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("classify: exit %d, stderr %s", r.code, r.stderr)
			}
			info := gdalinfoMap(t, out)
			gt, _ := info["geoTransform"].([]any)
			if len(gt) != 6 {
				t.Fatalf("product geotransform %v", info["geoTransform"])
			}
			for i, v := range gt {
				if math.Abs(v.(float64)-b.GeoRef.GeoTransform[i]) > 1e-6 {
					t.Fatalf("product geotransform %v, want the delivery's %v", gt, b.GeoRef.GeoTransform)
				}
			}
			if wkt, _ := info["coordinateSystem"].(map[string]any)["wkt"].(string); !strings.Contains(wkt, `ID["EPSG",`+itoa(b.GeoRef.EPSG)+`]`) {
				t.Errorf("product CRS is not EPSG:%d:\n%s", b.GeoRef.EPSG, wkt)
			}
			all = fixture.Rows*fixture.Cols - b.NoData
			if agree, n := classAgreement(t, out, b); agree < 0.9 || n != all {
				t.Errorf("classify: %.1f%% of %d classified pixels have the fixture's class, want at least 90%% of %d", 100*agree, n, all)
			}
			if sc.masks {
				masked := filepath.Join(dir, "b-masked.tif")
				r = runPnec(t, limit, "classify", "--model", modelPath, "--backend", "go", "--quality-mask", "product", b.Path, masked)
				if r.code != 0 || !strings.Contains(r.stdout, "quality masks: ") {
					t.Fatalf("classify --quality-mask product: exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
				}
				if _, n := classAgreement(t, masked, b); n != all-b.Masked {
					t.Errorf("classify --quality-mask product: %d classified pixels, want %d (%d masked)", n, all-b.Masked, b.Masked)
				}
			}
			outDir := filepath.Join(dir, "batch")
			args := []string{"batch", "--model", modelPath, "--backend", "go", "--out-dir", outDir, "-q"}
			if sc.noTime {
				args = append(args, "--datetime", "2024-08-01T08:30:00Z")
			}
			r = runPnec(t, limit, append(args, b.Path)...)
			if r.code != 0 || !strings.Contains(r.stdout, `"status":"done"`) {
				t.Fatalf("batch: exit %d, report %s, stderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestOneModelSeveralSensors: pnec train --bands-common-with AVIRIS-NG on
// an EnMAP delivery says which bands it chose; pnec classify then takes an
// AVIRIS-NG delivery of other ground without --resample-bands (the model
// resamples it) into a product that agrees with its labels, while a model
// of every EnMAP band refuses it. Bad --bands and --bands-common-with
// values are one line each, before any training.
func TestOneModelSeveralSensors(t *testing.T) {
	pnecBinary(t)
	dir := t.TempDir()
	a, err := fixture.WriteEnMAP(filepath.Join(dir, "enmap"), fixture.EnMAPOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := fixture.WriteAVIRISNG(filepath.Join(dir, "ang"), fixture.AVIRISOptions{Seed: 2, RotateDeg: 25})
	if err != nil {
		t.Fatal(err)
	}
	limit := 3 * time.Minute
	train := func(out string, extra ...string) runResult {
		args := append([]string{"train", "--scene", a.Path, "--labels", a.Labels, "--out", out, "--epochs", "40", "--hidden", "32",
			"--lr", "0.003", "--warmup", "2", "--window", "3", "--train-per-class", "20", "--backend", "go"}, extra...)
		return runPnec(t, limit, args...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bands-common-with", "NoSuchSensor"}, "--bands-common-with NoSuchSensor: neither a scene pnec opens nor a sensor it knows (EnMAP, EMIT"},
		{[]string{"--bands", "400-300"}, `--bands 400-300: "400-300": want LO-HI in nm`},
		{[]string{"--bands", "2500-2600"}, "band selection: no good band of the scene (418-2445 nm) is left by the selection (2500-2600 nm)"},
	} {
		r := train(filepath.Join(dir, "bad.pnec"), tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("train %v: exit %d, stderr %q; want one line saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	modelPath := filepath.Join(dir, "shared.pnec")
	r := train(modelPath, "--bands-common-with", "AVIRIS-NG")
	if r.code != 0 || !strings.Contains(r.stdout, "chosen: shared with AVIRIS-NG") {
		t.Fatalf("train: exit %d, stdout %s, stderr %s", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(dir, "ang.tif")
	r = runPnec(t, limit, "classify", "--model", modelPath, "--backend", "go", "-q", b.Path, out)
	if r.code != 0 {
		t.Fatalf("classify the AVIRIS-NG delivery: exit %d, stderr %s", r.code, r.stderr)
	}
	if agree, n := classAgreement(t, out, b); agree < 0.85 || n != fixture.Rows*fixture.Cols-b.NoData {
		t.Errorf("classify: %.1f%% of %d pixels agree, want at least 85%%", 100*agree, n)
	}
	allBands := filepath.Join(dir, "all.pnec")
	if r := train(allBands, "--epochs", "2"); r.code != 0 {
		t.Fatalf("train on every band: exit %d, stderr %s", r.code, r.stderr)
	}
	r = runPnec(t, limit, "classify", "--model", allBands, "--backend", "go", "-q", "--resample-bands", b.Path, filepath.Join(dir, "refused.tif"))
	if r.code == 0 || !strings.Contains(r.stderr, "falls in the scene's gap") {
		t.Errorf("a model of every EnMAP band on AVIRIS-NG: exit %d, stderr %q; want refused (a band in AVIRIS-NG's water gap)", r.code, r.stderr)
	}
}
