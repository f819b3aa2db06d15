//go:build !(goexperiment.simd && amd64)

package kernels

// AddStretch adds to dst[b] the stretched, quantised value of v[b]:
// Quantize01(Stretch01(v[b], lo[b], scale[b]), levels).
func AddStretch(dst, v, lo, scale []float32, levels int) { addStretchScalar(dst, v, lo, scale, levels) }

// SumNonNaN is the sum in float64 of v's values that are not NaN.
func SumNonNaN(v []float32) float64 { return sumNonNaNScalar(v) }

// AddShape adds to dst[b] v[b] inv clipped to at most clip, or 0 where
// v[b] inv is not above -clip (or NaN).
func AddShape(dst, v []float32, inv, clip float32) { addShapeScalar(dst, v, inv, clip) }
