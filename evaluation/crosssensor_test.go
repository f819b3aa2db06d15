package evaluation

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/spectral"
)

// TestCrossSensorTraining: a model trained on an EnMAP delivery restricted
// to the bands AVIRIS-NG also covers records them (and the selection),
// classifies another EnMAP delivery with its own bands, and an AVIRIS-NG
// delivery of other ground, resampled to its bands without being asked
// to: both agree with their labels. A model trained on every EnMAP band
// is refused on AVIRIS-NG (EnMAP's 1331-1390 nm bands fall in AVIRIS-NG's
// water gap), and a selection that leaves no band is an error.
func TestCrossSensorTraining(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models: skipped with -short")
	}
	dir := t.TempDir()
	train, err := fixture.WriteEnMAP(filepath.Join(dir, "enmap-a"), fixture.EnMAPOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := fixture.WriteEnMAP(filepath.Join(dir, "enmap-b"), fixture.EnMAPOptions{Seed: 2, ShiftCols: 40})
	if err != nil {
		t.Fatal(err)
	}
	ang, err := fixture.WriteAVIRISNG(filepath.Join(dir, "ang"), fixture.AVIRISOptions{Seed: 3, RotateDeg: 20})
	if err != nil {
		t.Fatal(err)
	}
	sensor, _ := spectral.SensorByName("AVIRIS-NG")
	sel := BandSelection{CommonWith: []NamedBandSet{{Name: sensor.Name, Bands: sensor.Bands}}}
	opts := model.TrainOptions{Config: tinyConfig(40), TrainPerClass: 20, Backend: "go"}
	ctx := context.Background()
	res, err := Train(ctx, TrainRequest{Scene: train.Path, Labels: train.Labels, Options: opts, Bands: sel})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model
	rec := m.BandRecord()
	if rec.Selection != "shared with AVIRIS-NG" || rec.SceneBands != 224 || len(rec.BandsUsed) != m.Bands() || m.Bands() >= 218 {
		t.Fatalf("record %q, %d of %d bands used; want the bands shared with AVIRIS-NG", rec.Selection, len(rec.BandsUsed), rec.SceneBands)
	}
	for _, c := range m.WavelengthsNM() {
		if (c > 1325 && c < 1445) || (c > 1775 && c < 1965) {
			t.Errorf("model band at %g nm, in AVIRIS-NG's water gap", c)
		}
	}
	for _, tc := range []struct {
		name string
		d    fixture.Delivery
	}{{"EnMAP", other}, {"AVIRIS-NG", ang}} {
		ev, err := EvaluateFiles(ctx, m, tc.d.Path, tc.d.Labels, EvalOptions{Backend: "go"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ev.Final().OA < 0.85 {
			t.Errorf("%s: OA %.3f, want at least 0.85", tc.name, ev.Final().OA)
		}
		t.Logf("%s: OA %.3f over %d test pixels", tc.name, ev.Final().OA, ev.TestPixels)
	}
	// Without a selection the model takes EnMAP's 1331-1390 nm bands, which
	// AVIRIS-NG cannot make: refused, also with resampling asked for.
	all, err := Train(ctx, TrainRequest{Scene: train.Path, Labels: train.Labels, Options: model.TrainOptions{Config: tinyConfig(2), TrainPerClass: 20, Backend: "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EvaluateFiles(ctx, all.Model, ang.Path, ang.Labels, EvalOptions{Backend: "go", ResampleBands: true}); !errors.Is(err, spectral.ErrNotCovered) {
		t.Errorf("every EnMAP band on AVIRIS-NG: got %v, want ErrNotCovered", err)
	}
	_, err = Train(ctx, TrainRequest{Scene: train.Path, Labels: train.Labels, Options: opts, Bands: BandSelection{RangesNM: [][2]float64{{2500, 2600}}}})
	if !errors.Is(err, ErrBandSelection) || !strings.Contains(err.Error(), "2500-2600 nm") {
		t.Errorf("a range without bands: got %v", err)
	}
}

// TestSelectBands: ranges and shared bands combine; the training scene's
// bad bands stay out.
func TestSelectBands(t *testing.T) {
	d, err := fixture.WriteEnMAP(t.TempDir(), fixture.EnMAPOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	emit, _ := spectral.SensorByName("EMIT")
	sc, err := geo.Open(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	info := sc.Info()
	sc.Close()
	got, err := SelectBands(info, BandSelection{RangesNM: [][2]float64{{1300, 1500}}, CommonWith: []NamedBandSet{{Name: "EMIT", Bands: emit.Bands}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range got {
		c := d.CentresNM[i]
		if c < 1300 || c > 1500 || (c > 1320 && c < 1440) || d.Bad[i] {
			t.Errorf("band %d (%g nm) selected", i+1, c)
		}
	}
	if len(got) == 0 || !slices.IsSorted(got) {
		t.Errorf("selected %v", got)
	}
}
