package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// alignmentAnglesOnePixel is alignmentAngles as it was computed before
// the sampled pixels went through the 8-pixel kernel: one pixel at a time
// (pixelDots), each group's nearest by a scalar loop over its spans.
func alignmentAnglesOnePixel(r *SpectralReference, spectra []float32, valid []bool) []float64 {
	n := len(spectra) / r.bands
	step := max(1, n/alignSamplePixels)
	var angles []float64
	dots := make([]float32, r.dotsLen())
	for i := 0; i < n; i += step {
		if valid != nil && !valid[i] {
			continue
		}
		s := spectra[i*r.bands : (i+1)*r.bands]
		norm := squaredLength(s)
		if !(norm > 0) || math.IsInf(float64(norm), 0) {
			continue
		}
		r.pixelDots(s, dots)
		inv := 1 / math.Sqrt(float64(norm))
		for g := range 1 + len(r.groupSpan) {
			span := r.span
			if g > 0 {
				span = r.groupSpan[g-1]
			}
			best := float32(-2)
			for _, sp := range span {
				if sp[0] < sp[1] {
					best = max(best, maxDot(dots[sp[0]:sp[1]]))
				}
			}
			angles = append(angles, angleOf(1-math.Min(1, float64(best)*inv)))
		}
	}
	return angles
}

// TestAlignmentAnglesOnePixelAtATime: the alignment's angles over its
// sample are those of one pixel at a time, bit for bit, for references with and
// without the linear basis, over scenes shorter than the kernel's eight
// pixels, not a multiple of them, larger than the sample (every k-th
// pixel), with pixels not valid, of zero length and not finite.
func TestAlignmentAnglesOnePixelAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	const bands, classes, per = 200, 5, 7
	ref, cls := randomReference(rng, bands, classes, per)
	changes := referenceChanges(DefaultAugment)
	var changed [][]float32
	for _, c := range changes {
		changed = append(changed, changedSpectra(ref, bands, c))
	}
	plain, err := NewAlignedReference(ref, bands, cls, classes, changed, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	linear, err := newChangedReference(ref, bands, cls, classes, changes, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*SpectralReference{"copies": plain, "linear basis": linear} {
		for _, n := range []int{1, 5, 8, 13, 64, 203, 5000, 9001} {
			px := make([]float32, n*bands)
			for i := range px {
				px[i] = 1000 + 500*rng.Float32()
			}
			valid := make([]bool, n)
			for i := range valid {
				valid[i] = rng.IntN(7) != 0
			}
			if n > 3 {
				clear(px[2*bands : 3*bands])                    // zero length
				px[3*bands+5] = float32(math.Inf(1))            // not finite
				valid[0], valid[2], valid[3] = true, true, true // counted if they could be
			}
			for _, v := range [][]bool{nil, valid} {
				t.Run(fmt.Sprintf("%s/%d pixels/valid mask %v", name, n, v != nil), func(t *testing.T) {
					want := alignmentAnglesOnePixel(r, px, v)
					got := r.alignmentAngles(px, v)
					if !slices.Equal(got, want) {
						t.Fatalf("angles %v, want %v", got, want)
					}
					if len(want) == 0 && n > 8 {
						t.Fatal("no pixel counted: the test measures nothing")
					}
				})
			}
		}
	}
}

// BenchmarkAlignmentAngles is the alignment of one 384 px tile (its sample
// of 4,096 pixels) for bench-big's model size, 8 classes of 15 training
// pixels of 200 bands and the default augmentation's changed groups on
// the linear basis, as classify aligns it ("kernel") and one pixel at a
// time as it was aligned before ("one pixel"), in the same run.
func BenchmarkAlignmentAngles(b *testing.B) {
	r, px, _ := bigModelTile(b, true)
	b.Run("kernel", func(b *testing.B) {
		for b.Loop() {
			r.alignmentAngles(px, nil)
		}
	})
	b.Run("one pixel", func(b *testing.B) {
		for b.Loop() {
			alignmentAnglesOnePixel(r, px, nil)
		}
	})
}

// TestAlignFrom: the group aligned is judged on the purest quarter of the
// sample, and a group of copies only where it fits those pixels at least
// alignMinGain closer than the spectra. Each case gives every pixel's
// angles to groups 0 (the spectra), 1 and 2.
func TestAlignFrom(t *testing.T) {
	// pixels repeats a pixel's angles n times.
	pixels := func(n int, a ...float64) []float64 {
		var out []float64
		for range n {
			out = append(out, a...)
		}
		return out
	}
	cases := []struct {
		name   string
		angles []float64
		want   int
	}{
		{"no pixels", nil, 0},
		{"the same acquisition: the spectra fit best", pixels(8, 0.01, 0.03, 0.04), 0},
		// Mixed pixels (the three quarters farthest from every reference)
		// fit group 1 closer by chance, so that its mean over the whole
		// sample is 9% under the spectra's; the pure quarter fits the
		// spectra as well as group 1.
		{"a chance fit of mixed pixels", append(pixels(2, 0.02, 0.02, 0.05), pixels(6, 0.12, 0.10, 0.13)...), 0},
		{"a tilt: the pure pixels fit group 2 20% closer", append(pixels(2, 0.05, 0.06, 0.04), pixels(6, 0.12, 0.12, 0.11)...), 2},
		{"a gain under alignMinGain: 4%", append(pixels(2, 0.050, 0.048, 0.06), pixels(6, 0.12, 0.11, 0.13)...), 0},
		{"a gain over alignMinGain: 6%", append(pixels(2, 0.050, 0.047, 0.06), pixels(6, 0.12, 0.11, 0.13)...), 1},
		{"a tie between groups of copies goes to the lower", append(pixels(2, 0.05, 0.03, 0.03), pixels(6, 0.12, 0.12, 0.12)...), 1},
		{"every angle 0", pixels(4, 0, 0, 0), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := alignFrom(tc.angles, 3); got != tc.want {
				t.Fatalf("aligned group %d, want %d", got, tc.want)
			}
		})
	}
	// The rule the cases above check is not the mean's: over the whole
	// sample, the chance fit's group 1 is nearest.
	chance := cases[2].angles
	var sum [3]float64
	for p := 0; p < len(chance); p += 3 {
		for g := range sum {
			sum[g] += chance[p+g]
		}
	}
	if !(sum[1] < 0.95*sum[0]) {
		t.Fatalf("the chance fit's means %v do not favour group 1 by more than alignMinGain: the case checks nothing", sum)
	}
}

// TestTiledRange: spans that follow one another (empty ones anywhere)
// make one range; a gap, an overlap or spans out of order do not, and
// spans that are all empty hold none.
func TestTiledRange(t *testing.T) {
	for _, tc := range []struct {
		spans  [][2]int
		lo, hi int
		ok     bool
	}{
		{[][2]int{{0, 15}, {15, 30}, {30, 45}}, 0, 45, true},
		{[][2]int{{120, 135}, {135, 135}, {135, 150}}, 120, 150, true},
		{[][2]int{{4, 4}, {4, 9}, {9, 9}}, 4, 9, true},
		{[][2]int{{0, 5}, {6, 9}}, 0, 0, false},
		{[][2]int{{0, 5}, {4, 9}}, 0, 0, false},
		{[][2]int{{5, 9}, {0, 5}}, 0, 0, false},
		{[][2]int{{3, 3}, {7, 7}}, 0, 0, false},
		{nil, 0, 0, false},
	} {
		lo, hi, ok := tiledRange(tc.spans)
		if ok != tc.ok || ok && (lo != tc.lo || hi != tc.hi) {
			t.Errorf("tiledRange(%v) = %d, %d, %v; want %d, %d, %v", tc.spans, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}
