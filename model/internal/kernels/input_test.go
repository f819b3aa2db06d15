package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestInputKernelsMatchScalar checks the vector input kernels against
// their one-band-at-a-time forms, bit for bit, on spectra with tails that
// are not a multiple of 8, NaN, infinities, values outside the stretch
// and the shape clip, and each quantisation; the sum on integer counts and
// on reflectances (exact in any order there) and with NaN bands.
func TestInputKernelsMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 7, 8, 13, 103, 200, 224} {
		for _, kind := range []string{"counts", "reflectance", "special"} {
			v := make([]float32, n)
			lo := make([]float32, n)
			scale := make([]float32, n)
			for b := range v {
				switch kind {
				case "counts":
					v[b] = float32(rng.IntN(20000) - 500)
				case "reflectance":
					v[b] = float32(rng.Float64()*0.9 + 1e-4)
				default:
					v[b] = float32(rng.NormFloat64() * 3)
					switch rng.IntN(10) {
					case 0:
						v[b] = float32(math.NaN())
					case 1:
						v[b] = float32(math.Inf(1 - 2*rng.IntN(2)))
					}
				}
				lo[b] = float32(rng.NormFloat64())
				scale[b] = float32(rng.Float64())
				if kind == "counts" {
					lo[b], scale[b] = 100*lo[b], scale[b]/5000
				}
			}
			for _, levels := range []int{0, 1, 2, 256} {
				got := make([]float32, n)
				want := make([]float32, n)
				for b := range got {
					got[b] = float32(b) * 0.01
					want[b] = got[b]
				}
				AddStretch(got, v, lo, scale, levels)
				addStretchScalar(want, v, lo, scale, levels)
				sameBits(t, "AddStretch "+kind, n, got, want)
			}
			got := make([]float32, n)
			want := make([]float32, n)
			inv := float32(0.5 / (1 + rng.Float64()))
			AddShape(got, v, inv, 4)
			addShapeScalar(want, v, inv, 4)
			sameBits(t, "AddShape "+kind, n, got, want)

			s, w := SumNonNaN(v), sumNonNaNScalar(v)
			if kind != "special" && math.Float64bits(s) != math.Float64bits(w) {
				t.Errorf("SumNonNaN %s n=%d: %v, one at a time %v", kind, n, s, w)
			}
			if kind == "special" && !(s == w || math.IsNaN(s) && math.IsNaN(w)) && !(math.Abs(s-w) <= 1e-9*math.Abs(w)) {
				t.Errorf("SumNonNaN special n=%d: %v, one at a time %v", n, s, w)
			}
		}
	}
}

func sameBits(t *testing.T, what string, n int, got, want []float32) {
	t.Helper()
	for b := range got {
		if math.Float32bits(got[b]) != math.Float32bits(want[b]) {
			t.Fatalf("%s n=%d: band %d = %v, one at a time %v", what, n, b, got[b], want[b])
		}
	}
}
