package kernels

import (
	"fmt"
	"unsafe"
)

// sgemm is pnec's own single-precision matrix product for the paper
// encoder's full-resolution stage (encoder.go), which runs outside the
// GoMLX graph: C (+)= A B for A [m x k], B [k x n], C [m x n]. A's element
// (i, p) is a[i*rsA + p*csA], so A may be a transposed view (rsA 1); B and
// C are row-major with row strides ldb and ldc; accum adds to C instead
// of overwriting it. Strides are in elements.
//
// On AVX-512 machines the work goes through an 8 x 32 register-blocked
// micro-kernel (gemm_amd64.s, 16 accumulators, one broadcast of A per row
// and two vector loads of B per step of k), on AVX2 machines through a
// 6 x 16 one (12 of the 16 vector registers accumulate), over blocks of
// gemmKC steps of k so that a block of B (gemmKC x n) stays in the L2
// cache; rows past the last multiple of the kernel's go through it on a
// zero-padded copy, columns past the last multiple of its width through
// the scalar loop (only narrow test networks have them). Without either
// everything takes the scalar loop.
func sgemm(m, n, k int, a []float32, rsA, csA int, b []float32, ldb int, c []float32, ldc int, accum bool) {
	if m <= 0 || n <= 0 {
		return
	}
	if k <= 0 {
		if !accum {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	if need := (m-1)*rsA + (k-1)*csA + 1; len(a) < need {
		panic(fmt.Sprintf("sgemm: A has %d values, needs %d", len(a), need))
	}
	if need := (k-1)*ldb + n; len(b) < need {
		panic(fmt.Sprintf("sgemm: B has %d values, needs %d", len(b), need))
	}
	if need := (m-1)*ldc + n; len(c) < need {
		panic(fmt.Sprintf("sgemm: C has %d values, needs %d", len(c), need))
	}
	kern, mr, nr := sgemm8x32, 8, 32
	switch {
	case haveGemm512:
	case haveGemm256:
		kern, mr, nr = sgemm6x16, 6, 16
	default:
		sgemmScalar(m, n, k, a, rsA, csA, b, ldb, c, ldc, accum)
		return
	}
	nb := n / nr * nr
	if nb < n {
		sgemmScalar(m, n-nb, k, a, rsA, csA, b[nb:], ldb, c[nb:], ldc, accum)
	}
	if nb == 0 {
		return
	}
	const f = 4 // bytes per float32
	mb := m / mr * mr
	var tailA [8 * gemmKC]float32
	var tailC [8 * 32]float32
	for p0 := 0; p0 < k; p0 += gemmKC {
		kc := min(gemmKC, k-p0)
		acc := accum || p0 > 0
		for i0 := 0; i0 < mb; i0 += mr {
			ap := unsafe.Pointer(&a[i0*rsA+p0*csA])
			for j0 := 0; j0 < nb; j0 += nr {
				kern(kc, ap, uintptr(rsA*f), uintptr(csA*f),
					unsafe.Pointer(&b[p0*ldb+j0]), uintptr(ldb*f),
					unsafe.Pointer(&c[i0*ldc+j0]), uintptr(ldc*f), acc)
			}
		}
		if mb == m {
			continue
		}
		// The last m-mb rows: A's rows copied into an mr-row block padded
		// with zeros, the product into a scratch block, then its rows added
		// or copied.
		rows := m - mb
		clear(tailA[:mr*kc])
		for r := 0; r < rows; r++ {
			for p := 0; p < kc; p++ {
				tailA[r*kc+p] = a[(mb+r)*rsA+(p0+p)*csA]
			}
		}
		for j0 := 0; j0 < nb; j0 += nr {
			kern(kc, unsafe.Pointer(&tailA[0]), uintptr(kc*f), f,
				unsafe.Pointer(&b[p0*ldb+j0]), uintptr(ldb*f),
				unsafe.Pointer(&tailC[0]), uintptr(nr*f), false)
			for r := 0; r < rows; r++ {
				dst := c[(mb+r)*ldc+j0 : (mb+r)*ldc+j0+nr]
				src := tailC[r*nr : r*nr+nr]
				if acc {
					for j := range dst {
						dst[j] += src[j]
					}
				} else {
					copy(dst, src)
				}
			}
		}
	}
}

// gemmKC is the block of k that sgemm runs the micro-kernel over at once.
const gemmKC = 256

// sgemmScalar is sgemm without SIMD.
func sgemmScalar(m, n, k int, a []float32, rsA, csA int, b []float32, ldb int, c []float32, ldc int, accum bool) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if !accum {
			clear(row)
		}
		for p := 0; p < k; p++ {
			av := a[i*rsA+p*csA]
			if av == 0 {
				continue
			}
			br := b[p*ldb : p*ldb+n]
			for j, bv := range br {
				row[j] += av * bv
			}
		}
	}
}
