//go:build amd64

#include "textflag.h"

// KERNEL_ARGS loads both kernels' arguments: CX the steps of k, SI row 0
// of A and R12 its row 4, R8 A's row stride, R11 three of them, R9 its
// step along k, DI B and R10 B's row stride.
#define KERNEL_ARGS \
	MOVQ k+0(FP), CX; \
	MOVQ a+8(FP), SI; \
	MOVQ rsA+16(FP), R8; \
	MOVQ csA+24(FP), R9; \
	MOVQ b+32(FP), DI; \
	MOVQ ldb+40(FP), R10; \
	LEAQ (R8)(R8*2), R11; \
	LEAQ (SI)(R8*4), R12

// STORE_ARGS loads where the accumulators go: DI C, R10 its row stride,
// AX whether to add to it.
#define STORE_ARGS \
	MOVQ c+48(FP), DI; \
	MOVQ ldc+56(FP), R10; \
	MOVBLZX accum+64(FP), AX

// One k step of the 8x32 kernel: two 16-float vectors of B's row, then for
// each of the 8 rows of A its element broadcast and two fused multiply-adds
// into that row's accumulators.
#define KSTEP \
	VMOVUPS (DI), Z16; \
	VMOVUPS 64(DI), Z17; \
	VBROADCASTSS (SI), Z18; \
	VFMADD231PS Z16, Z18, Z0; \
	VFMADD231PS Z17, Z18, Z1; \
	VBROADCASTSS (SI)(R8*1), Z19; \
	VFMADD231PS Z16, Z19, Z2; \
	VFMADD231PS Z17, Z19, Z3; \
	VBROADCASTSS (SI)(R8*2), Z20; \
	VFMADD231PS Z16, Z20, Z4; \
	VFMADD231PS Z17, Z20, Z5; \
	VBROADCASTSS (SI)(R11*1), Z21; \
	VFMADD231PS Z16, Z21, Z6; \
	VFMADD231PS Z17, Z21, Z7; \
	VBROADCASTSS (R12), Z22; \
	VFMADD231PS Z16, Z22, Z8; \
	VFMADD231PS Z17, Z22, Z9; \
	VBROADCASTSS (R12)(R8*1), Z23; \
	VFMADD231PS Z16, Z23, Z10; \
	VFMADD231PS Z17, Z23, Z11; \
	VBROADCASTSS (R12)(R8*2), Z24; \
	VFMADD231PS Z16, Z24, Z12; \
	VFMADD231PS Z17, Z24, Z13; \
	VBROADCASTSS (R12)(R11*1), Z25; \
	VFMADD231PS Z16, Z25, Z14; \
	VFMADD231PS Z17, Z25, Z15; \
	ADDQ R9, SI; \
	ADDQ R9, R12; \
	ADDQ R10, DI

// STORE writes one row's two accumulators, the second off bytes after the
// first (a vector's width), to (DI), adding what is there when AX is
// non-zero, and moves DI to the next row.
#define STORE(lo, hi, off) \
	TESTQ AX, AX; \
	JZ 3(PC); \
	VADDPS (DI), lo, lo; \
	VADDPS off(DI), hi, hi; \
	VMOVUPS lo, (DI); \
	VMOVUPS hi, off(DI); \
	ADDQ R10, DI

// func sgemm8x32(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool)
//
// c[i][j] (+)= sum over p < k of a[i*rsA + p*csA] * b[p*ldb + j] for
// i < 8, j < 32; strides in bytes, c row-major with row stride ldc.
TEXT ·sgemm8x32(SB), NOSPLIT, $0-65
	KERNEL_ARGS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	CMPQ CX, $2
	JLT tail

loop2:
	KSTEP
	KSTEP
	SUBQ $2, CX
	CMPQ CX, $2
	JGE loop2

tail:
	TESTQ CX, CX
	JZ store
	KSTEP

store:
	STORE_ARGS
	STORE(Z0, Z1, 64)
	STORE(Z2, Z3, 64)
	STORE(Z4, Z5, 64)
	STORE(Z6, Z7, 64)
	STORE(Z8, Z9, 64)
	STORE(Z10, Z11, 64)
	STORE(Z12, Z13, 64)
	STORE(Z14, Z15, 64)
	VZEROUPPER
	RET

// One k step of the 6x16 AVX2 kernel: two 8-float vectors of B's row,
// then for each of the 6 rows of A its element broadcast and two fused
// multiply-adds into that row's accumulators (12 accumulators, 2 vectors
// of B and 2 broadcasts: 16 registers).
#define KSTEP6 \
	VMOVUPS (DI), Y12; \
	VMOVUPS 32(DI), Y13; \
	VBROADCASTSS (SI), Y14; \
	VBROADCASTSS (SI)(R8*1), Y15; \
	VFMADD231PS Y12, Y14, Y0; \
	VFMADD231PS Y13, Y14, Y1; \
	VFMADD231PS Y12, Y15, Y2; \
	VFMADD231PS Y13, Y15, Y3; \
	VBROADCASTSS (SI)(R8*2), Y14; \
	VBROADCASTSS (SI)(R11*1), Y15; \
	VFMADD231PS Y12, Y14, Y4; \
	VFMADD231PS Y13, Y14, Y5; \
	VFMADD231PS Y12, Y15, Y6; \
	VFMADD231PS Y13, Y15, Y7; \
	VBROADCASTSS (R12), Y14; \
	VBROADCASTSS (R12)(R8*1), Y15; \
	VFMADD231PS Y12, Y14, Y8; \
	VFMADD231PS Y13, Y14, Y9; \
	VFMADD231PS Y12, Y15, Y10; \
	VFMADD231PS Y13, Y15, Y11; \
	ADDQ R9, SI; \
	ADDQ R9, R12; \
	ADDQ R10, DI

// func sgemm6x16(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool)
//
// c[i][j] (+)= sum over p < k of a[i*rsA + p*csA] * b[p*ldb + j] for
// i < 6, j < 16; strides in bytes, c row-major with row stride ldc. AVX2
// and FMA.
TEXT ·sgemm6x16(SB), NOSPLIT, $0-65
	KERNEL_ARGS
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	CMPQ CX, $2
	JLT tail6

loop6:
	KSTEP6
	KSTEP6
	SUBQ $2, CX
	CMPQ CX, $2
	JGE loop6

tail6:
	TESTQ CX, CX
	JZ store6
	KSTEP6

store6:
	STORE_ARGS
	STORE(Y0, Y1, 32)
	STORE(Y2, Y3, 32)
	STORE(Y4, Y5, 32)
	STORE(Y6, Y7, 32)
	STORE(Y8, Y9, 32)
	STORE(Y10, Y11, 32)
	VZEROUPPER
	RET
