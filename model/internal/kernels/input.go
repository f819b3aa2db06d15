package kernels

import "math"

// addStretchScalar is AddStretch one band at a time.
func addStretchScalar(dst, v, lo, scale []float32, levels int) {
	for b, x := range v {
		dst[b] += Quantize01(Stretch01(x, lo[b], scale[b]), levels)
	}
}

// sumNonNaNScalar is SumNonNaN one band at a time.
func sumNonNaNScalar(v []float32) float64 {
	var s float64
	for _, x := range v {
		if !math.IsNaN(float64(x)) {
			s += float64(x)
		}
	}
	return s
}

// addShapeScalar is AddShape one band at a time.
func addShapeScalar(dst, v []float32, inv, clip float32) {
	for b, x := range v {
		y := x * inv
		if !(y > -clip) { // also NaN
			y = 0
		}
		dst[b] += min(y, clip)
	}
}
