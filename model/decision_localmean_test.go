package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// localMeanAngle is the angle from pixel to the unit mean of the k unit
// references of refs (each [bands]) nearest it, in float64: the local
// mean as the decision defines it, computed directly. alt is the same
// with the k-th nearest replaced by the next where their cosines are
// within 1e-5 (a near tie, which float32 dots may rank either way), and
// the angle itself otherwise.
func localMeanAngle(pixel []float32, refs [][]float32, k int) (angle, alt float64) {
	u := unitSpectrum(pixel)
	type near struct {
		cos  float64
		unit []float64
	}
	var all []near
	for _, r := range refs {
		ur := unitSpectrum(r)
		c := 0.0
		for b := range u {
			c += u[b] * ur[b]
		}
		all = append(all, near{c, ur})
	}
	slices.SortStableFunc(all, func(a, b near) int {
		switch {
		case a.cos > b.cos:
			return -1
		case a.cos < b.cos:
			return 1
		}
		return 0
	})
	meanAngle := func(sel []near) float64 {
		m := make([]float64, len(u))
		for _, n := range sel {
			for b, v := range n.unit {
				m[b] += v
			}
		}
		norm, dot := 0.0, 0.0
		for b, v := range m {
			norm += v * v
			dot += u[b] * v
		}
		return math.Acos(math.Min(1, dot/math.Sqrt(norm)))
	}
	k = min(k, len(all))
	angle = meanAngle(all[:k])
	if k < len(all) && all[k-1].cos-all[k].cos < 1e-5 {
		swapped := append(slices.Clone(all[:k-1]), all[k])
		return angle, meanAngle(swapped)
	}
	return angle, angle
}

// TestLocalMeanDistances: with a local mean of k, a class's distance in
// the group counted in full is the angle to the unit mean of its k
// nearest references there (computed directly in float64), on a clean
// scene (the spectra counted in full) and on one changed as a group of
// copies is (that group counted), at the penalty pi that leaves the other
// references out; a class with fewer references than k takes the mean of
// all of them.
func TestLocalMeanDistances(t *testing.T) {
	const bands, classes, pixels = 30, 3, alignMinPixels + 100
	rng := rand.New(rand.NewPCG(4, 5))
	perClass := []int{5, 4, 1} // the last fewer than k
	var plain []float32
	var class []int
	for c, n := range perClass {
		for range n {
			for b := range bands {
				plain = append(plain, float32(1+0.4*float64(c)*math.Sin(float64(b)/5)+0.1*rng.NormFloat64()))
			}
			class = append(class, c)
		}
	}
	changes := referenceChanges(DefaultAugment)
	for _, g := range []int{-1, 3} {
		px := make([]float32, 0, pixels*bands)
		for p := range pixels {
			i := p % len(class)
			j := (p * 7) % len(class)
			v := make([]float32, bands)
			for b := range v { // a mix of two training spectra, and noise
				v[b] = 0.7*plain[i*bands+b] + 0.3*plain[j*bands+b] + float32(0.02*rng.NormFloat64())
			}
			if g >= 0 {
				v = changedSpectra(v, bands, changes[g])
			}
			px = append(px, v...)
		}
		for _, k := range []int{2, 3} {
			r, err := newChangedReferenceMean(plain, bands, class, classes, changes, math.Pi, k)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, pixels*classes)
			if err := r.ClassDistances(px, nil, got); err != nil {
				t.Fatal(err)
			}
			aligned := r.alignedGroup(px, nil)
			if aligned != g+1 {
				t.Fatalf("scene changed by %d aligned to group %d", g, aligned-1)
			}
			refs := plain
			if g >= 0 {
				refs = changedSpectra(plain, bands, changes[g])
			}
			for p := range pixels {
				for c := range classes {
					var own [][]float32
					for i, k := range class {
						if k == c {
							own = append(own, refs[i*bands:(i+1)*bands])
						}
					}
					want, alt := localMeanAngle(px[p*bands:(p+1)*bands], own, k)
					a := angleOf(float64(got[p*classes+c]))
					if d := min(math.Abs(a-want), math.Abs(a-alt)); d > 2e-3 {
						t.Fatalf("scene changed by %d, k %d, pixel %d class %d: angle %g, want %g", g, k, p, c, angleOf(float64(got[p*classes+c])), want)
					}
				}
			}
		}
	}
}

// TestLocalMeanTakesTheMixedPixel: a pixel half way between two training
// spectra of one class, with a spectrum of another class nearer than
// either, is that other class's by the nearest spectrum and its own by
// the local mean of two.
func TestLocalMeanTakesTheMixedPixel(t *testing.T) {
	const bands = 3
	plain := []float32{
		1, 0, 0, // class 0
		0, 1, 0, // class 0
		1, 1, 0.5, // class 1: 19.5 degrees from the mix, the mix 45 from each of class 0's
	}
	class := []int{0, 0, 1}
	pixel := []float32{1, 1, 0}
	for _, tc := range []struct {
		k    int
		want int
	}{{0, 1}, {1, 1}, {2, 0}} {
		r, err := newReference(plain, bands, class, 2, nil, nil, 0, tc.k)
		if err != nil {
			t.Fatal(err)
		}
		d := make([]float32, 2)
		if err := r.ClassDistances(pixel, nil, d); err != nil {
			t.Fatal(err)
		}
		if got := map[bool]int{true: 0, false: 1}[d[0] < d[1]]; got != tc.want {
			t.Errorf("local mean %d: distances %v, class %d, want %d", tc.k, d, got, tc.want)
		}
	}
}

// TestChooserMeasuresAsTheDecision: the angles the choice at training
// gives a left-out pixel's window (leaveOut, to the nearest other training
// spectrum of each class) are those a reference of the same spectra
// measures.
func TestChooserMeasuresAsTheDecision(t *testing.T) {
	const rows, cols, bands = 12, 12, 16
	rng := rand.New(rand.NewPCG(2, 3))
	s := Scene{Rows: rows, Cols: cols, Bands: bands, Data: make([]float32, rows*cols*bands)}
	for i := range rows * cols {
		k := (i % cols) / 4
		for b := range bands {
			s.Data[i*bands+b] = float32(1 + 0.3*float64(k)*math.Cos(float64(b)/3) + 0.05*rng.NormFloat64())
		}
	}
	idx := []int{0, 5, 9, 14, 18, 22, 26, 31, 35, 40, 44, 47, 52, 56, 60}
	y := make([]int32, len(idx))
	for t, i := range idx {
		y[t] = int32((i % cols) / 4)
	}
	outs, err := leaveOut(s, idx, y, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	sample := sampleTrain(y, 3, 1) // outs' order: the sample's
	if len(outs) != len(sample) {
		t.Fatalf("%d left out, %d sampled", len(outs), len(sample))
	}
	for q, o := range outs {
		var spectra []float32
		var class []int
		for _, t := range sample {
			if t != sample[q] {
				i := idx[t]
				spectra = append(spectra, s.Data[i*bands:(i+1)*bands]...)
				class = append(class, int(y[t]))
			}
		}
		r, err := NewSpectralReference(spectra, bands, class, 3)
		if err != nil {
			t.Fatal(err)
		}
		r0, c0 := idx[sample[q]]/cols, idx[sample[q]]%cols
		for j := range o.dr {
			p := (r0+o.dr[j])*cols + c0 + o.dc[j]
			d := make([]float32, 3)
			if err := r.ClassDistances(s.Data[p*bands:(p+1)*bands], nil, d); err != nil {
				t.Fatal(err)
			}
			for c := range d {
				if diff := math.Abs(angleOf(float64(d[c])) - o.angle[j][c]); diff > 2e-3 {
					t.Fatalf("left out %d, window pixel %d, class %d: reference %g rad, choice %g", q, j, c, angleOf(float64(d[c])), o.angle[j][c])
				}
			}
		}
	}
}

// TestPenaltyPiMeasuresTheAlignedGroupAlone: at the copy penalty pi a
// scene is measured against the group it aligns to alone (a reference of
// that group's spectra, built once); its distances are those of the whole
// reference's, where the other groups' angles plus pi never win: bit for
// bit where the copies are measured copy by copy, within float32 rounding
// where their dots come from the linear basis; on clean and changed
// scenes, to the nearest and to the local mean.
func TestPenaltyPiMeasuresTheAlignedGroupAlone(t *testing.T) {
	const bands, classes, pixels = 36, 3, alignMinPixels + 100
	rng := rand.New(rand.NewPCG(6, 7))
	var plain []float32
	var class []int
	for i := range 12 {
		c := i % classes
		for b := range bands {
			plain = append(plain, float32(1+0.3*float64(c)*math.Sin(float64(b)/4)+0.05*rng.NormFloat64()))
		}
		class = append(class, c)
	}
	changes := referenceChanges(DefaultAugment)
	var changed [][]float32
	for _, r := range changes {
		changed = append(changed, changedSpectra(plain, bands, r))
	}
	for _, g := range []int{-1, 0, 7, len(changes) - 1} {
		px := make([]float32, 0, pixels*bands)
		for p := range pixels {
			v := make([]float32, bands)
			for b := range v {
				v[b] = plain[(p%len(class))*bands+b] * float32(1+0.04*rng.NormFloat64())
			}
			if g >= 0 {
				v = changedSpectra(v, bands, changes[g])
			}
			px = append(px, v...)
		}
		for _, mean := range []int{0, 2} {
			for _, linear := range []bool{false, true} {
				build := func(penaltyRad float64) (*SpectralReference, error) {
					if linear {
						return newChangedReferenceMean(plain, bands, class, classes, changes, penaltyRad, mean)
					}
					return newReference(plain, bands, class, classes, changed, nil, penaltyRad, mean)
				}
				r, err := build(math.Pi)
				if err != nil {
					t.Fatal(err)
				}
				if r.groupSpectra == nil {
					t.Fatal("penalty pi: no group alone")
				}
				got := make([]float32, pixels*classes)
				if err := r.ClassDistances(px, nil, got); err != nil {
					t.Fatal(err)
				}
				if g >= 0 && r.alignedGroup(px, nil) != g+1 {
					t.Fatalf("scene changed by %d aligned to group %d", g, r.alignedGroup(px, nil)-1)
				}
				whole, _ := build(math.Pi)
				whole.groupSpectra = nil // every group measured, the others penalised by pi
				if whole.gram != nil {
					t.Fatal("penalty pi: the whole reference built Gram matrices it never uses")
				}
				// Under pi the whole reference keeps none; one of the same
				// references under another penalty has them.
				withGram, _ := build(0)
				whole.gram = withGram.gram
				want := make([]float32, pixels*classes)
				if err := whole.ClassDistances(px, nil, want); err != nil {
					t.Fatal(err)
				}
				// With the linear basis the whole reference's dots differ
				// from the copies' own in the last bits, which can rank
				// two near-tied references of a local mean the other way.
				apart := 0
				for i := range got {
					if math.Float32bits(got[i]) == math.Float32bits(want[i]) || (linear && math.Abs(float64(got[i]-want[i])) <= 2e-6) {
						continue
					}
					apart++
					if !linear || math.Abs(float64(got[i]-want[i])) > 1e-3 || apart > len(got)/200 {
						t.Fatalf("scene changed by %d, local mean %d, linear basis %v: distance %d alone %g, whole %g (%d apart)", g, mean, linear, i, got[i], want[i], apart)
					}
				}
			}
		}
	}
}

// TestAlignMinPixels: a scene changed as a group of copies is aligned to
// it when alignMinPixels pixels or more are sampled, and to the spectra
// below.
func TestAlignMinPixels(t *testing.T) {
	const bands, classes = 30, 3
	rng := rand.New(rand.NewPCG(8, 9))
	var plain []float32
	var class []int
	for i := range 9 {
		for b := range bands {
			plain = append(plain, float32(1+0.3*float64(i%classes)*math.Sin(float64(b)/4)+0.05*rng.NormFloat64()))
		}
		class = append(class, i%classes)
	}
	changes := referenceChanges(DefaultAugment)
	r, err := newChangedReferenceMean(plain, bands, class, classes, changes, math.Pi, DecisionLocalMean)
	if err != nil {
		t.Fatal(err)
	}
	const g = 2
	for _, n := range []int{alignMinPixels - 1, alignMinPixels} {
		px := make([]float32, 0, n*bands)
		for p := range n {
			v := make([]float32, bands)
			for b := range v {
				v[b] = plain[(p%len(class))*bands+b] * float32(1+0.02*rng.NormFloat64())
			}
			px = append(px, changedSpectra(v, bands, changes[g])...)
		}
		want := g + 1
		if n < alignMinPixels {
			want = 0
		}
		if got := r.alignedGroup(px, nil); got != want {
			t.Errorf("%d pixels aligned to %d, want %d", n, got, want)
		}
	}
}

// TestDecisionValidateLocalMean: a local mean of 0 (files before it) to
// maxLocalMean validates; a negative or larger one is refused naming it.
func TestDecisionValidateLocalMean(t *testing.T) {
	for _, tc := range []struct {
		k  int
		ok bool
	}{{0, true}, {1, true}, {DecisionLocalMean, true}, {maxLocalMean, true}, {-1, false}, {maxLocalMean + 1, false}} {
		err := Decision{Mode: DecisionFused, TemperatureRad: 0.01, LocalMean: tc.k}.validate()
		if (err == nil) != tc.ok {
			t.Errorf("local mean %d: error %v, want ok %v", tc.k, err, tc.ok)
		}
	}
}

// TestMeanDot2MatchesK: the local mean of two in registers (meanDot2)
// returns the general insertion's value (meanDotK) bit for bit, on random
// dots, on dots with ties (which of equal dots is taken decides the Gram
// entries read) and with a NaN among them.
func TestMeanDot2MatchesK(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, m := range []int{2, 3, 5, 15, 40} {
		gram := make([]float32, m*m)
		for i := range m {
			for j := 0; j <= i; j++ {
				v := rng.Float32()
				if i == j {
					v = 1
				}
				gram[i*m+j], gram[j*m+i] = v, v
			}
		}
		r := &SpectralReference{localMean: 2, gram: [][][]float32{{gram}}}
		for trial := range 300 {
			dots := make([]float32, m)
			for j := range dots {
				switch trial % 3 {
				case 0:
					dots[j] = rng.Float32()*2 - 1
				case 1: // few distinct values: many ties
					dots[j] = float32(rng.IntN(3)) / 4
				default:
					dots[j] = rng.Float32()
					if j == rng.IntN(m) {
						dots[j] = float32(math.NaN())
					}
				}
			}
			got := r.meanDot2(dots, gram, m)
			want := r.meanDotK(dots, 0, m, 0, 0, 2)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("m %d, dots %v: meanDot2 %v, meanDotK %v", m, dots, got, want)
			}
		}
	}
}
