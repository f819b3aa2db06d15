//go:build !(goexperiment.simd && amd64)

package kernels

// HaveSIMD is false without GOEXPERIMENT=simd on amd64: the scalar kernel runs.
const HaveSIMD = false

func DotsSIMD(unitT []float32, padded int, s, dots []float32) { DotsScalar(unitT, padded, s, dots) }

func Dots4SIMD(unitT []float32, padded int, s *[4][]float32, dots *[4][]float32) {
	for p := range s {
		DotsScalar(unitT, padded, s[p], dots[p])
	}
}

// have512 is false without GOEXPERIMENT=simd on amd64.
const have512 = false

// HaveDots8 is false without GOEXPERIMENT=simd on amd64: callers take
// Dots4SIMD.
func HaveDots8(padded int) bool { return false }

// Dots8Run is 8 here, where Dots8 does not run.
func Dots8Run() int { return 8 }

// Dots8 is not available here (HaveDots8).
func Dots8(table []float32, padded, bands int, s, dots []float32) { panic("Dots8 without AVX-512") }

// MaxInto sets dst[i] = max(dst[i], src[i]) for every i < len(dst).
func MaxInto(dst, src []float32) { maxIntoScalar(dst, src) }

// Combine sets dst[i] = (b0[i] + a*b1[i]) * coef[i] (b1 nil: b0[i] *
// coef[i]) for every i < len(dst), each product and sum rounded on its own.
func Combine(dst, b0, b1 []float32, a float32, coef []float32) { combineScalar(dst, b0, b1, a, coef) }

// SpanMax sets dst[c] to the largest of src[spans[c][0]:spans[c][1]] for
// every non-empty span (empty ones leave dst[c] as it is).
func SpanMax(dst, src []float32, spans [][2]int) { spanMaxScalar(dst, src, spans) }

// DotsF64 is DotsF64Scalar here.
func DotsF64(u, refsT, dots []float64) { DotsF64Scalar(u, refsT, dots) }
