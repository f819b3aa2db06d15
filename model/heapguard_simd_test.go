//go:build goexperiment.simd && amd64

package model

import (
	"simd/archsimd"
	"unsafe"
)

// canOverRead says overRead really loads past a slice's end here.
const canOverRead = true

// overRead loads the last 4 bytes of b as GoMLX's kernels load a row's
// tail: a partial vector load, which Go 1.27 compiles to a full vector
// load (and a masked move), so it reads 60 bytes past b's end with
// AVX-512, 28 with AVX2 (whose kernels GoMLX takes on CPUs without it).
//
//go:noinline
func overRead(b []byte) float32 {
	f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
	var out [16]float32
	if archsimd.X86.AVX512() {
		v, _ := archsimd.LoadFloat32x16Part(f[len(f)-1:])
		v.Store(out[:])
	} else {
		v, _ := archsimd.LoadFloat32x8Part(f[len(f)-1:])
		v.Store(out[:8])
	}
	return out[0]
}
