package model

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// heapGuardBytes is how far past the current end of the Go heap address
// space is mapped once before the Go backend first runs (see guardHeapEnd).
const heapGuardBytes = 1 << 30

var (
	heapGuardOnce sync.Once
	heapGuardSink []byte
)

// guardHeapEnd works around the Go 1.27 simd experiment's partial vector
// loads (archsimd.LoadFloat32x16Part and relatives), which the compiler
// does not always turn into masked loads: GoMLX's Go-backend kernels then
// read up to 64 bytes past the end of a buffer's last row. Inside the heap
// that is harmless, but a buffer that ends exactly where the mapped heap
// ends faults (SIGSEGV, "unexpected fault address"); it was seen in about
// two of three stopped runs of a cmd/pnec test. Allocating a large block
// once and dropping it maps that much more address space read-write; the
// runtime keeps it mapped after freeing it (it only advises the kernel to
// drop the pages), so later buffers no longer end at an unmapped page until
// the heap outgrows it. The block is never written, so it costs no resident
// memory.
func guardHeapEnd() {
	heapGuardOnce.Do(func() {
		heapGuardSink = make([]byte, heapGuardBytes)
		heapGuardSink = nil
		runtime.GC()
		debug.FreeOSMemory()
	})
}

// The guard is made when the process starts, while the heap is still
// fresh from the OS: a 1 GiB block then needs no zeroing and never becomes
// resident. Made later (when the Go backend opened, after the model file
// and a scene had been read), it reused freed heap pages that the runtime
// had to zero, and the process's peak RSS jumped by up to 1 GiB at random
// (pnec classify peaked at 1.1 GiB instead of 0.38 GiB on the same small
// scene in 2 runs of 4), which broke --max-memory. FreeOSMemory hands the
// freed block's pages back so it does not count against a Go memory limit.
func init() { guardHeapEnd() }
