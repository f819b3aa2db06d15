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
// and two vector loads of B per step of k), over blocks of gemmKC steps of
// k so that a block of B (gemmKC x n) stays in the L2 cache; rows past the
// last multiple of 8 go through the kernel on a zero-padded copy, columns
// past the last multiple of 32 through the scalar loop (only narrow test
// networks have them). Without AVX-512 everything takes the scalar loop.
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
	if !haveGemm512 {
		sgemmScalar(m, n, k, a, rsA, csA, b, ldb, c, ldc, accum)
		return
	}
	n32 := n / 32 * 32
	if n32 < n {
		sgemmScalar(m, n-n32, k, a, rsA, csA, b[n32:], ldb, c[n32:], ldc, accum)
	}
	if n32 == 0 {
		return
	}
	const f = 4 // bytes per float32
	m8 := m / 8 * 8
	var tailA [8 * gemmKC]float32
	var tailC [8 * 32]float32
	for p0 := 0; p0 < k; p0 += gemmKC {
		kc := min(gemmKC, k-p0)
		acc := accum || p0 > 0
		for i0 := 0; i0 < m8; i0 += 8 {
			ap := unsafe.Pointer(&a[i0*rsA+p0*csA])
			for j0 := 0; j0 < n32; j0 += 32 {
				sgemm8x32(kc, ap, uintptr(rsA*f), uintptr(csA*f),
					unsafe.Pointer(&b[p0*ldb+j0]), uintptr(ldb*f),
					unsafe.Pointer(&c[i0*ldc+j0]), uintptr(ldc*f), acc)
			}
		}
		if m8 == m {
			continue
		}
		// The last m-m8 rows: A's rows copied into an 8-row block padded with
		// zeros, the product into a scratch block, then its rows added or copied.
		rows := m - m8
		clear(tailA[:])
		for r := 0; r < rows; r++ {
			for p := 0; p < kc; p++ {
				tailA[r*kc+p] = a[(m8+r)*rsA+(p0+p)*csA]
			}
		}
		for j0 := 0; j0 < n32; j0 += 32 {
			sgemm8x32(kc, unsafe.Pointer(&tailA[0]), uintptr(kc*f), f,
				unsafe.Pointer(&b[p0*ldb+j0]), uintptr(ldb*f),
				unsafe.Pointer(&tailC[0]), 32*f, false)
			for r := 0; r < rows; r++ {
				dst := c[(m8+r)*ldc+j0 : (m8+r)*ldc+j0+32]
				src := tailC[r*32 : r*32+32]
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
