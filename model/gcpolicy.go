package model

import (
	"os"
	"runtime/debug"
	"sync"
)

// GoBackendGCPercent is the Go collector's GOGC that opening the Go backend
// sets (see lowerGCPercent).
const GoBackendGCPercent = 10

var gcPolicyOnce sync.Once

// lowerGCPercent sets the collector's GOGC to GoBackendGCPercent the first
// time the Go backend opens, unless GOGC is set in the environment or the
// program already chose a value other than Go's default of 100.
//
// Why: the Go backend's values are large buffers of numbers (no pointers),
// which a collection marks in microseconds, and the backend keeps freed
// buffers in pools that the collector counts as live. With GOGC=100 the heap
// may grow to twice that before the next collection, so a full-scene
// inference's peak RSS was about 1.5 times its live data. At GOGC=10 the
// collector runs about every 10% of growth; measured with bench/cmd/netbench
// at Houston's size (349x1905x144), cell encoder: inference peak RSS 2.08 ->
// 1.42 GB, training step 4.29 -> 3.32 GB, the times within the runs' spread
// (see docs/model.md, "Where the memory goes").
func lowerGCPercent() {
	gcPolicyOnce.Do(func() {
		if _, ok := os.LookupEnv("GOGC"); ok {
			return
		}
		if prev := debug.SetGCPercent(GoBackendGCPercent); prev != 100 {
			debug.SetGCPercent(prev)
		}
	})
}
