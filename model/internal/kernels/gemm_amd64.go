//go:build amd64

package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveGemm512 selects the AVX-512 micro-kernel of sgemm (gemm_amd64.s).
var haveGemm512 = cpu.X86.HasAVX512F

// sgemm8x32 is the micro-kernel: c[i][j] (+)= sum over p < k of
// a[i*rsA + p*csA] * b[p*ldb + j] for i < 8, j < 32, strides in bytes.
//
//go:noescape
func sgemm8x32(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool)
