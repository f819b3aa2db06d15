// Package threadcpu reads the calling thread's CPU time, for benchmarks
// whose figures other processes' load must not inflate.
package threadcpu

import (
	"runtime"
	"syscall"
	"unsafe"
)

// Seconds is the calling thread's CPU time in seconds. It locks the
// calling goroutine to its thread (for good: a benchmark's goroutine), so
// that work done on the goroutine between two calls is counted, as long
// as it stays on it.
func Seconds() float64 {
	runtime.LockOSThread()
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3 // CLOCK_THREAD_CPUTIME_ID (Linux)
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}
