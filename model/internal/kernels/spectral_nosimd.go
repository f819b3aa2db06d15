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
