package drift

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddPixelMatchesScalar: the vector form of a pixel's per-band sums
// gives addPixelScalar's sums and counts bit for bit, with NaN and
// infinities among the values and band counts that leave a remainder.
func TestAddPixelMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nb := range []int{1, 3, 4, 7, 8, 200, 203} {
		sum, bad := make([]float64, nb), make([]float64, nb)
		wsum, wbad := make([]float64, nb), make([]float64, nb)
		px := make([]float32, nb)
		for range 500 {
			for b := range px {
				switch rng.IntN(40) {
				case 0:
					px[b] = float32(math.NaN())
				case 1:
					px[b] = float32(math.Inf(1 - 2*rng.IntN(2)))
				default:
					px[b] = float32(rng.NormFloat64() * 1e4)
				}
			}
			addPixel(sum, bad, px)
			addPixelScalar(wsum, wbad, px)
		}
		for b := range nb {
			if math.Float64bits(sum[b]) != math.Float64bits(wsum[b]) || bad[b] != wbad[b] {
				t.Fatalf("%d bands, band %d: sum %v bad %v, want %v and %v", nb, b, sum[b], bad[b], wsum[b], wbad[b])
			}
		}
	}
}

// BenchmarkAddSpectra adds a bench-big tile's window (408 x 408 pixels of
// 200 bands, all valid) to a meter's band sums.
func BenchmarkAddSpectra(b *testing.B) {
	const px, nb = 408 * 408, 200
	d, err := NewMeter(&Stats{BandMean: make([]float32, nb)}, Thresholds{})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]float32, px*nb)
	for i := range data {
		data[i] = float32(i % 4093)
	}
	b.SetBytes(int64(len(data) * 4))
	for b.Loop() {
		d.AddSpectra(data, nil)
	}
}
