package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAlignedReference: a copy penalty of 0 gives the distances of one
// reference of the spectra and their copies together, bit for bit (the
// fused decision of files written before the penalty). With a penalty,
// pixels near the spectra align to the spectra and pixels changed as one
// of the groups was align to that group: at a penalty of pi the distances
// are those of the aligned group alone, and at one between, per class,
// the smaller of the distance to the aligned group and that of the angle
// to the others plus the penalty. A penalty outside 0..pi is refused.
func TestAlignedReference(t *testing.T) {
	const bands, n, pixels = 12, 6, alignMinPixels // enough to align
	rng := rand.New(rand.NewPCG(5, 5))
	var plain []float32
	var class []int
	for i := range n {
		for range bands {
			plain = append(plain, float32(1+0.3*rng.NormFloat64()))
		}
		class = append(class, i%2)
	}
	changes := referenceChanges(DefaultAugment)
	var changed [][]float32
	for _, r := range changes {
		changed = append(changed, changedSpectra(plain, bands, r))
	}
	all, allClass := augmentedSpectra(plain, bands, class, DefaultAugment)
	// scene is pixels near the training spectra, changed by change g
	// (-1: unchanged).
	scene := func(g int) []float32 {
		var out []float32
		for p := range pixels {
			i := p % n
			v := make([]float32, bands)
			for b := range v {
				v[b] = plain[i*bands+b] * float32(1+0.01*rng.NormFloat64())
			}
			if g >= 0 {
				v = changedSpectra(v, bands, changes[g])
			}
			out = append(out, v...)
		}
		return out
	}
	// dist is the class distances of px against the reference made by
	// build.
	dist := func(t *testing.T, px []float32, build func() (*SpectralReference, error)) []float32 {
		t.Helper()
		r, err := build()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, pixels*2)
		if err := r.ClassDistances(px, nil, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	aligned := func(pen float64) func() (*SpectralReference, error) {
		return func() (*SpectralReference, error) { return NewAlignedReference(plain, bands, class, 2, changed, pen) }
	}
	of := func(spectra []float32, class []int) func() (*SpectralReference, error) {
		return func() (*SpectralReference, error) { return NewSpectralReference(spectra, bands, class, 2) }
	}
	clean := scene(-1)
	union := dist(t, clean, of(all, allClass))
	for i, v := range dist(t, clean, aligned(0)) {
		if v != union[i] {
			t.Fatalf("penalty 0: distance %d is %g, the union's %g", i, v, union[i])
		}
	}
	for _, g := range []int{-1, 2, len(changes) - 1} {
		px := scene(g)
		group := plain
		if g >= 0 {
			group = changed[g]
		}
		want := dist(t, px, of(group, class))
		for i, v := range dist(t, px, aligned(math.Pi)) {
			if v != want[i] {
				t.Fatalf("scene changed by %d, penalty pi: distance %d is %g, the aligned group's %g", g, i, v, want[i])
			}
		}
	}
	// The other references of the clean scene: every changed copy.
	copies := dist(t, clean, of(all[n*bands:], allClass[n:]))
	own := dist(t, clean, of(plain, class))
	const pen = 0.02
	nearer := 0
	for i, v := range dist(t, clean, aligned(pen)) {
		want := math.Min(float64(own[i]), 1-math.Cos(angleOf(float64(copies[i]))+pen))
		if math.Abs(float64(v)-want) > 1e-6 {
			t.Fatalf("penalty %g: distance %d is %g, want %g", pen, i, v, want)
		}
		if v < own[i] {
			nearer++
		}
	}
	if nearer == 0 {
		t.Fatalf("no copy nearer than the spectra by more than %g rad: the case tests nothing", pen)
	}
	for _, bad := range []float64{-0.1, 4, math.NaN()} {
		if _, err := NewAlignedReference(plain, bands, class, 2, changed, bad); err == nil {
			t.Errorf("penalty %g accepted", bad)
		}
	}
}

// TestChooseDecisionCopies: a model trained with augmentation decides
// with the copy penalty pi (its copies count only where a scene aligns to
// them) and the default local mean, whether or not the copies of one
// class fall on another's spectra; without augmentation there are no
// copies and no penalty.
func TestChooseDecisionCopies(t *testing.T) {
	const rows, cols, bands = 30, 30, 24
	tilted := func(u float64) float64 { return 1 + DefaultAugment.Tilt*TiltLinear.at(u) }
	bowed := func(u float64) float64 { return 1 + 3*TiltBow.at(u)*TiltBow.at(u) }
	for _, tc := range []struct {
		name    string
		other   func(u float64) float64
		aug     Augment
		penalty float64
	}{
		{"a class the other tilted", tilted, DefaultAugment, math.Pi},
		{"classes far apart", bowed, DefaultAugment, math.Pi},
		{"no augmentation", tilted, Augment{}, 0},
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
			if d.CopyPenaltyRad != tc.penalty || d.LocalMean != DecisionLocalMean {
				t.Fatalf("copy penalty %g rad, local mean %d: want %g and %d", d.CopyPenaltyRad, d.LocalMean, tc.penalty, DecisionLocalMean)
			}
			if err := d.validate(); err != nil || !d.Fused() {
				t.Fatalf("chosen decision %+v: %v", d, err)
			}
		})
	}
}

// TestBlockDistancesSameAsSpans: the block-wise reduction of a reference
// whose groups are laid out alike (blockDistances) gives every class
// distance bit for bit as the per-span loop (groupDistance), at copy
// penalties 0, between and pi, to the nearest and to a local mean of 2
// or 3 (Decision.LocalMean), on a clean scene and on scenes aligned to
// a changed group, with pixels of any sign; a group missing a copy (a
// changed spectrum of zero length) is not laid out alike and takes the
// per-span loop.
func TestBlockDistancesSameAsSpans(t *testing.T) {
	const bands, n, classes, pixels = 40, 9, 3, 300
	rng := rand.New(rand.NewPCG(9, 9))
	var plain []float32
	var class []int
	for i := range n {
		for range bands {
			plain = append(plain, float32(1+0.3*rng.NormFloat64()))
		}
		class = append(class, i%classes)
	}
	changes := referenceChanges(DefaultAugment)
	var changed [][]float32
	for _, r := range changes {
		changed = append(changed, changedSpectra(plain, bands, r))
	}
	for _, g := range []int{-1, 0, 5, len(changes) - 1} {
		px := make([]float32, 0, pixels*bands)
		for p := range pixels {
			v := make([]float32, bands)
			for b := range v {
				v[b] = plain[(p%n)*bands+b] * float32(1+0.05*rng.NormFloat64())
			}
			if g >= 0 {
				v = changedSpectra(v, bands, changes[g])
			}
			if p%7 == 3 { // far from every reference: dots below -2
				for b := range v {
					v[b] *= -100
				}
			}
			px = append(px, v...)
		}
		for _, c := range []struct {
			pen  float64
			mean int
		}{{0, 0}, {0.01, 0}, {0.3, 0}, {math.Pi, 0}, {0, 2}, {0.01, 2}, {math.Pi, 2}, {math.Pi, 3}} {
			pen := c.pen
			r, err := newReference(plain, bands, class, classes, changed, nil, pen, c.mean)
			if err != nil {
				t.Fatal(err)
			}
			if r.blockLen != n {
				t.Fatalf("block length %d, want %d", r.blockLen, n)
			}
			got := make([]float32, pixels*classes)
			if err := r.ClassDistances(px, nil, got); err != nil {
				t.Fatal(err)
			}
			r.blockLen = 0
			want := make([]float32, pixels*classes)
			if err := r.ClassDistances(px, nil, want); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("scene changed by %d, penalty %g, local mean %d: distance %d is %g by blocks, %g by spans", g, pen, c.mean, i, got[i], want[i])
				}
			}
		}
	}
	holed := append([][]float32(nil), changed...)
	holed[1] = append([]float32(nil), changed[1]...)
	clear(holed[1][:bands]) // one copy of zero length: skipped
	r, err := NewAlignedReference(plain, bands, class, classes, holed, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if r.blockLen != 0 {
		t.Errorf("a group missing a copy: block length %d, want 0", r.blockLen)
	}
}
