//go:build goexperiment.simd && amd64

package transpose

import "simd/archsimd"

var haveAVX2 = archsimd.X86.AVX2()

// blocks8 writes whole groups of 8 bands of the n pixels from p0 with
// 8 x 8 vector transposes; it returns the first band it left (to
// scalarBands).
func blocks8[T int16 | uint16 | uint8 | float32](bsq []T, dst []float32, npix, p0, n, nb int) int {
	if !haveAVX2 {
		return 0
	}
	b := 0
	for ; b+8 <= nb; b += 8 {
		i := 0
		for ; i+8 <= n; i += 8 {
			var r [8]archsimd.Float32x8
			for k := range r {
				o := (b+k)*npix + p0 + i
				r[k] = load8(bsq[o : o+8])
			}
			store8x8(&r, dst, i*nb+b, nb)
		}
		scalarPixels(bsq, dst, npix, p0, i, n, nb, b)
	}
	return b
}

// load8 is s[:8] converted to float32 in a vector: Int16 and UInt16
// widened to 32 bits in the vector unit (UInt16 values are below 2^16,
// so the same as signed 32-bit ones), Byte samples one at a time.
func load8[T int16 | uint16 | uint8 | float32](s []T) archsimd.Float32x8 {
	switch v := any(s).(type) {
	case []int16:
		return archsimd.LoadInt16x8(v).ExtendToInt32().ConvertToFloat32()
	case []uint16:
		return archsimd.LoadUint16x8(v).ExtendToUint32().AsInt32x8().ConvertToFloat32()
	case []float32:
		return archsimd.LoadFloat32x8(v)
	}
	var f [8]float32
	for k := range f {
		f[k] = float32(s[k])
	}
	return archsimd.LoadFloat32x8Array(&f)
}

// store8x8 transposes r (8 bands, each 8 consecutive pixels) and stores
// pixel p's 8 bands at dst[at+p*stride:][:8].
func store8x8(r *[8]archsimd.Float32x8, dst []float32, at, stride int) {
	// Pairs of bands interleaved by pairs of pixels, within each 128-bit half.
	t0 := r[0].ConcatPermuteScalarsGrouped(0, 1, 4, 5, r[1])
	t1 := r[0].ConcatPermuteScalarsGrouped(2, 3, 6, 7, r[1])
	t2 := r[2].ConcatPermuteScalarsGrouped(0, 1, 4, 5, r[3])
	t3 := r[2].ConcatPermuteScalarsGrouped(2, 3, 6, 7, r[3])
	t4 := r[4].ConcatPermuteScalarsGrouped(0, 1, 4, 5, r[5])
	t5 := r[4].ConcatPermuteScalarsGrouped(2, 3, 6, 7, r[5])
	t6 := r[6].ConcatPermuteScalarsGrouped(0, 1, 4, 5, r[7])
	t7 := r[6].ConcatPermuteScalarsGrouped(2, 3, 6, 7, r[7])
	// Bands 0-3 (u0..u3) and 4-7 (u4..u7) of pixel q in the low half and
	// of pixel q+4 in the high half, q = 0..3.
	u0 := t0.ConcatPermuteScalarsGrouped(0, 2, 4, 6, t2)
	u1 := t0.ConcatPermuteScalarsGrouped(1, 3, 5, 7, t2)
	u2 := t1.ConcatPermuteScalarsGrouped(0, 2, 4, 6, t3)
	u3 := t1.ConcatPermuteScalarsGrouped(1, 3, 5, 7, t3)
	u4 := t4.ConcatPermuteScalarsGrouped(0, 2, 4, 6, t6)
	u5 := t4.ConcatPermuteScalarsGrouped(1, 3, 5, 7, t6)
	u6 := t5.ConcatPermuteScalarsGrouped(0, 2, 4, 6, t7)
	u7 := t5.ConcatPermuteScalarsGrouped(1, 3, 5, 7, t7)
	u0.ConcatPermute128Scalars(0, 2, u4).Store(dst[at : at+8])
	u1.ConcatPermute128Scalars(0, 2, u5).Store(dst[at+stride : at+stride+8])
	u2.ConcatPermute128Scalars(0, 2, u6).Store(dst[at+2*stride : at+2*stride+8])
	u3.ConcatPermute128Scalars(0, 2, u7).Store(dst[at+3*stride : at+3*stride+8])
	u0.ConcatPermute128Scalars(1, 3, u4).Store(dst[at+4*stride : at+4*stride+8])
	u1.ConcatPermute128Scalars(1, 3, u5).Store(dst[at+5*stride : at+5*stride+8])
	u2.ConcatPermute128Scalars(1, 3, u6).Store(dst[at+6*stride : at+6*stride+8])
	u3.ConcatPermute128Scalars(1, 3, u7).Store(dst[at+7*stride : at+7*stride+8])
}
