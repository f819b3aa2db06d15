package model

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// heapGuardMaxBytes is the largest heap guard (see GuardHeap): the address
// space mapped past the Go heap's start when no address-space limit is set.
const heapGuardMaxBytes = 1 << 30

// heapGuardStepBytes is the Go runtime's heap growth step (one palloc chunk,
// 4 MiB): a guard is a whole number of steps.
const heapGuardStepBytes = 4 << 20

var (
	heapGuardOnce  sync.Once
	heapGuardBytes int64
	heapGuardSink  []byte
)

// GuardHeap maps address space for the Go heap to grow into before the Go
// backend first runs, so that GoMLX's kernels cannot read past the end of
// the mapped heap. It is idempotent; opening the Go backend calls it too,
// but a command should call it before it reads large data (see below).
//
// Why: the Go 1.27 simd experiment's partial vector loads
// (archsimd.LoadFloat32x16Part, simd.LoadFloat32sPart) compile to a full
// 64-byte load followed by a masked move, not to a masked load, so GoMLX's
// Go-backend kernels read up to 60 bytes past the end of a buffer's last
// row. Inside the heap that is harmless; but GoMLX allocates every buffer
// with a size rounded to a power of two or 1.5 times one, so large buffers
// end on a page boundary, and one that ends where the mapped heap ends (a
// 4 MiB buffer the heap grew one 4 MiB step for, say) faults (SIGSEGV,
// "unexpected fault address": seen in two of three stopped runs of
// TestSignalStops). The over-read cannot be padded from outside GoMLX (its
// buffers are allocated inside the backend), so the heap's mapped end is
// moved out of reach: a block is allocated once and dropped, and the
// runtime keeps its address space mapped read-write (it only advises the
// kernel to drop the pages), so buffers no longer end at an unmapped page
// until the live heap outgrows the guard. TestHeapGuardKeepsBufferEndsReadable
// checks that the 64 bytes past page-exact buffers are mapped.
//
// How large: without an address-space limit (ulimit -v, RLIMIT_AS) 1 GiB,
// which costs address space only. Under a limit the guard is a quarter of
// the address space the process has not used yet, so that threads, GDAL's
// and glibc's arenas still find room; a heap that could outgrow it would
// not fit under the limit anyway in most runs (a 2 GB limit leaves a few
// hundred MB for the heap). Made while the heap is still fresh from the OS
// (before a model or scene is read), the block needs no zeroing and never
// becomes resident; made later it reused freed pages that the runtime had
// to zero, and peak RSS jumped by up to 1 GiB at random, which broke
// --max-memory. FreeOSMemory hands its pages back so it does not count
// against a Go memory limit.
func GuardHeap() {
	heapGuardOnce.Do(func() {
		heapGuardBytes = heapGuardSize(addressSpaceLeft())
		if v, ok := os.LookupEnv(HeapGuardEnv); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				heapGuardBytes = n
			}
		}
		if heapGuardBytes == 0 {
			return
		}
		heapGuardSink = make([]byte, heapGuardBytes)
		heapGuardSink = nil
		runtime.GC()
		debug.FreeOSMemory()
	})
}

// HeapGuardEnv names the environment variable that sets the guard's size in
// bytes instead (0: none), for a site whose address-space limit leaves no
// room for one; without a guard the Go backend may fault as described
// above.
const HeapGuardEnv = "PNEC_HEAP_GUARD_BYTES"

// HeapGuardBytes is the size of the guard GuardHeap made (0 before it ran,
// or when the address-space limit left no room for one).
func HeapGuardBytes() int64 { return heapGuardBytes }

// heapGuardSize is the guard for leftBytes of address space still free
// under the limit (< 0: no limit).
func heapGuardSize(leftBytes int64) int64 {
	if leftBytes < 0 {
		return heapGuardMaxBytes
	}
	g := leftBytes / 4
	g -= g % heapGuardStepBytes
	return min(max(g, 0), heapGuardMaxBytes)
}

// addressSpaceLeft is how much address space the process may still map
// under RLIMIT_AS: the soft limit less the current virtual size (VmSize in
// /proc/self/status), or -1 without a limit. Where VmSize cannot be read,
// half the limit is taken as used.
func addressSpaceLeft() int64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err != nil || rl.Cur == ^uint64(0) || rl.Cur > 1<<62 {
		return -1
	}
	limit := int64(rl.Cur)
	used := limit / 2
	if vm, ok := virtualSizeBytes(); ok {
		used = vm
	}
	return max(limit-used, 0)
}

// virtualSizeBytes reads the process's VmSize from /proc/self/status.
func virtualSizeBytes() (int64, bool) { return procStatusBytes("VmSize") }

// procStatusBytes reads a size field of /proc/self/status ("VmSize",
// "VmHWM", in kB there), bytes; false where it cannot (not Linux).
func procStatusBytes(field string) (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
