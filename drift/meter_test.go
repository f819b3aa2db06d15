package drift_test

import (
	"errors"
	"math"
	"testing"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/model"
)

// TestMeter checks the figures and the verdict of Meter on
// statistics made by hand.
func TestMeter(t *testing.T) {
	near := []float32{0.001, 0.5}  // close to class 0: agreement of label 0 near 1
	near1 := []float32{0.5, 0.005} // close to class 1
	far := []float32{0.3, 0.4}     // beyond both classes' p99
	wider := []float32{0.008, 0.5} // class 0, 8 times its median distance, within its p99
	a0, a1 := float64(model.AgreementOf(near, 0)), float64(model.AgreementOf(near1, 1))
	// The training scene: class 0 pixels like near, class 1 like near1 but
	// with a lower reliability on average (a class whose spectra overlap).
	st := &drift.Stats{BandMean: []float32{100, 200}, BandStd: []float32{10, 20}, ClassShare: []float32{0.5, 0.5},
		ClassDistanceP99: []float32{0.01, 0.02}, ClassDistanceP50: []float32{0.001, 0.005},
		DistanceQuantiles: []float32{0.001, 0.005, 0.01, 0.02},
		Reliability:       (a0 + 0.8*a1) / 2, ClassReliability: []float32{float32(a0), float32(0.8 * a1)}, Pixels: 100,
		FeatureDistanceP50: []float32{0.01, 0.02}, FeatureDistanceP90: []float32{0.05, 0.1}, ClassPrototypeMargin: []float32{0.5, 0.4},
		ClassUncertainty: []float32{0.2, 0.3}, ClassMargin: []float32{0.9, 0.8}, Cells: 25, ClassMeanSpectrum: []float32{100, 200, 100, 200}}
	if err := st.Check(2, 2); err != nil {
		t.Fatal(err)
	}
	// The verdict of the spectral figures alone (the limits before issue
	// 33): this test checks how the spectral figures are measured.
	spectralOnly := drift.Thresholds{Limits: []drift.Limit{
		{Figure: "far_share", Warn: 0.05, Fail: 0.25}, {Figure: "distance_ratio", Warn: 1.5},
		{Figure: "reliability_ratio", Warn: 0.9, Fail: 0.75}}}
	for _, tc := range []struct {
		name        string
		spectra     []float32 // two bands per pixel
		pixels      [][]float32
		labels      []int
		wantFar     float64
		wantBright  float64
		wantShift   [2]float64 // per band, in SD
		wantVerdict drift.Verdict
	}{
		{"training-like", []float32{100, 200, 100, 200}, [][]float32{near, near, near, near}, []int{0, 0, 0, 0}, 0, 1, [2]float64{0, 0}, drift.OK},
		{"darker", []float32{90, 180, 90, 180}, [][]float32{near, near, near, near}, []int{0, 0, 0, 0}, 0, 0.9, [2]float64{-1, -1}, drift.OK},
		{"some far", []float32{100, 200}, [][]float32{far, near, near, near, near, near, near, near, near, near}, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0.1, 1, [2]float64{0, 0}, drift.Warn},
		{"mostly far", []float32{100, 200}, [][]float32{far, far, far, near}, []int{0, 0, 0, 0}, 0.75, 1, [2]float64{0, 0}, drift.Fail},
		// Spectra farther from their class than the training scene's, none
		// beyond its 99th percentile: the distance ratio warns.
		{"wider", []float32{100, 200}, [][]float32{wider, wider, wider, wider}, []int{0, 0, 0, 0}, 0, 1, [2]float64{0, 0}, drift.Warn},
		// Another mix of classes: only class 1, whose reliability is lower.
		// Against the whole scene's baseline this would fall; against class
		// 1's it holds.
		{"class 1 only", []float32{100, 200}, [][]float32{near1, near1, near1, near1}, []int{1, 1, 1, 1}, 0, 1, [2]float64{0, 0}, drift.OK},
		// Labels that disagree with the spectra: reliability falls.
		{"wrong labels", []float32{100, 200}, [][]float32{near, near, near, near}, []int{1, 1, 1, 0}, 0, 1, [2]float64{0, 0}, drift.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := drift.NewMeter(st, spectralOnly)
			if err != nil {
				t.Fatal(err)
			}
			d.AddSpectra(tc.spectra, nil)
			for i, px := range tc.pixels {
				prob := []float32{0.9, 0.1}
				if tc.labels[i] == 1 {
					prob = []float32{0.1, 0.9}
				}
				d.AddPixel(model.DriftPixel(px, prob, 0.2, tc.labels[i]))
			}
			d.AddCells([]float32{0.99, 0.5})
			d.AddRecalibration(drift.Recalibration{Pixels: int64(len(tc.pixels))})
			r := d.Report()
			if math.Abs(r.FarShare-tc.wantFar) > 1e-9 || math.Abs(r.BrightnessRatio-tc.wantBright) > 1e-6 {
				t.Errorf("far share %g, brightness %g; want %g, %g", r.FarShare, r.BrightnessRatio, tc.wantFar, tc.wantBright)
			}
			for b, w := range tc.wantShift {
				if math.Abs(r.BandShiftSD[b]-w) > 1e-6 {
					t.Errorf("band %d shift %g SD, want %g", b, r.BandShiftSD[b], w)
				}
			}
			if r.Verdict != tc.wantVerdict || (r.Verdict == drift.OK) != (len(r.Reasons) == 0) {
				t.Errorf("verdict %s (%v), want %s; figures %+v", r.Verdict, r.Reasons, tc.wantVerdict, r)
			}
			if math.Abs(r.ReliabilityRatio-r.Reliability/r.ReliabilityBaseline) > 1e-12 {
				t.Errorf("reliability %g, baseline %g, ratio %g", r.Reliability, r.ReliabilityBaseline, r.ReliabilityRatio)
			}
			switch tc.name {
			case "training-like":
				if math.Abs(r.DistanceRatio-1) > 0.07 || math.Abs(r.ReliabilityRatio-1) > 1e-6 {
					t.Errorf("distance ratio %g, reliability ratio %g; want 1 (within the histogram's 6%%) and 1", r.DistanceRatio, r.ReliabilityRatio)
				}
			case "wider":
				if math.Abs(r.DistanceRatio-8) > 0.5 {
					t.Errorf("distance ratio %g, want 8", r.DistanceRatio)
				}
			case "class 1 only":
				if math.Abs(r.ReliabilityRatio-1/0.8) > 1e-4 || math.Abs(r.ReliabilityBaseline-0.8*a1) > 1e-6 {
					t.Errorf("reliability ratio %g over baseline %g, want 1.25 over class 1's %g", r.ReliabilityRatio, r.ReliabilityBaseline, 0.8*a1)
				}
			}
		})
	}
	// No statistics: ErrNoStats.
	if _, err := drift.NewMeter(nil, drift.DefaultThresholds); !errors.Is(err, drift.ErrNoStats) {
		t.Errorf("model without statistics: %v, want ErrNoStats", err)
	}
	// Broken statistics are a damaged file.
	bad := *st
	bad.ClassDistanceP99 = []float32{0.1}
	if err := bad.Check(2, 2); err == nil {
		t.Error("statistics of 1 class for a 2-class model passed the check")
	}
	// Statistics without the class mean spectra (a model file of an earlier
	// build of format 4) are refused, with a message to train again.
	old := *st
	old.ClassMeanSpectrum = nil
	if err := old.Check(2, 2); !errors.Is(err, drift.ErrNoProbeStats) {
		t.Errorf("statistics without class mean spectra: %v, want ErrNoProbeStats", err)
	}
}

// TestMeterNetworkFigures checks the figures in the network's own terms on
// statistics made by hand: feature distances to the prototypes (far share
// and class-wise median ratio), the prototype margin, the gate's
// uncertainty and the probability margin, each against the training
// scene's for this scene's mix.
func TestMeterNetworkFigures(t *testing.T) {
	st := &drift.Stats{BandMean: []float32{100, 200}, BandStd: []float32{10, 20}, ClassShare: []float32{0.5, 0.5},
		ClassDistanceP99: []float32{0.01, 0.02}, ClassDistanceP50: []float32{0.001, 0.005}, DistanceQuantiles: []float32{0.001, 0.005, 0.01, 0.02},
		Reliability: 0.8, ClassReliability: []float32{0.8, 0.8}, Pixels: 100,
		FeatureDistanceP50: []float32{0.01, 0.04}, FeatureDistanceP90: []float32{0.05, 0.1}, ClassPrototypeMargin: []float32{0.5, 0.25},
		ClassUncertainty: []float32{0.2, 0.4}, ClassMargin: []float32{0.9, 0.6}, Cells: 25, ClassMeanSpectrum: []float32{100, 200, 100, 200}}
	if err := st.Check(2, 2); err != nil {
		t.Fatal(err)
	}
	d, err := drift.NewMeter(st, drift.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	d.AddSpectra([]float32{100, 200}, nil)
	// Cells: two at class 0's median distance (margin 0.5), one of class 1
	// at twice its median (margin 0.25), one beyond class 0's 90th
	// percentile, one without data.
	nan := float32(math.NaN())
	d.AddCells([]float32{0.99, 0.49, 0.99, 0.49, 0.67, 0.92, 0.9, 0.4, nan, nan})
	// Pixels: label 0 twice with G~ 0.3 (the training scene's 0.2) and
	// margin 0.45 (0.9); label 1 once, as on the training scene.
	d.AddPixel(model.DriftPixel([]float32{0.001, 0.5}, []float32{0.725, 0.275}, 0.3, 0))
	d.AddPixel(model.DriftPixel([]float32{0.001, 0.5}, []float32{1.45, 0.55}, 0.3, 0)) // unnormalised: the margin is relative
	d.AddPixel(model.DriftPixel([]float32{0.5, 0.005}, []float32{0.2, 0.8}, 0.4, 1))
	r := d.Report()
	// Feature distances: class 0 cells 0.01, 0.01, 0.1 (median 0.01, ratio
	// 1; 0.1 is beyond 0.05), class 1 one cell 0.08 (ratio 2): geometric
	// mean weighted 3:1.
	wantRatio := math.Exp((3*math.Log(1) + math.Log(2)) / 4)
	checks := []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"cells", float64(r.ValidCells), 4, 0},
		{"feature far share", r.FeatureFarShare, 0.25, 1e-9},
		{"feature distance ratio", r.FeatureDistanceRatio, wantRatio, 0.07 * wantRatio},
		// Margins 0.5, 0.5, 0.5 (class 0) and 0.25 (class 1) against the
		// same: ratio 1.
		{"prototype margin ratio", r.PrototypeMarginRatio, 1, 1e-6},
		// G~ mean (0.3+0.3+0.4)/3 over (0.2+0.2+0.4)/3.
		{"uncertainty ratio", r.UncertaintyRatio, 1.0 / 0.8, 1e-6},
		// Margins (0.45+0.45+0.6)/3 over (0.9+0.9+0.6)/3.
		{"margin ratio", r.MarginRatio, 1.5 / 2.4, 1e-6},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
}
