package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
)

// scanOracle is the plain sequential recurrence the chunked scan must match:
// h_t = exp(dA_t) h_{t-1} + x_t B_t^T (per head, h [P][N]), y_t = h_t C_t.
func scanOracle(x []float64, dA []float64, b, c []float64, l, h, p, n int) []float64 {
	y := make([]float64, l*h*p)
	state := make([]float64, h*p*n)
	for t := 0; t < l; t++ {
		for hh := 0; hh < h; hh++ {
			decay := math.Exp(dA[t*h+hh])
			for pp := 0; pp < p; pp++ {
				xv := x[(t*h+hh)*p+pp]
				var acc float64
				for nn := 0; nn < n; nn++ {
					i := (hh*p+pp)*n + nn
					state[i] = decay*state[i] + xv*b[t*n+nn]
					acc += state[i] * c[t*n+nn]
				}
				y[(t*h+hh)*p+pp] = acc
			}
		}
	}
	return y
}

func TestSSDScanMatchesRecurrence(t *testing.T) {
	b := testBackend(t)
	const h, p, n, chunk = 2, 3, 4, 16
	for _, l := range []int{1, 7, 16, 33, 100, 257, 2000} {
		t.Run(fmt.Sprint("L=", l), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(l), 1))
			gen := func(size int, f func() float64) ([]float32, []float64) {
				a, d := make([]float32, size), make([]float64, size)
				for i := range a {
					a[i] = float32(f())
					d[i] = float64(a[i])
				}
				return a, d
			}
			norm := func() float64 { return rng.NormFloat64() }
			x32, x64 := gen(l*h*p, norm)
			// Log decays like the network's: -softplus(.) * exp(alog), mostly small.
			dA32, dA64 := gen(l*h, func() float64 { return -rng.ExpFloat64() * 0.3 })
			b32, b64 := gen(l*n, norm)
			c32, c64 := gen(l*n, norm)
			want := scanOracle(x64, dA64, b64, c64, l, h, p, n)
			out, err := ExecOnce(b, func(x, dA, bb, cc *Node) *Node { return ssdScan(x, dA, bb, cc, chunk, false) },
				tensorOf(x32, l, h, p), tensorOf(dA32, l, h), tensorOf(b32, l, n), tensorOf(c32, l, n))
			if err != nil {
				t.Fatal(err)
			}
			got := tensors.MustCopyFlatData[float32](out)
			var maxErr float64
			for i := range want {
				maxErr = max(maxErr, math.Abs(float64(got[i])-want[i])/(1+math.Abs(want[i])))
			}
			if maxErr > 1e-4 {
				t.Errorf("max relative error %g, want <= 1e-4", maxErr)
			}
			// The inference form (the scores repeated over the heads)
			// computes the same products: the same output bit for bit.
			inf, err := ExecOnce(b, func(x, dA, bb, cc *Node) *Node { return ssdScan(x, dA, bb, cc, chunk, true) },
				tensorOf(x32, l, h, p), tensorOf(dA32, l, h), tensorOf(b32, l, n), tensorOf(c32, l, n))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range tensors.MustCopyFlatData[float32](inf) {
				if math.Float32bits(v) != math.Float32bits(got[i]) {
					t.Fatalf("inference form: output %d is %v, the training form's %v", i, v, got[i])
				}
			}
		})
	}
}
