package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// alignmentSumsOnePixel is alignmentSums as it was computed before the
// sampled pixels went through the 8-pixel kernel: one pixel at a time
// (pixelDots), each group's nearest by a scalar loop over its spans.
func alignmentSumsOnePixel(r *SpectralReference, spectra []float32, valid []bool) []float64 {
	n := len(spectra) / r.bands
	step := max(1, n/alignSamplePixels)
	sum := make([]float64, 1+len(r.groupSpan))
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
		for g := range sum {
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
			sum[g] += angleOf(1 - math.Min(1, float64(best)*inv))
		}
	}
	return sum
}

// TestAlignmentSumsOnePixelAtATime: the alignment's sums over its sample
// are those of one pixel at a time, bit for bit, for references with and
// without the linear basis, over scenes shorter than the kernel's eight
// pixels, not a multiple of them, larger than the sample (every k-th
// pixel), with pixels not valid, of zero length and not finite.
func TestAlignmentSumsOnePixelAtATime(t *testing.T) {
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
					want := alignmentSumsOnePixel(r, px, v)
					got := r.alignmentSums(px, v)
					if !slices.Equal(got, want) {
						t.Fatalf("sums %v, want %v", got, want)
					}
					if want[0] == 0 && n > 8 {
						t.Fatal("no pixel counted: the test measures nothing")
					}
				})
			}
		}
	}
}

// BenchmarkAlignmentSums is the alignment of one 384 px tile (its sample
// of 4,096 pixels) for bench-big's model size, 8 classes of 15 training
// pixels of 200 bands and the default augmentation's changed groups on
// the linear basis, as classify aligns it ("kernel") and one pixel at a
// time as it was aligned before ("one pixel"), in the same run.
func BenchmarkAlignmentSums(b *testing.B) {
	r, px, _ := bigModelTile(b, true)
	b.Run("kernel", func(b *testing.B) {
		for b.Loop() {
			r.alignmentSums(px, nil)
		}
	})
	b.Run("one pixel", func(b *testing.B) {
		for b.Loop() {
			alignmentSumsOnePixel(r, px, nil)
		}
	})
}
