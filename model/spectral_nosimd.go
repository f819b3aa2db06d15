//go:build !(goexperiment.simd && amd64)

package model

// haveSIMD is false without GOEXPERIMENT=simd on amd64: the scalar kernel runs.
const haveSIMD = false

func dotsSIMD(unitT []float32, padded int, s, dots []float32) { dotsScalar(unitT, padded, s, dots) }

func dots4SIMD(unitT []float32, padded int, s *[4][]float32, dots *[4][]float32) {
	for p := range s {
		dotsScalar(unitT, padded, s[p], dots[p])
	}
}

// have512 is false without GOEXPERIMENT=simd on amd64.
const have512 = false
