package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLinearCopies: the fused decision's reference (newChangedReference),
// which makes the changed copies' dots from a basis of 12 products per
// training pixel, gives the distances of the same reference measured copy
// by copy (NewAlignedReference of the changed spectra) within float32
// rounding, and the same nearest class wherever the two nearest classes
// are further apart than that, for every copy penalty (0: every copy in
// full; 0.01 rad; pi: the aligned group alone), band counts that are and
// are not multiples of the vector width, a pixel count with a tail, and
// pixels that are invalid or of zero length. A change the basis cannot
// express (a gain) leaves the copies measured one by one.
func TestLinearCopies(t *testing.T) {
	const tol = 2e-6 // distances (1 - cos) of float32 dots of unit vectors
	changes := referenceChanges(DefaultAugment)
	for _, tc := range []struct{ bands, classes, perClass, pixels int }{
		{200, 8, 15, 2051}, {103, 9, 15, 300}, {7, 3, 1, 37},
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.bands), 11))
		ref, cls := randomReference(rng, tc.bands, tc.classes, tc.perClass)
		var changed [][]float32
		for _, c := range changes {
			changed = append(changed, changedSpectra(ref, tc.bands, c))
		}
		px := make([]float32, tc.pixels*tc.bands)
		for i := range px {
			px[i] = 1000 + 500*rng.Float32()
		}
		// A tilted pixel, so that a copy group aligns, and a zero one.
		for b := range tc.bands {
			px[3*tc.bands+b] *= float32(1 + 0.2*bandPosition(b, tc.bands))
			px[5*tc.bands+b] = 0
		}
		valid := make([]bool, tc.pixels)
		for i := range valid {
			valid[i] = i%97 != 13
		}
		for _, pen := range []float64{0, 0.01, math.Pi} {
			lin, err := newChangedReference(ref, tc.bands, cls, tc.classes, changes, pen)
			if err != nil {
				t.Fatal(err)
			}
			if lin.linear == nil || lin.unitT != nil {
				t.Fatalf("%d bands: the decision reference measures copy by copy, want the linear basis", tc.bands)
			}
			if got, want := lin.linear.setsLen, 12; got != want {
				t.Fatalf("basis of %d sets, want %d (the spectra, 3 shapes, 2 shifts alone and with each shape)", got, want)
			}
			each, err := NewAlignedReference(ref, tc.bands, cls, tc.classes, changed, pen)
			if err != nil {
				t.Fatal(err)
			}
			got, want := make([]float32, tc.pixels*tc.classes), make([]float32, tc.pixels*tc.classes)
			if err := lin.ClassDistances(px, valid, got); err != nil {
				t.Fatal(err)
			}
			if err := each.ClassDistances(px, valid, want); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i := range tc.pixels {
				g, w := got[i*tc.classes:(i+1)*tc.classes], want[i*tc.classes:(i+1)*tc.classes]
				for c := range g {
					gn, wn := math.IsNaN(float64(g[c])), math.IsNaN(float64(w[c]))
					if gn != wn {
						t.Fatalf("%d bands, penalty %g, pixel %d class %d: %g, copy by copy %g", tc.bands, pen, i, c, g[c], w[c])
					}
					if !gn {
						worst = math.Max(worst, math.Abs(float64(g[c]-w[c])))
					}
				}
				if wn := math.IsNaN(float64(w[0])); !wn && clearNearest(w, tol) && nearest(g) != nearest(w) {
					t.Fatalf("%d bands, penalty %g, pixel %d: nearest class %d, copy by copy %d (%v against %v)", tc.bands, pen, i, nearest(g), nearest(w), g, w)
				}
			}
			if worst > tol {
				t.Fatalf("%d bands, penalty %g: distances differ by up to %g from copy by copy, want <= %g", tc.bands, pen, worst, tol)
			}
			t.Logf("%d bands, penalty %g: distances within %.3g of copy by copy", tc.bands, pen, worst)
		}
	}
	gained := append([]Radiometric{{Gain: 1.1}}, changes...)
	r, err := newChangedReference([]float32{1, 2, 3, 3, 2, 1}, 3, []int{0, 1}, 2, gained, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if r.linear != nil || r.unitT == nil {
		t.Fatal("a gain among the changes: want the copies measured one by one")
	}
}

// nearest is the class of the smallest distance.
func nearest(d []float32) int {
	best := 0
	for c, v := range d {
		if v < d[best] {
			best = c
		}
	}
	return best
}

// clearNearest reports whether the smallest distance is below every
// other by more than tol.
func clearNearest(d []float32, tol float64) bool {
	b := nearest(d)
	for c, v := range d {
		if c != b && float64(v-d[b]) <= tol {
			return false
		}
	}
	return true
}
