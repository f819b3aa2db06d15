package transpose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// reference is BandsToPixels one sample at a time.
func reference[T int16 | uint16 | uint8 | float32](bsq []T, data []float32, cols, rows, nb, rowPixels int) {
	for r := range rows {
		for c := range cols {
			for b := range nb {
				data[(r*rowPixels+c)*nb+b] = float32(bsq[b*cols*rows+r*cols+c])
			}
		}
	}
}

// check compares BandsToPixels with reference bit for bit on random
// samples from gen, with a row stride wider than the window (the gap
// left untouched).
func check[T int16 | uint16 | uint8 | float32](t *testing.T, gen func(*rand.Rand) T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, tc := range []struct{ cols, rows, nb, extra int }{
		{1, 1, 1, 0}, {8, 1, 8, 0}, {7, 3, 9, 2}, {9, 2, 17, 0}, {33, 5, 200, 3},
		{300, 2, 24, 0}, {257, 3, 11, 1}, {16, 16, 224, 0}, {520, 1, 16, 4},
	} {
		t.Run(fmt.Sprintf("%dx%dx%d+%d", tc.cols, tc.rows, tc.nb, tc.extra), func(t *testing.T) {
			bsq := make([]T, tc.cols*tc.rows*tc.nb)
			for i := range bsq {
				bsq[i] = gen(rng)
			}
			rp := tc.cols + tc.extra
			got := make([]float32, tc.rows*rp*tc.nb)
			want := make([]float32, len(got))
			for i := range got {
				got[i], want[i] = -7, -7
			}
			BandsToPixels(bsq, got, tc.cols, tc.rows, tc.nb, rp)
			reference(bsq, want, tc.cols, tc.rows, tc.nb, rp)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("sample %d (pixel %d, band %d): %v, want %v", i, i/tc.nb, i%tc.nb, got[i], want[i])
				}
			}
		})
	}
}

func TestBandsToPixels(t *testing.T) {
	t.Run("int16", func(t *testing.T) { check(t, func(r *rand.Rand) int16 { return int16(r.Uint32()) }) })
	t.Run("uint16", func(t *testing.T) { check(t, func(r *rand.Rand) uint16 { return uint16(r.Uint32()) }) })
	t.Run("uint8", func(t *testing.T) { check(t, func(r *rand.Rand) uint8 { return uint8(r.Uint32()) }) })
	t.Run("float32", func(t *testing.T) {
		check(t, func(r *rand.Rand) float32 {
			if r.IntN(50) == 0 {
				return float32(math.NaN())
			}
			return float32(r.NormFloat64() * 1e3)
		})
	})
}

// BenchmarkBandsToPixels transposes a bench-big tile's window (408 x 408
// pixels of 200 Int16 bands).
func BenchmarkBandsToPixels(b *testing.B) {
	const cols, rows, nb = 408, 408, 200
	bsq := make([]int16, cols*rows*nb)
	for i := range bsq {
		bsq[i] = int16(i * 7919)
	}
	data := make([]float32, len(bsq))
	b.SetBytes(int64(len(bsq) * 2))
	for b.Loop() {
		BandsToPixels(bsq, data, cols, rows, nb, cols)
	}
}
