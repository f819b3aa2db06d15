package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pnec/pnec/drift"
)

// probeScene is a window of n pixels of k classes with smooth spectra and
// sharp features (absorption lines), labels in turn, and the class mean
// spectra it was drawn from.
func probeScene(n, bands, k int) (Scene, []int, []float32) {
	rng := rand.New(rand.NewPCG(3, 4))
	mean := make([]float32, k*bands)
	for c := range k {
		for b := range bands {
			u := float64(b) / float64(bands-1)
			v := 1000 + 600*u*float64(c+1) + 300*math.Sin(5*u+float64(c))
			if b%9 == 4 {
				v *= 0.6 // a line the shift search can lock onto
			}
			mean[c*bands+b] = float32(v)
		}
	}
	s := Scene{Rows: 1, Cols: n, Bands: bands, Data: make([]float32, n*bands)}
	labels := make([]int, n)
	for i := range n {
		c := i % k
		labels[i] = c
		for b := range bands {
			s.Data[i*bands+b] = mean[c*bands+b] * float32(1+0.02*rng.NormFloat64())
		}
	}
	return s, labels, mean
}

// TestEstimateCalibration: the probe (drift.EstimateCalibration) finds the calibration Radiometric
// applied (a gain, a smooth tilt of each shape, a band shift of a
// fraction of a band) and undoing it gives back the scene; a scene as
// calibrated as the training scene needs none.
func TestEstimateCalibration(t *testing.T) {
	const bands, k = 120, 3
	s, labels, mean := probeScene(600, bands, k)
	for _, tc := range []struct {
		name string
		r    Radiometric
	}{
		{"none", Radiometric{}},
		{"gain", Radiometric{Gain: 0.8}},
		{"tilt linear", Radiometric{Tilt: 0.15}},
		{"tilt bow", Radiometric{Tilt: -0.2, TiltShape: TiltBow}},
		{"tilt wave", Radiometric{Tilt: 0.1, TiltShape: TiltWave}},
		{"band shift", Radiometric{BandShift: 1.5}},
		{"band shift down and tilt", Radiometric{BandShift: -2.25, Tilt: 0.1, Gain: 1.1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.r.Apply(s, nil, nil)
			cal, ok := drift.EstimateCalibration(w.Data, w.Bands, labels, mean, k)
			shift, gain := cal.BandShift, cal.Gain
			if !ok {
				t.Fatal("no estimate")
			}
			if shift != tc.r.BandShift {
				t.Errorf("band shift %g, want %g", shift, tc.r.BandShift)
			}
			g := tc.r.Gain
			if g == 0 {
				g = 1
			}
			shape := tc.r.TiltShape
			if shape == "" {
				shape = TiltLinear
			}
			// The gain curve, away from the bands the shift clamps; a wave is
			// a sine, which a cubic follows to within about 2% of a 10% tilt.
			for b := 8; b < bands-8; b++ {
				want := g * (1 + tc.r.Tilt*shape.at(float64(b)/float64(bands-1)))
				if math.Abs(gain[b]/want-1) > 0.012 {
					t.Fatalf("band %d: gain %.4f, want %.4f", b, gain[b], want)
				}
			}
			// Undone, the scene comes back as the shift there and back gives
			// it (exact for a whole band; a fraction is interpolated twice,
			// which blurs the lines), to within the gain's error.
			back := Scene{Data: cal.Undo(w.Data, w.Valid, w.Bands)}
			ref := Radiometric{BandShift: -tc.r.BandShift}.Apply(Radiometric{BandShift: tc.r.BandShift}.Apply(s, nil, nil), nil, nil)
			for i := range back.Data {
				if b := i % bands; b >= 8 && b < bands-8 && math.Abs(float64(back.Data[i]/ref.Data[i])-1) > 0.012 {
					t.Fatalf("pixel %d band %d: undone %g, want %g", i/bands, b, back.Data[i], ref.Data[i])
				}
			}
		})
	}
	// Another mix of the same classes is no change of calibration.
	var one []int
	var onlyData []float32
	for i, c := range labels {
		if c == 2 {
			one = append(one, c)
			onlyData = append(onlyData, s.Data[i*bands:(i+1)*bands]...)
		}
	}
	oneCal, _ := drift.EstimateCalibration(onlyData, bands, one, mean, k)
	shift, gain := oneCal.BandShift, oneCal.Gain
	for b := range gain {
		if shift != 0 || math.Abs(gain[b]-1) > 0.01 {
			t.Fatalf("one class alone: band shift %g, gain %.4f at band %d, want 0 and 1", shift, gain[b], b)
		}
	}
	// Nothing to estimate from.
	if _, ok := drift.EstimateCalibration(make([]float32, 2*bands), bands, []int{-1, -1}, mean, k); ok {
		t.Error("no valid pixel: an estimate")
	}
}
