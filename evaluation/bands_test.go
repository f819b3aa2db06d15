package evaluation

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/spectral"
)

// writeENVIScene writes s as a Float32 BSQ ENVI cube with the header lines
// extra; band bad (0-based, -1 for none) holds -9999 everywhere.
func writeENVIScene(t *testing.T, dir string, s tinyScene, bad int, extra string) string {
	t.Helper()
	raw := make([]byte, 0, s.rows*s.cols*s.bands*4)
	for b := range s.bands {
		for i := range s.rows * s.cols {
			v := s.data[i*s.bands+b]
			if b == bad {
				v = -9999
			}
			u := math.Float32bits(v)
			raw = append(raw, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		}
	}
	img := filepath.Join(dir, "cube.img")
	if err := os.WriteFile(img, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	hdr := "ENVI\nsamples = " + strconv.Itoa(s.cols) + "\nlines = " + strconv.Itoa(s.rows) + "\nbands = " + strconv.Itoa(s.bands) +
		"\nheader offset = 0\nfile type = ENVI Standard\ndata type = 4\ninterleave = bsq\nbyte order = 0\ndata ignore value = -9999\n" + extra
	if err := os.WriteFile(filepath.Join(dir, "cube.hdr"), []byte(hdr), 0o644); err != nil {
		t.Fatal(err)
	}
	return img
}

// writeBadBandScene writes s as an ENVI scene in dir whose header declares
// band 3 bad (and fills it with no-data), with its labels beside it.
func writeBadBandScene(t *testing.T, dir string, s tinyScene) (scene, labels string) {
	t.Helper()
	hdr := "wavelength units = Nanometers\nwavelength = {450, 500, 550, 600, 650, 700}\nfwhm = {10, 10, 10, 10, 10, 12}\n" +
		"bbl = {1, 1, 0, 1, 1, 1}\nreflectance scale factor = 10000\n"
	scene = writeENVIScene(t, dir, s, 2, hdr)
	labels = filepath.Join(dir, "labels.tif")
	writeTIFF(t, labels, s.rows, s.cols, 1, geo.Byte, s.labels, nil)
	return scene, labels
}

// TestTrainLeavesBadBandsOut: a band the header declares bad and fills
// with no-data does not make every pixel invalid; the model takes the
// other bands and records which, and a scene with the bad band (or without
// it) is evaluated on the model's bands.
func TestTrainLeavesBadBandsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model: skipped with -short")
	}
	dir := t.TempDir()
	s := newTinyScene(24, 28, 6, 5)
	scene, labels := writeBadBandScene(t, dir, s)
	res, err := Train(context.Background(), TrainRequest{Scene: scene, Labels: labels,
		Options: model.TrainOptions{Config: tinyConfig(20), TrainPerClass: 10, Backend: "go"}})
	if err != nil {
		t.Fatalf("train with a no-data bad band: %v", err)
	}
	m := res.Model
	want := model.BandRecord{FWHMNM: []float64{10, 10, 10, 10, 12}, WavelengthUnits: "Nanometers", SceneBands: 6,
		BandsUsed: []int{0, 1, 3, 4, 5}, BadBands: []int{2},
		Radiometry: spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 10000}}
	if got := m.BandRecord(); m.Bands() != 5 || !reflect.DeepEqual(got, want) {
		t.Errorf("got %d bands, record %+v; want 5 bands, %+v", m.Bands(), got, want)
	}
	if got := m.WavelengthsNM(); !reflect.DeepEqual(got, []float64{450, 500, 600, 650, 700}) {
		t.Errorf("got model centres %v", got)
	}
	ev, err := EvaluateFiles(context.Background(), m, scene, labels, EvalOptions{Backend: "go"})
	if err != nil {
		t.Fatalf("evaluate on the training scene: %v", err)
	}
	if ev.Final().OA < 0.8 || len(ev.Warnings) != 0 {
		t.Errorf("OA %.3f, warnings %q; want at least 0.8 and none", ev.Final().OA, ev.Warnings)
	}
	// The same scene as a GeoTIFF of the 5 good bands without wavelengths:
	// accepted on the model's band count, with a warning.
	good := make([]float32, 0, s.rows*s.cols*5)
	for i := range s.rows * s.cols {
		for _, b := range []int{0, 1, 3, 4, 5} {
			good = append(good, s.data[i*s.bands+b])
		}
	}
	bare := filepath.Join(dir, "bare.tif")
	writeTIFF(t, bare, s.rows, s.cols, 5, geo.Float32, good, nil)
	ev, err = EvaluateFiles(context.Background(), m, bare, labels, EvalOptions{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Warnings) != 1 || !strings.Contains(ev.Warnings[0], "no band wavelengths") {
		t.Errorf("got warnings %q, want one about the missing wavelengths", ev.Warnings)
	}
}

// TestTrainReadByWindowsSameModel: a scene trained read by windows (with
// a band plan leaving a bad band out) gives the model the scene held in
// memory gives: the same loss, stretch, decision and drift statistics.
func TestTrainReadByWindowsSameModel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models: skipped with -short")
	}
	s := newTinyScene(48, 100, 6, 7)
	scene, labels := writeBadBandScene(t, t.TempDir(), s)
	train := func(byWindows bool) *model.Model {
		res, err := Train(context.Background(), TrainRequest{Scene: scene, Labels: labels, ReadByWindows: byWindows,
			Options: model.TrainOptions{Config: tinyConfig(8), TrainPerClass: 10, Backend: "go", Tile: 32}})
		if err != nil {
			t.Fatalf("train (read by windows %v): %v", byWindows, err)
		}
		if res.ReadByWindows != byWindows {
			t.Fatalf("asked to read by windows %v, read so %v", byWindows, res.ReadByWindows)
		}
		return res.Model
	}
	held, streamed := train(false), train(true)
	lo1, hi1 := held.Stretch()
	lo2, hi2 := streamed.Stretch()
	switch {
	case held.TrainTile() != 32 || streamed.TrainTile() != 32:
		t.Errorf("trained on tiles of %d and %d px, want 32", held.TrainTile(), streamed.TrainTile())
	case held.FinalLoss() != streamed.FinalLoss():
		t.Errorf("final loss %v held, %v read by windows", held.FinalLoss(), streamed.FinalLoss())
	case !reflect.DeepEqual(lo1, lo2) || !reflect.DeepEqual(hi1, hi2):
		t.Error("stretch differs")
	case held.Decision() != streamed.Decision() || held.Recovery() != streamed.Recovery():
		t.Errorf("decision %+v / %+v, want the same", held.Decision(), streamed.Decision())
	case !reflect.DeepEqual(held.DriftStats(), streamed.DriftStats()):
		t.Error("drift statistics differ")
	case !reflect.DeepEqual(held.WavelengthsNM(), streamed.WavelengthsNM()) || streamed.Bands() != 5:
		t.Errorf("band record %v (%d bands) read by windows, %v held", streamed.WavelengthsNM(), streamed.Bands(), held.WavelengthsNM())
	}
}
