//go:build goexperiment.simd && amd64

package kernels

import "simd/archsimd"

// The network's input channels, made for every pixel the stage reads: in
// the default stretch-and-shape input, one pixel at a time in scalar Go
// they took about 4% of a 200-band classify's CPU (perf, 2026-12-07).

// AddStretch adds to dst[b] the stretched, quantised value of v[b]:
// Quantize01(Stretch01(v[b], lo[b], scale[b]), levels), 8 bands at a
// time with the same float32 operations (the vector floor of x (levels-1)
// is the float64 floor of that float32 value), so the same values.
func AddStretch(dst, v, lo, scale []float32, levels int) {
	if !HaveSIMD {
		addStretchScalar(dst, v, lo, scale, levels)
		return
	}
	n := len(v)
	dst, lo, scale = dst[:n], lo[:n], scale[:n]
	zero, one := archsimd.Float32x8{}, archsimd.BroadcastFloat32x8(1)
	nq := archsimd.BroadcastFloat32x8(float32(levels - 1))
	b := 0
	for ; b+8 <= n; b += 8 {
		x := archsimd.LoadFloat32x8(v[b : b+8]).Sub(archsimd.LoadFloat32x8(lo[b : b+8])).Mul(archsimd.LoadFloat32x8(scale[b : b+8]))
		x = x.Min(one).IfElse(x.GreaterEqual(zero), zero) // Stretch01, NaN to 0
		if levels >= 2 {
			x = x.Mul(nq).Floor().Div(nq)
		}
		archsimd.LoadFloat32x8(dst[b : b+8]).Add(x).Store(dst[b : b+8])
	}
	addStretchScalar(dst[b:], v[b:], lo[b:], scale[b:], levels)
}

// SumNonNaN is the sum in float64 of v's values that are not NaN, in eight
// float64 lanes. A float64 sum of float32 values is exact, so the same in
// any order, when it fits float64's 53-bit mantissa: always for integer
// counts (any sensor's digital numbers), and for reflectances whose
// magnitudes span less than about 2^20 over up to 512 bands (24 bits of
// each value and 9 of the count).
func SumNonNaN(v []float32) float64 {
	if !HaveSIMD {
		return sumNonNaNScalar(v)
	}
	var a0, a1 archsimd.Float64x4
	b := 0
	for ; b+8 <= len(v); b += 8 {
		x := archsimd.LoadFloat32x4(v[b : b+4])
		y := archsimd.LoadFloat32x4(v[b+4 : b+8])
		a0 = a0.Add(x.Masked(x.Equal(x)).ConvertToFloat64())
		a1 = a1.Add(y.Masked(y.Equal(y)).ConvertToFloat64())
	}
	var s [4]float64
	a0.Add(a1).Store(s[:])
	return (s[0] + s[1]) + (s[2] + s[3]) + sumNonNaNScalar(v[b:])
}

// AddShape adds to dst[b] v[b] inv clipped to at most clip, or 0 where
// v[b] inv is not above -clip (or NaN), 8 bands at a time with the same
// float32 operations.
func AddShape(dst, v []float32, inv, clip float32) {
	if !HaveSIMD {
		addShapeScalar(dst, v, inv, clip)
		return
	}
	n := len(v)
	dst = dst[:n]
	iv, hi, lo := archsimd.BroadcastFloat32x8(inv), archsimd.BroadcastFloat32x8(clip), archsimd.BroadcastFloat32x8(-clip)
	b := 0
	for ; b+8 <= n; b += 8 {
		y := archsimd.LoadFloat32x8(v[b : b+8]).Mul(iv)
		y = y.Min(hi).Masked(y.Greater(lo))
		archsimd.LoadFloat32x8(dst[b : b+8]).Add(y).Store(dst[b : b+8])
	}
	addShapeScalar(dst[b:], v[b:], inv, clip)
}
