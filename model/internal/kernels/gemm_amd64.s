//go:build amd64

#include "textflag.h"

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

// STORE writes one row's two accumulators to (DI), adding what is there
// when AX is non-zero, and moves DI to the next row.
#define STORE(lo, hi) \
	TESTQ AX, AX; \
	JZ 3(PC); \
	VADDPS (DI), lo, lo; \
	VADDPS 64(DI), hi, hi; \
	VMOVUPS lo, (DI); \
	VMOVUPS hi, 64(DI); \
	ADDQ R10, DI

// func sgemm8x32(k int, a unsafe.Pointer, rsA, csA uintptr, b unsafe.Pointer, ldb uintptr, c unsafe.Pointer, ldc uintptr, accum bool)
//
// c[i][j] (+)= sum over p < k of a[i*rsA + p*csA] * b[p*ldb + j] for
// i < 8, j < 32; strides in bytes, c row-major with row stride ldc.
TEXT ·sgemm8x32(SB), NOSPLIT, $0-65
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rsA+16(FP), R8
	MOVQ csA+24(FP), R9
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), R10
	LEAQ (R8)(R8*2), R11
	LEAQ (SI)(R8*4), R12
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
	MOVQ c+48(FP), DI
	MOVQ ldc+56(FP), R10
	MOVBLZX accum+64(FP), AX
	STORE(Z0, Z1)
	STORE(Z2, Z3)
	STORE(Z4, Z5)
	STORE(Z6, Z7)
	STORE(Z8, Z9)
	STORE(Z10, Z11)
	STORE(Z12, Z13)
	STORE(Z14, Z15)
	VZEROUPPER
	RET
