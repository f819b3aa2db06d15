//go:build !amd64

package kernels

import "unsafe"

const (
	haveGemm512 = false
	haveGemm256 = false
)

func sgemm8x32(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool) {
	panic("sgemm8x32: no AVX-512 kernel on this architecture")
}

func sgemm6x16(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool) {
	panic("sgemm6x16: no AVX2 kernel on this architecture")
}
