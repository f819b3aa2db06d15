//go:build goexperiment.simd && amd64

package model

import (
	"simd/archsimd"
	"unsafe"
)

// canOverRead says overRead really loads past a slice's end here.
const canOverRead = true

// overRead loads the last 4 bytes of b as GoMLX's kernels load a row's
// tail: a partial vector load, which Go 1.27 compiles to a full 64-byte
// load (and a masked move), so it reads 60 bytes past b's end.
//
//go:noinline
func overRead(b []byte) float32 {
	f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
	v, _ := archsimd.LoadFloat32x16Part(f[len(f)-1:])
	var out [16]float32
	v.Store(out[:])
	return out[0]
}
