package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pnec/pnec/internal/threadcpu"
)

// TestSgemm checks sgemm against a float64 product over shapes that hit
// the micro-kernel, the padded last rows, the scalar columns and several
// blocks of k, with transposed and strided views of A and accumulation.
func TestSgemm(t *testing.T) { checkSgemm(t) }

// checkSgemm is TestSgemm on the kernel the machine selects.
func checkSgemm(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ m, n, k int }{
		{1, 32, 1}, {8, 32, 7}, {13, 64, 130}, {16, 128, 128}, {29, 48, 300}, {8, 16, 5}, {103, 128, 700}, {5, 1152, 128},
	} {
		for _, transA := range []bool{false, true} {
			for _, accum := range []bool{false, true} {
				m, n, k := tc.m, tc.n, tc.k
				ld := n + 3 // strided B and C
				a := make([]float32, m*k+5)
				b := make([]float32, k*ld)
				c := make([]float32, m*ld)
				for i := range a {
					a[i] = float32(rng.NormFloat64())
				}
				for i := range b {
					b[i] = float32(rng.NormFloat64())
				}
				for i := range c {
					c[i] = float32(rng.NormFloat64())
				}
				rsA, csA := k, 1
				if transA {
					rsA, csA = 1, m
				}
				want := make([]float64, m*n)
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						s := 0.0
						if accum {
							s = float64(c[i*ld+j])
						}
						for p := 0; p < k; p++ {
							s += float64(a[i*rsA+p*csA]) * float64(b[p*ld+j])
						}
						want[i*n+j] = s
					}
				}
				sgemm(m, n, k, a, rsA, csA, b, ld, c, ld, accum)
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						if d := math.Abs(float64(c[i*ld+j]) - want[i*n+j]); d > 1e-4*math.Sqrt(float64(k)) {
							t.Fatalf("%dx%dx%d transA=%v accum=%v: c[%d][%d] = %g, want %g", m, n, k, transA, accum, i, j, c[i*ld+j], want[i*n+j])
						}
					}
				}
			}
		}
	}
}

// BenchmarkSgemm reports sgemm's throughput on the paper encoder's product
// shapes, in GFLOP per second of the thread's own CPU time (steady under load).
func BenchmarkSgemm(b *testing.B) {
	for _, tc := range []struct {
		name    string
		m, n, k int
	}{{"winograd-1360x128x128", 1360, 128, 128}, {"embed-2720x128x103", 2720, 128, 103}, {"im2col-2720x128x1152", 2720, 128, 1152}} {
		b.Run(tc.name, func(b *testing.B) {
			a := make([]float32, tc.m*tc.k)
			w := make([]float32, tc.k*tc.n)
			c := make([]float32, tc.m*tc.n)
			for i := range a {
				a[i] = float32(i%7) * 0.1
			}
			for i := range w {
				w[i] = float32(i%5) * 0.1
			}
			t0 := threadcpu.Seconds()
			for b.Loop() {
				sgemm(tc.m, tc.n, tc.k, a, tc.k, 1, w, tc.n, c, tc.n, false)
			}
			b.ReportMetric(2*float64(tc.m*tc.n*tc.k)*float64(b.N)/(threadcpu.Seconds()-t0)/1e9, "GFLOP/cpu-s")
		})
	}
}
