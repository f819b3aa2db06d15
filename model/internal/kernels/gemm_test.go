package kernels

import (
	"fmt"
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

// TestSgemmPacked checks that sgemm on B packed by packB gives exactly
// sgemm's values on B itself (the same kernel and order of sums), over
// shapes with padded last rows and several blocks of k, and that packB
// refuses a width that is not a whole number of panels.
func TestSgemmPacked(t *testing.T) {
	_, _, nr := gemmKernel()
	if nr == 0 {
		if _, ok := packB(4, 32, make([]float32, 128), 32); ok {
			t.Fatal("packB packed without a micro-kernel")
		}
		t.Skip("no micro-kernel on this machine: sgemm runs its scalar loop and packB refuses")
	}
	if _, ok := packB(4, nr+nr/2, make([]float32, 4*(nr+nr/2)), nr+nr/2); ok {
		t.Errorf("packB packed %d columns, not a multiple of %d", nr+nr/2, nr)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ m, n, k int }{
		{1, 32, 1}, {7, 64, 9}, {24, 128, 128}, {32, 128, 128}, {13, 96, 300}, {50, 128, 600},
	} {
		for _, transA := range []bool{false, true} {
			for _, accum := range []bool{false, true} {
				m, n, k := tc.m, tc.n, tc.k
				ld := n + 5
				a := make([]float32, m*k)
				b := make([]float32, k*ld)
				c := make([]float32, m*ld)
				for _, s := range [][]float32{a, b, c} {
					for i := range s {
						s[i] = float32(rng.NormFloat64())
					}
				}
				rsA, csA := k, 1
				if transA {
					rsA, csA = 1, m
				}
				want := append([]float32(nil), c...)
				sgemm(m, n, k, a, rsA, csA, b, ld, want, ld, accum)
				p, ok := packB(k, n, b, ld)
				if !ok {
					t.Fatalf("%dx%dx%d: packB refused", m, n, k)
				}
				sgemmPacked(m, a, rsA, csA, p, c, ld, accum)
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%dx%dx%d transA=%v accum=%v: c[%d] = %g, sgemm %g", m, n, k, transA, accum, i, c[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkSgemmWinograd times the Winograd stage's products as FullRes
// makes them: 36 products [m x 128] x [128 x 128], each with its own
// weight matrix (2.25 MiB in all, past a core's L2 cache), m tiles at a
// time, with B row-major and packed, in GFLOP per second of the thread's
// CPU time.
func BenchmarkSgemmWinograd(b *testing.B) {
	for _, packed := range []bool{false, true} {
		for _, m := range []int{18, 24, 32, 96} {
			b.Run(fmt.Sprintf("packed=%v/m=%d", packed, m), func(b *testing.B) {
				const n, k = 128, 128
				a := make([]float32, 36*m*k)
				w := make([]float32, 36*k*n)
				c := make([]float32, 36*m*n)
				for i := range a {
					a[i] = float32(i%7) * 0.1
				}
				for i := range w {
					w[i] = float32(i%5) * 0.1
				}
				var ps []PackedB
				if packed {
					for xi := 0; xi < 36; xi++ {
						p, ok := packB(k, n, w[xi*k*n:], n)
						if !ok {
							b.Skip("no micro-kernel to pack for")
						}
						ps = append(ps, p)
					}
				}
				t0 := threadcpu.Seconds()
				for b.Loop() {
					for xi := 0; xi < 36; xi++ {
						if packed {
							sgemmPacked(m, a[xi*m*k:], k, 1, ps[xi], c[xi*m*n:], n, false)
						} else {
							sgemm(m, n, k, a[xi*m*k:], k, 1, w[xi*k*n:], n, c[xi*m*n:], n, false)
						}
					}
				}
				b.ReportMetric(36*2*float64(m*n*k)*float64(b.N)/(threadcpu.Seconds()-t0)/1e9, "GFLOP/cpu-s")
			})
		}
	}
}
