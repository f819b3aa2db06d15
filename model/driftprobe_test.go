package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pnec/pnec/tiling"
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

// TestEstimateCalibration: the probe finds the calibration Radiometric
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
			shift, gain, ok := estimateCalibration(w, labels, mean, k)
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
			back := undoCalibration(w, shift, gain)
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
	shift, gain, _ := estimateCalibration(Scene{Rows: 1, Cols: len(one), Bands: bands, Data: onlyData}, one, mean, k)
	for b := range gain {
		if shift != 0 || math.Abs(gain[b]-1) > 0.01 {
			t.Fatalf("one class alone: band shift %g, gain %.4f at band %d, want 0 and 1", shift, gain[b], b)
		}
	}
	// Nothing to estimate from.
	if _, _, ok := estimateCalibration(Scene{Rows: 1, Cols: 2, Bands: bands, Data: make([]float32, 2*bands)}, []int{-1, -1}, mean, k); ok {
		t.Error("no valid pixel: an estimate")
	}
}

// TestProbeWindows: a scene that fits is its own window; a larger one
// gets the centred window first, then others over a 3x3 grid, each
// ProbeSide a side, inside the scene, on the stride grid; the choice
// takes the first with enough valid pixels, else the one with the most.
func TestProbeWindows(t *testing.T) {
	if w := ProbeWindows(83, 86); len(w) != 1 || w[0] != (tiling.Rect{Rows: 83, Cols: 86}) {
		t.Errorf("83x86 scene: windows %v, want the scene", w)
	}
	ws := ProbeWindows(610, 340)
	if len(ws) != 9 || ws[0] != (tiling.Rect{Row: 256, Col: 120, Rows: ProbeSide, Cols: ProbeSide}) {
		t.Fatalf("610x340 scene: windows %v, want 9, the centred one first", ws)
	}
	for _, w := range ws {
		if w.Row%Stride != 0 || w.Col%Stride != 0 || w.Row < 0 || w.Col < 0 || w.Row+w.Rows > 610 || w.Col+w.Cols > 340 {
			t.Errorf("window %v off the stride grid or outside the scene", w)
		}
	}
	if ws := ProbeWindows(40, 500); len(ws) != 3 || ws[0].Rows != 40 || ws[0].Cols != ProbeSide {
		t.Errorf("40x500 scene: windows %v, want 3 along the row", ws)
	}
	full := ProbeSide * ProbeSide
	for _, tc := range []struct {
		valid []int
		want  int
	}{
		{[]int{full, full}, 0},
		{[]int{full / 4, full / 2, full}, 1},
		{[]int{full / 4, full / 3, 10}, 1},
		{[]int{0, 0, 0}, -1},
	} {
		if got := ChooseProbeWindow(ws, tc.valid); got != tc.want {
			t.Errorf("valid pixels %v: window %d, want %d", tc.valid, got, tc.want)
		}
	}
}
