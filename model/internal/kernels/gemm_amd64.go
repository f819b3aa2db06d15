//go:build amd64

package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveGemm512 selects the AVX-512 micro-kernel of sgemm (gemm_amd64.s),
// haveGemm256 the AVX2 one where there is no AVX-512.
var (
	haveGemm512 = cpu.X86.HasAVX512F
	haveGemm256 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

// sgemm8x32 is the micro-kernel: c[i][j] (+)= sum over p < k of
// a[i*rsA + p*csA] * b[p*ldb + j] for i < 8, j < 32, strides in bytes.
//
//go:noescape
func sgemm8x32(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool)

// sgemm6x16 is the AVX2 micro-kernel: c[i][j] (+)= sum over p < k of
// a[i*rsA + p*csA] * b[p*ldb + j] for i < 6, j < 16, strides in bytes.
//
//go:noescape
func sgemm6x16(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool)
