package kernels

import (
	"runtime"
	"syscall"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in seconds (the goroutine is
// locked to its thread on the first call): timings that other processes'
// load does not inflate, as long as the work stays on this goroutine.
func threadCPU() float64 {
	runtime.LockOSThread()
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}
