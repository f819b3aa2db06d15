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
	kern, mr, nr := gemmKernel()
	if kern == nil {
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
	sgemmPanels(kern, mr, nr, m, nb, k, a, rsA, csA, unsafe.Pointer(&b[0]), uintptr(ldb*f), uintptr(nr*f), c, ldc, accum)
}

// gemmKern is a micro-kernel's signature (sgemm8x32, sgemm6x16).
type gemmKern func(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool)

// gemmKernel is the machine's micro-kernel and its rows and columns, nil
// where there is none.
func gemmKernel() (kern gemmKern, mr, nr int) {
	switch {
	case haveGemm512:
		return sgemm8x32, 8, 32
	case haveGemm256:
		return sgemm6x16, 6, 16
	}
	return nil, 0, 0
}

// sgemmPanels runs the micro-kernel over C's first nb columns (a multiple
// of nr): B's element (p, j0 + j) of the panel of columns j0.. is at
// b + p ldbRow + (j0/nr) panel + 4 j bytes, which covers B row-major
// (ldbRow = 4 ldb, panel = 4 nr) and packed by packB (ldbRow = 4 nr,
// panel = 4 k nr).
func sgemmPanels(kern gemmKern, mr, nr, m, nb, k int, a []float32, rsA, csA int, b unsafe.Pointer, ldbRow, panel uintptr, c []float32, ldc int, accum bool) {
	const f = 4 // bytes per float32
	mb := m / mr * mr
	// The tail's blocks, made only when m is not a multiple of mr: as
	// arrays their address, passed to kern (a function value), moved them
	// to the heap on every call, 9 KiB allocated and cleared for each of a
	// Winograd chunk's 36 products (0.85% of the bench-big crop's CPU).
	var tailA, tailC []float32
	for p0 := 0; p0 < k; p0 += gemmKC {
		kc := min(gemmKC, k-p0)
		acc := accum || p0 > 0
		bp := unsafe.Add(b, uintptr(p0)*ldbRow)
		for i0 := 0; i0 < mb; i0 += mr {
			ap := unsafe.Pointer(&a[i0*rsA+p0*csA])
			for j0 := 0; j0 < nb; j0 += nr {
				kern(kc, ap, uintptr(rsA*f), uintptr(csA*f),
					unsafe.Add(bp, uintptr(j0/nr)*panel), ldbRow,
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
		if tailA == nil {
			tailA, tailC = make([]float32, 8*gemmKC), make([]float32, 8*32)
		}
		clear(tailA[:mr*kc])
		for r := 0; r < rows; r++ {
			for p := 0; p < kc; p++ {
				tailA[r*kc+p] = a[(mb+r)*rsA+(p0+p)*csA]
			}
		}
		for j0 := 0; j0 < nb; j0 += nr {
			kern(kc, unsafe.Pointer(&tailA[0]), uintptr(kc*f), f,
				unsafe.Add(bp, uintptr(j0/nr)*panel), ldbRow,
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

// PackedB is a [k x n] right-hand matrix laid out for the micro-kernel:
// panels of the kernel's nr columns, each its k rows of nr floats one
// after another, so the kernel reads B as one sequential stream. A row-
// major B read a 64-byte line per row at a stride of 4 n bytes, which
// for n = 128 maps the k rows of a panel onto an eighth of the L1 cache's
// sets. On Zen 3 the full-resolution stage took about 7% less CPU with its
// weights packed (BenchmarkFullRes/infer at a bench-big tile, 3 pairs).
type PackedB struct {
	k, n int
	data []float32
}

// packB packs b [k x n] (row stride ldb); ok is false where sgemm has no
// micro-kernel or n is not a whole number of its panels, and sgemm on b
// itself must be used.
func packB(k, n int, b []float32, ldb int) (p PackedB, ok bool) {
	_, _, nr := gemmKernel()
	if nr == 0 || n <= 0 || n%nr != 0 || k <= 0 {
		return PackedB{}, false
	}
	p = PackedB{k: k, n: n, data: make([]float32, k*n)}
	for j0 := 0; j0 < n; j0 += nr {
		panel := p.data[j0*k : (j0+nr)*k]
		for q := 0; q < k; q++ {
			copy(panel[q*nr:(q+1)*nr], b[q*ldb+j0:q*ldb+j0+nr])
		}
	}
	return p, true
}

// packed says whether p holds a matrix (packB accepted it).
func (p PackedB) packed() bool { return p.data != nil }

// sgemmPacked is sgemm with B packed by packB: C (+)= A B for A [m x k]
// (element (i, p) at a[i*rsA + p*csA]), C [m x n] row-major.
func sgemmPacked(m int, a []float32, rsA, csA int, b PackedB, c []float32, ldc int, accum bool) {
	if m <= 0 {
		return
	}
	k, n := b.k, b.n
	if need := (m-1)*rsA + (k-1)*csA + 1; len(a) < need {
		panic(fmt.Sprintf("sgemmPacked: A has %d values, needs %d", len(a), need))
	}
	if need := (m-1)*ldc + n; len(c) < need {
		panic(fmt.Sprintf("sgemmPacked: C has %d values, needs %d", len(c), need))
	}
	kern, mr, nr := gemmKernel()
	const f = 4
	sgemmPanels(kern, mr, nr, m, n, k, a, rsA, csA, unsafe.Pointer(&b.data[0]), uintptr(nr*f), uintptr(k*nr*f), c, ldc, accum)
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
