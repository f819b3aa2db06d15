package model

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestDriftMeter checks the figures and the verdict of DriftMeter on
// statistics made by hand.
func TestDriftMeter(t *testing.T) {
	near := []float32{0.001, 0.5}  // close to class 0: agreement of label 0 near 1
	near1 := []float32{0.5, 0.005} // close to class 1
	far := []float32{0.3, 0.4}     // beyond both classes' p99
	wider := []float32{0.008, 0.5} // class 0, 8 times its median distance, within its p99
	a0, a1 := float64(AgreementOf(near, 0)), float64(AgreementOf(near1, 1))
	// The training scene: class 0 pixels like near, class 1 like near1 but
	// with a lower reliability on average (a class whose spectra overlap).
	st := &driftStats{BandMean: []float32{100, 200}, BandStd: []float32{10, 20}, ClassShare: []float32{0.5, 0.5},
		ClassDistanceP99: []float32{0.01, 0.02}, ClassDistanceP50: []float32{0.001, 0.005},
		DistanceQuantiles: []float32{0.001, 0.005, 0.01, 0.02},
		Reliability:       (a0 + 0.8*a1) / 2, ClassReliability: []float32{float32(a0), float32(0.8 * a1)}, Pixels: 100}
	m := &Model{meta: modelMeta{Bands: 2, Classes: []Class{{Value: 1}, {Value: 2}}, Drift: st}}
	if err := m.checkDrift(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		spectra     []float32 // two bands per pixel
		pixels      [][]float32
		labels      []int
		wantFar     float64
		wantBright  float64
		wantShift   [2]float64 // per band, in SD
		wantVerdict DriftVerdict
	}{
		{"training-like", []float32{100, 200, 100, 200}, [][]float32{near, near, near, near}, []int{0, 0, 0, 0}, 0, 1, [2]float64{0, 0}, DriftOK},
		{"darker", []float32{90, 180, 90, 180}, [][]float32{near, near, near, near}, []int{0, 0, 0, 0}, 0, 0.9, [2]float64{-1, -1}, DriftOK},
		{"some far", []float32{100, 200}, [][]float32{far, near, near, near, near, near, near, near, near, near}, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0.1, 1, [2]float64{0, 0}, DriftWarn},
		{"mostly far", []float32{100, 200}, [][]float32{far, far, far, near}, []int{0, 0, 0, 0}, 0.75, 1, [2]float64{0, 0}, DriftFail},
		// Spectra farther from their class than the training scene's, none
		// beyond its 99th percentile: the distance ratio warns.
		{"wider", []float32{100, 200}, [][]float32{wider, wider, wider, wider}, []int{0, 0, 0, 0}, 0, 1, [2]float64{0, 0}, DriftWarn},
		// Another mix of classes: only class 1, whose reliability is lower.
		// Against the whole scene's baseline this would fall; against class
		// 1's it holds.
		{"class 1 only", []float32{100, 200}, [][]float32{near1, near1, near1, near1}, []int{1, 1, 1, 1}, 0, 1, [2]float64{0, 0}, DriftOK},
		// Labels that disagree with the spectra: reliability falls.
		{"wrong labels", []float32{100, 200}, [][]float32{near, near, near, near}, []int{1, 1, 1, 0}, 0, 1, [2]float64{0, 0}, DriftFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := m.NewDriftMeter()
			if err != nil {
				t.Fatal(err)
			}
			d.AddSpectra(tc.spectra, nil)
			for i, px := range tc.pixels {
				d.AddPixel(px, tc.labels[i])
			}
			r := d.Report()
			if math.Abs(r.FarShare-tc.wantFar) > 1e-9 || math.Abs(r.BrightnessRatio-tc.wantBright) > 1e-6 {
				t.Errorf("far share %g, brightness %g; want %g, %g", r.FarShare, r.BrightnessRatio, tc.wantFar, tc.wantBright)
			}
			for b, w := range tc.wantShift {
				if math.Abs(r.BandShiftSD[b]-w) > 1e-6 {
					t.Errorf("band %d shift %g SD, want %g", b, r.BandShiftSD[b], w)
				}
			}
			if r.Verdict != tc.wantVerdict || (r.Verdict == DriftOK) != (len(r.Reasons) == 0) {
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
	// No statistics: ErrNoDriftStats.
	if _, err := (&Model{}).NewDriftMeter(); !errors.Is(err, ErrNoDriftStats) {
		t.Errorf("model without statistics: %v, want ErrNoDriftStats", err)
	}
	// Broken statistics are a damaged file.
	bad := *st
	bad.ClassDistanceP99 = []float32{0.1}
	m.meta.Drift = &bad
	if err := m.checkDrift(); err == nil {
		t.Error("statistics of 1 class for a 2-class model passed the check")
	}
}

// TestDriftOfTrainingScene: a trained model's training scene is ok with
// about 1% far pixels; the same scene darker is as ok (spectral angles do
// not see brightness) with the brightness ratio measured; the bands
// reversed fail.
func TestDriftOfTrainingScene(t *testing.T) {
	s, labels := synthScene(30, 26, 12, 3, 1)
	m, err := Train(context.Background(), s, labels, TrainOptions{Config: tinyConfig(30), TrainPerClass: 10, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	st := m.meta.Drift
	var share float32
	for _, v := range st.ClassShare {
		share += v
	}
	if math.Abs(float64(share)-1) > 1e-5 || st.Pixels != int64(s.Rows*s.Cols) || !(st.Reliability > 0.5 && st.Reliability <= 1) {
		t.Errorf("statistics %+v: class shares sum to %g, want 1 over %d pixels and a reliability above 0.5", st, share, s.Rows*s.Cols)
	}
	for i := 1; i < len(st.DistanceQuantiles); i++ {
		if st.DistanceQuantiles[i] < st.DistanceQuantiles[i-1] {
			t.Errorf("distance quantiles %v not ascending", st.DistanceQuantiles)
		}
	}
	ref, err := m.SpectralReference()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPredictor(m, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	drift := func(sc Scene) Drift {
		pred, err := p.Predict(context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.DriftOf(sc, pred, ref)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	clean := drift(s)
	if clean.Verdict != DriftOK || clean.FarShare > 0.02 || math.Abs(clean.ReliabilityRatio-1) > 1e-6 || clean.BandShiftMaxSD > 1e-4 ||
		math.Abs(clean.DistanceRatio-1) > 0.07 {
		t.Errorf("training scene: %+v, want ok, at most 2%% far, reliability ratio 1, no band shift, distance ratio 1", clean)
	}
	dark := drift(Radiometric{Gain: 0.7}.Apply(s, nil, nil))
	if math.Abs(dark.BrightnessRatio-0.7) > 1e-3 || math.Abs(dark.FarShare-clean.FarShare) > 1e-9 || dark.BandShiftMaxSD < 0.5 ||
		math.Abs(dark.DistanceRatio-clean.DistanceRatio) > 1e-3 {
		t.Errorf("gain 0.7: %+v, want brightness 0.7, the clean far share %g and a band shift", dark, clean.FarShare)
	}
	if rev := drift(Radiometric{Reverse: true}.Apply(s, nil, nil)); rev.Verdict != DriftFail || rev.FarShare < 0.5 {
		t.Errorf("bands reversed: %+v, want fail with most pixels far", rev)
	}
}
