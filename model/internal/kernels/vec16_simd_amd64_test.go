//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"testing"
)

// TestF16Scale: Scale is x 2^n exactly over the exponents exp16 gives
// (-126..128) and beyond, as VSCALEFPS is.
func TestF16Scale(t *testing.T) {
	if !haveGemm256 {
		t.Skip("no AVX2 and FMA on this machine")
	}
	var xs, ns [16]float32
	for n := -150; n <= 254; n += 16 {
		for i := range xs {
			xs[i] = 0.75 + float32(i)/32
			ns[i] = float32(n + i)
		}
		var got [16]float32
		load16(xs[:]).Scale(load16(ns[:])).Store(got[:])
		for i := range got {
			if ns[i] > 254 {
				continue // beyond Scale's range
			}
			want := float32(math.Ldexp(float64(xs[i]), int(ns[i])))
			if w := float64(want); w != 0 && !math.IsInf(w, 0) && math.Abs(w) < 0x1p-126 {
				continue // subnormal: two steps may round twice
			}
			if got[i] != want {
				t.Errorf("%g x 2^%g = %g, want %g", xs[i], ns[i], got[i], want)
			}
		}
	}
}

// TestF16Bytes: storeUint8 and eqUint8 move the argmax positions between
// f16 lanes and bytes, each lane its own.
func TestF16Bytes(t *testing.T) {
	if !haveGemm256 {
		t.Skip("no AVX2 and FMA on this machine")
	}
	var pos [16]float32
	for i := range pos {
		pos[i] = float32((i * 7) % 4)
	}
	b := make([]uint8, 16)
	load16(pos[:]).storeUint8(b)
	for p := uint32(0); p < 4; p++ {
		var got [16]float32
		bcast16(1).Masked(eqUint8(b, p)).Store(got[:])
		for i := range got {
			want := float32(0)
			if uint32(pos[i]) == p {
				want = 1
			}
			if b[i] != uint8(pos[i]) || got[i] != want {
				t.Errorf("lane %d, position %g, p %d: byte %d, mask lane %g", i, pos[i], p, b[i], got[i])
			}
		}
	}
}

// TestDots8AVX2: Dots8 on the AVX2 kernel, which an AVX-512 machine would
// not otherwise take, gives the same dots bit for bit.
func TestDots8AVX2(t *testing.T) {
	if !HaveSIMD || !haveGemm256 {
		t.Skip("no AVX2 and FMA on this machine")
	}
	defer func(a, b bool) { have512, haveGemm512 = a, b }(have512, haveGemm512)
	have512, haveGemm512 = false, false
	checkDots8(t)
}

// TestSpanMaxAVX2: SpanMax on the 8-lane path, which an AVX-512 machine
// would not otherwise take, gives the scalar maxima, and stays inside its
// slices.
func TestSpanMaxAVX2(t *testing.T) {
	if !HaveSIMD {
		t.Skip("no AVX2 and FMA on this machine")
	}
	defer func(a bool) { have512 = a }(have512)
	have512 = false
	TestSpanMax(t)
	TestKernelsStayInsideTheirSlices(t)
}
