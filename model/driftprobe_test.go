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

// TestNearestValid: the valid pixel nearest the centre, whatever the
// order and pieces rows come in (ties to the first in row-major order);
// ProbeCandidates adds the window around it, which holds it, last.
func TestNearestValid(t *testing.T) {
	const rows, cols = 900, 900
	inside := func(r, c int) bool { return r-c >= 130 && r-c < 170 }
	feed := func(order []int, piece int) NearestValid {
		v := NewNearestValid(rows, cols)
		valid := make([]bool, cols)
		for _, r := range order {
			for c := range cols {
				valid[c] = inside(r, c)
			}
			for c0 := 0; c0 < cols; c0 += piece {
				n := min(piece, cols-c0)
				v.AddRow(r, c0, n, valid[c0:c0+n])
			}
		}
		return v
	}
	down := make([]int, rows)
	up := make([]int, rows)
	for i := range rows {
		down[i], up[i] = i, rows-1-i
	}
	a, b := feed(down, cols), feed(up, 256)
	ra, ca, oka := a.Nearest()
	rb, cb, okb := b.Nearest()
	// |2r-899|^2 + |2c-899|^2 is least on r-c = 130 at r = 514, c = 384
	// and r = 515, c = 385 alike (both 129^2 + 131^2 in half pixels); the
	// first in row-major order wins.
	if !oka || !okb || ra != 514 || ca != 384 || rb != ra || cb != ca {
		t.Errorf("nearest valid (%d,%d,%v) top down, (%d,%d,%v) bottom up in pieces: want (514,384) both", ra, ca, oka, rb, cb, okb)
	}
	ws := ProbeCandidates(rows, cols, a)
	if len(ws) != len(ProbeWindows(rows, cols))+1 {
		t.Fatalf("candidates %v: want the grid's and one more", ws)
	}
	if w := ws[len(ws)-1]; ra < w.Row || ra >= w.Row+w.Rows || ca < w.Col || ca >= w.Col+w.Cols || w.Rows != ProbeSide || w.Cols != ProbeSide {
		t.Errorf("last candidate %v does not hold (%d,%d)", w, ra, ca)
	}

	all := NewNearestValid(83, 86) // rows with no mask: the centre
	for r := range 83 {
		all.AddRow(r, 0, 86, nil)
	}
	if r, c, ok := all.Nearest(); !ok || r != 41 || c != 42 {
		t.Errorf("all valid 83x86: nearest (%d,%d,%v), want (41,42)", r, c, ok)
	}
	if ws := ProbeCandidates(83, 86, all); len(ws) != 1 {
		t.Errorf("83x86: candidates %v, want the scene alone", ws)
	}
	if _, _, ok := NewNearestValid(10, 10).Nearest(); ok {
		t.Error("no rows added: want none found")
	}
}
