//go:build goexperiment.simd && amd64

package kernels

import "simd/archsimd"

// f16 is FullRes's unit of work, 16 channels' float32 values, held as two
// AVX2 vectors so that the stage runs on every x86-64 machine with AVX2 and
// FMA, not only on those with AVX-512 (AMD before Zen 4, most Intel client
// parts). Each method is the lane-wise operation on both halves; the
// AVX-512-only instructions the stage needs (VSCALEFPS, VRNDSCALEPS, the
// narrowing moves) are written with AVX2 ones that give the same values.
type f16 struct{ lo, hi archsimd.Float32x8 }

// m16 is a lane mask of an f16.
type m16 struct{ lo, hi archsimd.Mask32x8 }

func load16(s []float32) f16 {
	return f16{archsimd.LoadFloat32x8(s[:8]), archsimd.LoadFloat32x8(s[8:16])}
}

func bcast16(x float32) f16 {
	v := archsimd.BroadcastFloat32x8(x)
	return f16{v, v}
}

func (x f16) Store(s []float32) { x.lo.Store(s[:8]); x.hi.Store(s[8:16]) }

func (x f16) Add(y f16) f16       { return f16{x.lo.Add(y.lo), x.hi.Add(y.hi)} }
func (x f16) Sub(y f16) f16       { return f16{x.lo.Sub(y.lo), x.hi.Sub(y.hi)} }
func (x f16) Mul(y f16) f16       { return f16{x.lo.Mul(y.lo), x.hi.Mul(y.hi)} }
func (x f16) Div(y f16) f16       { return f16{x.lo.Div(y.lo), x.hi.Div(y.hi)} }
func (x f16) Max(y f16) f16       { return f16{x.lo.Max(y.lo), x.hi.Max(y.hi)} }
func (x f16) Min(y f16) f16       { return f16{x.lo.Min(y.lo), x.hi.Min(y.hi)} }
func (x f16) MulAdd(y, z f16) f16 { return f16{x.lo.MulAdd(y.lo, z.lo), x.hi.MulAdd(y.hi, z.hi)} }
func (x f16) Sqrt() f16           { return f16{x.lo.Sqrt(), x.hi.Sqrt()} }
func (x f16) Neg() f16            { return f16{x.lo.Neg(), x.hi.Neg()} }
func (x f16) Abs() f16            { return f16{x.lo.Abs(), x.hi.Abs()} }

// Round rounds to the nearest integer, ties to even.
func (x f16) Round() f16 { return f16{x.lo.Round(), x.hi.Round()} }

func (x f16) Greater(y f16) m16      { return m16{x.lo.Greater(y.lo), x.hi.Greater(y.hi)} }
func (x f16) GreaterEqual(y f16) m16 { return m16{x.lo.GreaterEqual(y.lo), x.hi.GreaterEqual(y.hi)} }
func (x f16) Less(y f16) m16         { return m16{x.lo.Less(y.lo), x.hi.Less(y.hi)} }

// IfElse is x where m is set, else y.
func (x f16) IfElse(m m16, y f16) f16 { return f16{x.lo.IfElse(m.lo, y.lo), x.hi.IfElse(m.hi, y.hi)} }

// Masked is x where m is set, else 0.
func (x f16) Masked(m m16) f16 { return f16{x.lo.Masked(m.lo), x.hi.Masked(m.hi)} }

// Scale is x 2^n for whole numbers n in [-252, 254] (VSCALEFPS): two
// multiplications by powers of two built in the exponent bits, n split in
// halves so that each power is a normal float32, which gives x 2^n exactly
// wherever that is a normal float32.
func (x f16) Scale(n f16) f16 { return f16{scale8(x.lo, n.lo), scale8(x.hi, n.hi)} }

func scale8(x, n archsimd.Float32x8) archsimd.Float32x8 {
	ni := n.ConvertToInt32()
	n1 := ni.ShiftAllRight(1) // floor(n/2): arithmetic shift
	n2 := ni.Sub(n1)
	bias := archsimd.BroadcastInt32x8(127)
	p1 := n1.Add(bias).ShiftAllLeft(23).AsFloat32x8()
	p2 := n2.Add(bias).ShiftAllLeft(23).AsFloat32x8()
	return x.Mul(p1).Mul(p2)
}

// storeUint8 stores x's lanes, whole numbers 0..255, as bytes.
func (x f16) storeUint8(dst []uint8) {
	var v [16]int32
	x.lo.ConvertToInt32().Store(v[:8])
	x.hi.ConvertToInt32().Store(v[8:])
	for i, b := range v {
		dst[i] = uint8(b)
	}
}

// eqUint8 is the mask of the 16 bytes of b equal to p.
func eqUint8(b []uint8, p uint32) m16 {
	var hi [16]uint8
	copy(hi[:8], b[8:16])
	pv := archsimd.BroadcastUint32x8(p)
	return m16{
		archsimd.LoadUint8x16(b[:16]).ExtendLo8ToUint32().Equal(pv),
		archsimd.LoadUint8x16(hi[:]).ExtendLo8ToUint32().Equal(pv),
	}
}
