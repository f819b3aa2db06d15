package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPenalisedReference: a copy penalty of 0 gives the distances of one
// reference of the spectra and their copies together, bit for bit (the
// fused decision of files written before the penalty); pi those of the
// spectra alone; a penalty between gives, per class, the smaller of the
// distance to the spectra and that of the angle to the copies plus the
// penalty. A penalty outside 0..pi is refused.
func TestPenalisedReference(t *testing.T) {
	const bands, n, pixels = 12, 6, 50
	rng := rand.New(rand.NewPCG(5, 5))
	spectrum := func() []float32 {
		v := make([]float32, bands)
		for b := range v {
			v[b] = float32(1 + 0.3*rng.NormFloat64())
		}
		return v
	}
	var plain, scene []float32
	var class []int
	for i := range n {
		plain = append(plain, spectrum()...)
		class = append(class, i%2)
	}
	for range pixels {
		scene = append(scene, spectrum()...)
	}
	all, allClass := augmentedSpectra(plain, bands, class, DefaultAugment)
	copies, copyClass := all[n*bands:], allClass[n:]
	dist := func(t *testing.T, spectra []float32, class []int, copies []float32, copyClass []int, pen float64) []float32 {
		t.Helper()
		var r *SpectralReference
		var err error
		if copyClass == nil {
			r, err = NewSpectralReference(spectra, bands, class, 2)
		} else {
			r, err = NewPenalisedReference(spectra, bands, class, 2, copies, copyClass, pen)
		}
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, pixels*2)
		if err := r.ClassDistances(scene, nil, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	union := dist(t, all, allClass, nil, nil, 0)
	alone := dist(t, plain, class, nil, nil, 0)
	onlyCopies := dist(t, copies, copyClass, nil, nil, 0)
	for i, v := range dist(t, plain, class, copies, copyClass, 0) {
		if v != union[i] {
			t.Fatalf("penalty 0: distance %d is %g, the union's %g", i, v, union[i])
		}
	}
	for i, v := range dist(t, plain, class, copies, copyClass, math.Pi) {
		if v != alone[i] {
			t.Fatalf("penalty pi: distance %d is %g, the spectra's alone %g", i, v, alone[i])
		}
	}
	const pen = 0.02
	fewer := 0
	for i, v := range dist(t, plain, class, copies, copyClass, pen) {
		want := math.Min(float64(alone[i]), 1-math.Cos(angleOf(float64(onlyCopies[i]))+pen))
		if math.Abs(float64(v)-want) > 1e-6 {
			t.Fatalf("penalty %g: distance %d is %g, want %g", pen, i, v, want)
		}
		if v < alone[i] {
			fewer++
		}
	}
	if fewer == 0 {
		t.Fatalf("no copy nearer than the spectra by more than %g rad: the case tests nothing", pen)
	}
	for _, bad := range []float64{-0.1, 4, math.NaN()} {
		if _, err := NewPenalisedReference(plain, bands, class, 2, copies, copyClass, bad); err == nil {
			t.Errorf("penalty %g accepted", bad)
		}
	}
}

// TestChooseCopyPenalty: where the augmentation's tilted copies of one
// class's spectra fall on another class's own (a class that is the other
// tilted by the augmentation's full amplitude), the copies cost left-out
// pixels and training chooses a penalty; where the classes lie far apart
// the copies count in full (penalty 0, the acquisition robustness kept);
// without augmentation there are no copies and no penalty.
func TestChooseCopyPenalty(t *testing.T) {
	const rows, cols, bands = 30, 30, 24
	tilted := func(u float64) float64 { return 1 + DefaultAugment.Tilt*TiltLinear.at(u) }
	bowed := func(u float64) float64 { return 1 + 3*TiltBow.at(u)*TiltBow.at(u) }
	for _, tc := range []struct {
		name    string
		other   func(u float64) float64
		aug     Augment
		penalty bool
	}{
		{"a class the other tilted", tilted, DefaultAugment, true},
		{"classes far apart", bowed, DefaultAugment, false},
		{"no augmentation", tilted, Augment{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 9))
			s := Scene{Rows: rows, Cols: cols, Bands: bands, Data: make([]float32, rows*cols*bands)}
			var idx []int
			var y []int32
			for i := range rows * cols {
				k := (i % cols) / (cols / 2)
				for b := range bands {
					v := 1.0
					if k == 1 {
						v = tc.other(float64(b) / float64(bands-1))
					}
					s.Data[i*bands+b] = float32(v * (1 + 0.01*rng.NormFloat64()))
				}
				if rng.IntN(20) == 0 {
					idx, y = append(idx, i), append(y, int32(k))
				}
			}
			d, _, err := chooseDecision(s, idx, y, 2, tc.aug, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.CopyPenaltyRad > 0; got != tc.penalty {
				t.Fatalf("copy penalty %g rad: want one above 0 %v", d.CopyPenaltyRad, tc.penalty)
			}
			if err := d.validate(); err != nil || !d.Fused() {
				t.Fatalf("chosen decision %+v: %v", d, err)
			}
		})
	}
}
