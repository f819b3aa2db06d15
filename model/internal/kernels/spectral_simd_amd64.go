//go:build goexperiment.simd && amd64

package kernels

import (
	"fmt"
	"math"
	"simd/archsimd"
	"unsafe"
)

// HaveSIMD selects the vector kernel of the spectral cosines: AVX2 for
// 8-lane loads and FMA for the fused multiply-adds.
var HaveSIMD = archsimd.X86.AVX2() && archsimd.X86.FMA()

// have512 adds 16-lane AVX-512 blocks to Dots4SIMD. Each lane's arithmetic
// (one fused multiply-add per band, in band order) is that of the 8-lane
// kernel, so the distances are bit for bit the same; the instructions per
// reference halve (the spectral distances were 14% of a 200-band
// classify's CPU time with 8 lanes, measured with perf).
var have512 = HaveSIMD && archsimd.X86.AVX512()

// DotsSIMD is DotsScalar with 8 references per vector: for each band it
// broadcasts the pixel's value and fuses it into 4 accumulators of 8
// references (32 at a time), then a tail of single vectors. padded is a
// multiple of 8.
func DotsSIMD(unitT []float32, padded int, s, dots []float32) {
	j := 0
	for ; j+32 <= padded; j += 32 {
		var a0, a1, a2, a3 archsimd.Float32x8
		for b, v := range s {
			pb := archsimd.BroadcastFloat32x8(v)
			row := unitT[b*padded+j : b*padded+j+32 : b*padded+j+32]
			a0 = archsimd.LoadFloat32x8(row[0:8]).MulAdd(pb, a0)
			a1 = archsimd.LoadFloat32x8(row[8:16]).MulAdd(pb, a1)
			a2 = archsimd.LoadFloat32x8(row[16:24]).MulAdd(pb, a2)
			a3 = archsimd.LoadFloat32x8(row[24:32]).MulAdd(pb, a3)
		}
		a0.Store(dots[j : j+8])
		a1.Store(dots[j+8 : j+16])
		a2.Store(dots[j+16 : j+24])
		a3.Store(dots[j+24 : j+32])
	}
	for ; j < padded; j += 8 {
		var a archsimd.Float32x8
		for b, v := range s {
			a = archsimd.LoadFloat32x8(unitT[b*padded+j:b*padded+j+8]).MulAdd(archsimd.BroadcastFloat32x8(v), a)
		}
		a.Store(dots[j : j+8])
	}
}

// Dots4SIMD is DotsSIMD for the four pixels s[0..3] at once (dots[p] for
// each), so that every vector of references loaded from memory serves four
// pixels: per band and block of 16 references it takes 2 loads, 4
// broadcasts and 8 fused multiply-adds into 8 accumulators, where DotsSIMD
// takes one load per multiply-add and is bound by the cache.
func Dots4SIMD(unitT []float32, padded int, s *[4][]float32, dots *[4][]float32) {
	s0, s1, s2, s3 := s[0], s[1], s[2], s[3]
	bands := len(s0)
	s1, s2, s3 = s1[:bands], s2[:bands], s3[:bands]
	j := 0
	if have512 {
		j = dots4x16(unitT, padded, s, dots)
	}
	for ; j+16 <= padded; j += 16 {
		var a0, a1, b0, b1, c0, c1, e0, e1 archsimd.Float32x8
		for b := 0; b < bands; b++ {
			row := unitT[b*padded+j : b*padded+j+16 : b*padded+j+16]
			r0 := archsimd.LoadFloat32x8(row[0:8])
			r1 := archsimd.LoadFloat32x8(row[8:16])
			p := archsimd.BroadcastFloat32x8(s0[b])
			a0, a1 = r0.MulAdd(p, a0), r1.MulAdd(p, a1)
			p = archsimd.BroadcastFloat32x8(s1[b])
			b0, b1 = r0.MulAdd(p, b0), r1.MulAdd(p, b1)
			p = archsimd.BroadcastFloat32x8(s2[b])
			c0, c1 = r0.MulAdd(p, c0), r1.MulAdd(p, c1)
			p = archsimd.BroadcastFloat32x8(s3[b])
			e0, e1 = r0.MulAdd(p, e0), r1.MulAdd(p, e1)
		}
		a0.Store(dots[0][j : j+8])
		a1.Store(dots[0][j+8 : j+16])
		b0.Store(dots[1][j : j+8])
		b1.Store(dots[1][j+8 : j+16])
		c0.Store(dots[2][j : j+8])
		c1.Store(dots[2][j+8 : j+16])
		e0.Store(dots[3][j : j+8])
		e1.Store(dots[3][j+8 : j+16])
	}
	for ; j < padded; j += 8 {
		var a, bb, c, e archsimd.Float32x8
		for b := 0; b < bands; b++ {
			r := archsimd.LoadFloat32x8(unitT[b*padded+j : b*padded+j+8])
			a = r.MulAdd(archsimd.BroadcastFloat32x8(s0[b]), a)
			bb = r.MulAdd(archsimd.BroadcastFloat32x8(s1[b]), bb)
			c = r.MulAdd(archsimd.BroadcastFloat32x8(s2[b]), c)
			e = r.MulAdd(archsimd.BroadcastFloat32x8(s3[b]), e)
		}
		a.Store(dots[0][j : j+8])
		bb.Store(dots[1][j : j+8])
		c.Store(dots[2][j : j+8])
		e.Store(dots[3][j : j+8])
	}
}

// dots4x16 is Dots4SIMD's main loop with 16-lane vectors over blocks of 32
// references; it returns the first reference it did not do.
func dots4x16(unitT []float32, padded int, s *[4][]float32, dots *[4][]float32) int {
	s0, s1, s2, s3 := s[0], s[1], s[2], s[3]
	bands := len(s0)
	s1, s2, s3 = s1[:bands], s2[:bands], s3[:bands]
	j := 0
	for ; j+32 <= padded; j += 32 {
		var a0, a1, b0, b1, c0, c1, e0, e1 archsimd.Float32x16
		for b := 0; b < bands; b++ {
			row := unitT[b*padded+j : b*padded+j+32 : b*padded+j+32]
			r0 := archsimd.LoadFloat32x16(row[0:16])
			r1 := archsimd.LoadFloat32x16(row[16:32])
			p := archsimd.BroadcastFloat32x16(s0[b])
			a0, a1 = r0.MulAdd(p, a0), r1.MulAdd(p, a1)
			p = archsimd.BroadcastFloat32x16(s1[b])
			b0, b1 = r0.MulAdd(p, b0), r1.MulAdd(p, b1)
			p = archsimd.BroadcastFloat32x16(s2[b])
			c0, c1 = r0.MulAdd(p, c0), r1.MulAdd(p, c1)
			p = archsimd.BroadcastFloat32x16(s3[b])
			e0, e1 = r0.MulAdd(p, e0), r1.MulAdd(p, e1)
		}
		a0.Store(dots[0][j : j+16])
		a1.Store(dots[0][j+16 : j+32])
		b0.Store(dots[1][j : j+16])
		b1.Store(dots[1][j+16 : j+32])
		c0.Store(dots[2][j : j+16])
		c1.Store(dots[2][j+16 : j+32])
		e0.Store(dots[3][j : j+16])
		e1.Store(dots[3][j+16 : j+32])
	}
	return j
}

// HaveDots8 reports whether Dots8 runs for references padded to padded:
// with AVX-512, or AVX2 and FMA, and padded a multiple of 32 (DotsPadding
// gives that).
func HaveDots8(padded int) bool {
	return (have512 && haveGemm512 || HaveSIMD && haveGemm256) && padded%32 == 0
}

// Dots8Run is the number of pixels whose multiples Dots8 runs wholly on
// its micro-kernel: 8 rows of it with AVX-512; with AVX2 24, a multiple of
// both its 6 rows and the 8 pixels Dots8 takes, so that no pixel of a
// call is left to Dots4SIMD (about a third of the kernel's rate).
func Dots8Run() int {
	if have512 && haveGemm512 {
		return 8
	}
	return 24
}

// Dots8 is Dots4SIMD for the consecutive pixels of s ([n][bands],
// pixel-interleaved, n a multiple of 8): dots[p*padded+j] for pixel p and
// reference j, from the references laid out by Dots8Table (table). It runs
// gemm_amd64.s's micro-kernel over the whole band axis at once (8 pixels x
// 32 references with AVX-512; 6 x 16 with AVX2, the last pixels of a run
// that is not a multiple of 6 through Dots4SIMD and DotsSIMD on the
// block), so every lane is the same chain of fused multiply-adds in band
// order from zero as in DotsSIMD and Dots4SIMD, and the distances are bit
// for bit the same. The
// hand-written kernels keep their accumulators in registers: Dots4SIMD's
// compiled loop moves its 8 through the stack, and perf showed it at about
// a fifth of the FMA units' rate. Each block of 32 references serves every
// pixel of s before the next is read, so that it is read from the
// first-level cache, not from memory, for all but the first.
// Only where HaveDots8(padded).
func Dots8(table []float32, padded, bands int, s, dots []float32) {
	n := 0
	if bands > 0 {
		n = len(s) / bands
	}
	if !HaveDots8(padded) || n == 0 || n%8 != 0 || len(s) != n*bands || len(table) < bands*padded || len(dots) < n*padded {
		panic(fmt.Sprintf("Dots8: %d spectrum values of %d bands, %d reference values, %d dots for %d references (kernel: %v)", len(s), bands, len(table), len(dots), padded, HaveDots8(32)))
	}
	const f = 4 // bytes per float32
	if !have512 || !haveGemm512 {
		for j := 0; j < padded; j += Dots8Block {
			blk := table[j*bands : (j+Dots8Block)*bands]
			p := 0
			for ; p+6 <= n; p += 6 {
				for h := 0; h < Dots8Block; h += 16 {
					sgemm6x16(bands, unsafe.Pointer(&s[p*bands]), uintptr(bands*f), f,
						unsafe.Pointer(&blk[h]), Dots8Block*f,
						unsafe.Pointer(&dots[p*padded+j+h]), uintptr(padded*f), false)
				}
			}
			// The 2 or 4 pixels left (n is a multiple of 8): four at a time
			// share each load of the block (Dots4SIMD), where one at a time
			// DotsSIMD loads it for each multiply-add; 4 of each 64-pixel
			// run went that way, and DotsSIMD took 9% of the fused
			// distances' CPU on an AVX2 machine (a CPU profile of
			// BenchmarkClassDistancesFused).
			for ; p+4 <= n; p += 4 {
				var px, dp [4][]float32
				for q := range 4 {
					px[q] = s[(p+q)*bands : (p+q+1)*bands]
					dp[q] = dots[(p+q)*padded+j : (p+q)*padded+j+Dots8Block]
				}
				Dots4SIMD(blk, Dots8Block, &px, &dp)
			}
			for ; p < n; p++ {
				DotsSIMD(blk, Dots8Block, s[p*bands:(p+1)*bands], dots[p*padded+j:p*padded+j+Dots8Block])
			}
		}
		return
	}
	for j := 0; j < padded; j += Dots8Block {
		b := unsafe.Pointer(&table[j*bands])
		for p := 0; p < n; p += 8 {
			sgemm8x32(bands, unsafe.Pointer(&s[p*bands]), uintptr(bands*f), f,
				b, Dots8Block*f,
				unsafe.Pointer(&dots[p*padded+j]), uintptr(padded*f), false)
		}
	}
}

// MaxInto sets dst[i] = max(dst[i], src[i]) for every i < len(dst) (src
// at least as long), 8 lanes at a time (16 with AVX-512). The values are
// finite dot products: the vector maximum equals the scalar one, but for
// the sign of a zero, which no distance keeps (1 - 0 = 1 - -0).
func MaxInto(dst, src []float32) {
	src = src[:len(dst)]
	i := 0
	if have512 {
		for ; i+16 <= len(dst); i += 16 {
			archsimd.LoadFloat32x16(dst[i : i+16]).Max(archsimd.LoadFloat32x16(src[i : i+16])).Store(dst[i : i+16])
		}
	}
	if HaveSIMD {
		for ; i+8 <= len(dst); i += 8 {
			archsimd.LoadFloat32x8(dst[i : i+8]).Max(archsimd.LoadFloat32x8(src[i : i+8])).Store(dst[i : i+8])
		}
		if i < len(dst) && len(dst) >= 8 {
			// The tail as the last whole vector: the maximum of a value
			// already taken is the value, so the overlap is harmless.
			i = len(dst) - 8
			archsimd.LoadFloat32x8(dst[i:]).Max(archsimd.LoadFloat32x8(src[i:])).Store(dst[i:])
			return
		}
	}
	maxIntoScalar(dst[i:], src[i:])
}

// SpanMax sets dst[c] to the largest of src[spans[c][0]:spans[c][1]] for
// every non-empty span (empty ones leave dst[c] as it is), 16 lanes at a
// time with AVX-512. Each span's values are reduced with whole-vector
// loads: a span of 16 or more by its first 16k values and its last 16
// (which may overlap them: a value counted twice leaves a maximum as it
// is), a shorter one by the 16 values at its start (or, near src's end,
// at its end) with the lanes outside the span set to -Inf; one that
// neither holds (src under 32 values) one value at a time. So no load
// reads outside src. The values are finite dot products (as for
// MaxInto): the result is the scalar loop's, but for the sign of a zero.
// The scalar loop read back one value at a time what MaxInto had just
// stored 16 at a time, and took 14% of the fused distances' CPU for 240
// values a pixel against 45% for the 288,000 multiply-adds of their dots
// (BenchmarkClassDistancesFused, perf). Without AVX-512 spanMax8 takes
// 8 lanes the same way.
func SpanMax(dst, src []float32, spans [][2]int) {
	if !have512 || len(src) < 16 {
		if HaveSIMD && len(src) >= 8 {
			spanMax8(dst, src, spans)
			return
		}
		spanMaxScalar(dst, src, spans)
		return
	}
	negInf := archsimd.BroadcastFloat32x16(float32(math.Inf(-1)))
	for c, sp := range spans {
		lo, hi := sp[0], sp[1]
		n := hi - lo
		var m archsimd.Float32x16
		switch {
		case n == 0:
			continue
		case n >= 16:
			m = archsimd.LoadFloat32x16(src[lo : lo+16])
			for i := lo + 16; i+16 <= hi; i += 16 {
				m = m.Max(archsimd.LoadFloat32x16(src[i : i+16]))
			}
			m = m.Max(archsimd.LoadFloat32x16(src[hi-16 : hi]))
		case lo+16 <= len(src):
			// Lanes 0..n-1 are the span's.
			keep := archsimd.Mask32x16FromBits(uint16(1)<<n - 1)
			m = archsimd.LoadFloat32x16(src[lo:lo+16]).IfElse(keep, negInf)
		case hi >= 16:
			// Lanes 16-n..15 are the span's.
			keep := archsimd.Mask32x16FromBits(^(uint16(1)<<(16-n) - 1))
			m = archsimd.LoadFloat32x16(src[hi-16:hi]).IfElse(keep, negInf)
		default:
			// No 16 values of src hold the span alone at either end.
			spanMaxScalar(dst[c:c+1], src, spans[c:c+1])
			continue
		}
		m8 := m.GetHi().Max(m.GetLo())
		m4 := m8.GetHi().Max(m8.GetLo())
		var v [4]float32
		m4.StoreArray(&v)
		dst[c] = max(max(v[0], v[1]), max(v[2], v[3]))
	}
}

// spanMax8 is SpanMax with 8-lane AVX2 loads: a span of 8 or more values
// is reduced by its first 8k values and its last 8 (overlapping them
// where its length is not a multiple of 8: a value counted twice leaves a
// maximum as it is), a shorter one one value at a time, because AVX2 has
// no mask registers to blank the lanes outside it (the spans bench-big's
// models give are of 15 references, a class's training pixels in a
// group). On AVX2 machines SpanMax was the scalar loop alone.
func spanMax8(dst, src []float32, spans [][2]int) {
	for c, sp := range spans {
		lo, hi := sp[0], sp[1]
		if hi-lo < 8 {
			if hi > lo {
				spanMaxScalar(dst[c:c+1], src, spans[c:c+1])
			}
			continue
		}
		m := archsimd.LoadFloat32x8(src[lo : lo+8])
		for i := lo + 8; i+8 <= hi; i += 8 {
			m = m.Max(archsimd.LoadFloat32x8(src[i : i+8]))
		}
		m = m.Max(archsimd.LoadFloat32x8(src[hi-8 : hi]))
		m4 := m.GetHi().Max(m.GetLo())
		var v [4]float32
		m4.StoreArray(&v)
		dst[c] = max(max(v[0], v[1]), max(v[2], v[3]))
	}
}

// Combine sets dst[i] = (b0[i] + a*b1[i]) * coef[i] (b1 nil: b0[i] *
// coef[i]) for every i < len(dst), 16 or 8 lanes at a time. Each product
// and sum is rounded on its own (Mul then Add, no fused multiply-add), so
// the result is combineScalar's bit for bit. dst must not overlap b0, b1
// or coef (its tail is written as the last whole vector, again over values
// already written).
func Combine(dst, b0, b1 []float32, a float32, coef []float32) {
	b0, coef = b0[:len(dst)], coef[:len(dst)]
	if b1 != nil {
		b1 = b1[:len(dst)]
	}
	i := 0
	if have512 {
		av := archsimd.BroadcastFloat32x16(a)
		for ; i+16 <= len(dst); i += 16 {
			v := archsimd.LoadFloat32x16(b0[i : i+16])
			if b1 != nil {
				v = v.Add(archsimd.LoadFloat32x16(b1[i : i+16]).Mul(av))
			}
			v.Mul(archsimd.LoadFloat32x16(coef[i : i+16])).Store(dst[i : i+16])
		}
	}
	if HaveSIMD {
		av := archsimd.BroadcastFloat32x8(a)
		for i < len(dst) && len(dst) >= 8 {
			if i+8 > len(dst) {
				// The tail as the last whole vector: dst is a function of
				// b0, b1 and coef alone (Combine's dst overlaps none of
				// them), so its overlap is written again with the same
				// values.
				i = len(dst) - 8
			}
			v := archsimd.LoadFloat32x8(b0[i : i+8])
			if b1 != nil {
				v = v.Add(archsimd.LoadFloat32x8(b1[i : i+8]).Mul(av))
			}
			v.Mul(archsimd.LoadFloat32x8(coef[i : i+8])).Store(dst[i : i+8])
			i += 8
		}
	}
	var t1 []float32
	if b1 != nil {
		t1 = b1[i:]
	}
	combineScalar(dst[i:], b0[i:], t1, a, coef[i:])
}

// DotsF64 is DotsF64Scalar with 4 references a vector, 16 at a time: each
// lane multiplies and adds (not fused) in band order, so every dot is
// DotsF64Scalar's bit for bit. AVX2 without FMA suffices (HaveSIMD also
// asks for FMA, which this kernel does not use; it takes the same flag to
// keep one switch).
func DotsF64(u, refsT, dots []float64) {
	if !HaveSIMD {
		DotsF64Scalar(u, refsT, dots)
		return
	}
	n := len(dots)
	j := 0
	for ; j+16 <= n; j += 16 {
		var a0, a1, a2, a3 archsimd.Float64x4
		for b, v := range u {
			pb := archsimd.BroadcastFloat64x4(v)
			row := refsT[b*n+j : b*n+j+16 : b*n+j+16]
			a0 = a0.Add(archsimd.LoadFloat64x4(row[0:4]).Mul(pb))
			a1 = a1.Add(archsimd.LoadFloat64x4(row[4:8]).Mul(pb))
			a2 = a2.Add(archsimd.LoadFloat64x4(row[8:12]).Mul(pb))
			a3 = a3.Add(archsimd.LoadFloat64x4(row[12:16]).Mul(pb))
		}
		a0.Store(dots[j : j+4])
		a1.Store(dots[j+4 : j+8])
		a2.Store(dots[j+8 : j+12])
		a3.Store(dots[j+12 : j+16])
	}
	for ; j+4 <= n; j += 4 {
		var a archsimd.Float64x4
		for b, v := range u {
			a = a.Add(archsimd.LoadFloat64x4(refsT[b*n+j : b*n+j+4]).Mul(archsimd.BroadcastFloat64x4(v)))
		}
		a.Store(dots[j : j+4])
	}
	for ; j < n; j++ {
		d := 0.0
		for b, v := range u {
			d += refsT[b*n+j] * v
		}
		dots[j] = d
	}
}
