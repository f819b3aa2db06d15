package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pnec/pnec/internal/threadcpu"
)

// TestDots8SameAsDotsSIMD: the 8-pixel kernel gives every pixel's dots bit
// for bit as the one-pixel and four-pixel kernels do (the spectral
// reliability must not depend on how pixels are grouped), for band counts
// around the kernel's two-step unrolling, reference counts of one and
// several 32-blocks, and one to five groups of 8 pixels a call.
func TestDots8SameAsDotsSIMD(t *testing.T) {
	if !HaveDots8(DotsPadding()) {
		t.Skip("no AVX2 and FMA (or no GOEXPERIMENT=simd): Dots8 does not run here")
	}
	checkDots8(t)
}

// checkDots8 is TestDots8SameAsDotsSIMD on the kernel the machine selects.
func checkDots8(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, bands := range []int{1, 2, 3, 103, 200, 224} {
		for _, padded := range []int{32, 128} {
			for _, pixels := range []int{8, 16, 40, 64} {
				unitT := make([]float32, bands*padded)
				for i := range unitT {
					unitT[i] = rng.Float32() - 0.5
				}
				s := make([]float32, pixels*bands)
				for i := range s {
					s[i] = 1000 * rng.Float32()
				}
				got := make([]float32, pixels*padded)
				for i := range got {
					got[i] = 7 // what was there must not count
				}
				Dots8(Dots8Table(unitT, padded, bands), padded, bands, s, got)
				var px, four [4][]float32
				for p := range four {
					four[p] = make([]float32, padded)
				}
				one := make([]float32, padded)
				for q := 0; q < pixels; q += 4 {
					for p := range 4 {
						px[p] = s[(q+p)*bands : (q+p+1)*bands]
					}
					Dots4SIMD(unitT, padded, &px, &four)
					for p := range 4 {
						DotsSIMD(unitT, padded, px[p], one)
						for j := range padded {
							g := got[(q+p)*padded+j]
							if g != one[j] || g != four[p][j] {
								t.Fatalf("%d bands, %d references, %d pixels: pixel %d reference %d: Dots8 %v, DotsSIMD %v, Dots4SIMD %v", bands, padded, pixels, q+p, j, g, one[j], four[p][j])
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkDots8 reports Dots8's throughput on a fused model's reference
// (3,264 references of 200 bands: 8 classes of 15 training spectra and
// their 26 changed copies, padded), 4,096 pixels an op given to it 8, 32
// and 64 pixels a call, in GFLOP per second of the thread's own CPU time
// (steady under load): a call reads each 32-reference block once for all
// its pixels (model.dots8Pixels).
func BenchmarkDots8(b *testing.B) {
	if !HaveDots8(DotsPadding()) {
		b.Skip("no AVX-512 (or no GOEXPERIMENT=simd): Dots8 does not run here")
	}
	const bands, padded, pixels = 200, 3264, 4096
	rng := rand.New(rand.NewPCG(5, 6))
	unitT := make([]float32, bands*padded)
	for i := range unitT {
		unitT[i] = rng.Float32() - 0.5
	}
	table := Dots8Table(unitT, padded, bands)
	s := make([]float32, pixels*bands)
	for i := range s {
		s[i] = 1000 * rng.Float32()
	}
	for _, per := range []int{8, 32, 64} {
		b.Run(fmt.Sprintf("pixels-%d", per), func(b *testing.B) {
			dots := make([]float32, per*padded)
			t0 := threadcpu.Seconds()
			for b.Loop() {
				for p := 0; p < pixels; p += per {
					Dots8(table, padded, bands, s[p*bands:(p+per)*bands], dots)
				}
			}
			b.ReportMetric(2*float64(bands*padded*pixels)*float64(b.N)/(threadcpu.Seconds()-t0)/1e9, "GFLOP/cpu-s")
		})
	}
}

// TestMaxInto: the vector maximum is the scalar one at every length
// around the vector widths.
func TestMaxInto(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := range 70 {
		dst, src := make([]float32, n), make([]float32, n+3)
		for i := range dst {
			dst[i] = rng.Float32() - 0.5
		}
		for i := range src {
			src[i] = rng.Float32() - 0.5
		}
		want := slices.Clone(dst)
		maxIntoScalar(want, src)
		MaxInto(dst, src)
		if !slices.Equal(dst, want) {
			t.Fatalf("%d values: got %v, want %v", n, dst, want)
		}
	}
}

// randomSpans cuts [0, n) into consecutive spans of random lengths (0 to
// max), as a reference's classes hold their dots.
func randomSpans(rng *rand.Rand, n, maxLen int) [][2]int {
	var spans [][2]int
	for lo := 0; lo < n; {
		hi := min(n, lo+rng.IntN(maxLen+1))
		spans = append(spans, [2]int{lo, hi})
		lo = hi
	}
	return spans
}

// TestSpanMax: each span's vector maximum is the scalar one, for spans of
// every length from 0 to 3 vectors and more, at every offset, in values
// from shorter than a vector to several; an empty span leaves its value.
func TestSpanMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for n := range 120 {
		for _, maxLen := range []int{1, 7, 15, 16, 17, 40} {
			src := make([]float32, n)
			for i := range src {
				src[i] = rng.Float32() - 0.5
			}
			spans := randomSpans(rng, n, maxLen)
			got, want := make([]float32, len(spans)), make([]float32, len(spans))
			for c := range got {
				got[c], want[c] = 7, 7 // kept by empty spans
			}
			spanMaxScalar(want, src, spans)
			SpanMax(got, src, spans)
			if !slices.Equal(got, want) {
				t.Fatalf("%d values, spans %v: got %v, want %v", n, spans, got, want)
			}
		}
	}
	// The scalar loop is the maximum it says.
	got := make([]float32, 2)
	spanMaxScalar(got, []float32{1, -3, 2, 5, 4}, [][2]int{{0, 3}, {3, 5}})
	if got[0] != 2 || got[1] != 5 {
		t.Errorf("spanMaxScalar: got %v, want [2 5]", got)
	}
}

// TestCombine: the vector Combine gives combineScalar's values bit for bit
// (no fused multiply-add), with and without b1, at every length across
// the 16- and 8-lane blocks and the tail; and the scalar one is the
// arithmetic it says: (b0 + a*b1) * coef, each step rounded to float32.
func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for n := range 70 {
		b0, b1, coef := make([]float32, n+2), make([]float32, n+2), make([]float32, n+2)
		for i := range b0 {
			b0[i], b1[i], coef[i] = 2*rng.Float32()-1, 2*rng.Float32()-1, 0.5+rng.Float32()
		}
		for _, a := range []float32{-0.25, 0.125} {
			for _, withB1 := range []bool{true, false} {
				var x1 []float32
				if withB1 {
					x1 = b1
				}
				got, want := make([]float32, n), make([]float32, n)
				Combine(got, b0, x1, a, coef)
				combineScalar(want, b0, x1, a, coef)
				if !slices.Equal(got, want) {
					t.Fatalf("%d values, a %g, b1 %v: got %v, want %v", n, a, withB1, got, want)
				}
				for i := range want {
					v := b0[i]
					if withB1 {
						p := a * b1[i]
						v += p
					}
					if v *= coef[i]; want[i] != v {
						t.Fatalf("value %d: %g, want %g", i, want[i], v)
					}
				}
			}
		}
	}
}

// TestDotsF64SameAsLoop: DotsF64 (the vector kernel where the machine has
// it) and DotsF64Scalar give each dot bit for bit as a plain loop over the
// reference's bands does, the arithmetic the fused decision's choices at
// training were made with before the kernel (model.leaveOut), for
// reference counts around the 16- and 4-reference blocks and band counts
// of one and of real scenes.
func TestDotsF64SameAsLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, bands := range []int{1, 103, 224} {
		for _, n := range []int{1, 3, 4, 5, 16, 17, 35, 2430} {
			u := make([]float64, bands)
			for b := range u {
				u[b] = rng.NormFloat64()
			}
			refs := make([][]float64, n)
			refsT := make([]float64, bands*n)
			for j := range refs {
				refs[j] = make([]float64, bands)
				for b := range refs[j] {
					refs[j][b] = rng.NormFloat64() * 1e3
					refsT[b*n+j] = refs[j][b]
				}
			}
			want := make([]float64, n)
			for j, r := range refs {
				d := 0.0
				for b, v := range r {
					d += v * u[b]
				}
				want[j] = d
			}
			for name, f := range map[string]func(u, refsT, dots []float64){"DotsF64": DotsF64, "DotsF64Scalar": DotsF64Scalar} {
				got := make([]float64, n)
				for j := range got {
					got[j] = float64(j) // overwritten, not added to
				}
				f(u, refsT, got)
				for j := range want {
					if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
						t.Fatalf("%s, %d bands, %d references: dot %d = %v, loop %v", name, bands, n, j, got[j], want[j])
					}
				}
			}
		}
	}
}

// BenchmarkDotsF64 times the dots of one pixel with SalinasA's 90 training
// spectra and their 26 copies each (2430 references, 204 bands), as the
// decision's choices at training take them for every pixel of each
// left-out pixel's window.
func BenchmarkDotsF64(b *testing.B) {
	const bands, n = 204, 2430
	u := make([]float64, bands)
	refsT := make([]float64, bands*n)
	for i := range refsT {
		refsT[i] = float64(i%13) * 0.01
	}
	for i := range u {
		u[i] = float64(i%7) * 0.1
	}
	dots := make([]float64, n)
	for _, k := range []struct {
		name string
		f    func(u, refsT, dots []float64)
	}{{"kernel", DotsF64}, {"scalar", DotsF64Scalar}} {
		b.Run(k.name, func(b *testing.B) {
			t0 := threadcpu.Seconds()
			for b.Loop() {
				k.f(u, refsT, dots)
			}
			b.ReportMetric((threadcpu.Seconds()-t0)/float64(b.N)*1e6, "cpu-us/op")
		})
	}
}
