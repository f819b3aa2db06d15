package model

import (
	"os"
	"runtime/debug"
	"sync"
)

// GoBackendGCPercent is the Go collector's GOGC that opening the Go backend
// sets (see lowerGCPercent).
const GoBackendGCPercent = 20

var gcPolicyOnce sync.Once

// lowerGCPercent sets the collector's GOGC to GoBackendGCPercent the first
// time the Go backend opens, unless GOGC is set in the environment or the
// program already chose a value other than Go's default of 100.
//
// Why: the Go backend's values are large buffers of numbers (no pointers),
// which a collection marks quickly, and the backend keeps freed buffers in
// pools (sync.Pool) that the collector counts as live. With GOGC=100 the
// heap may grow to twice that before the next collection. Lower settings
// bound the growth, but each collection also empties the pools a little
// (a pooled buffer survives one collection), so below about 20 a short
// inference starts to allocate its buffers anew and slows down. Measured
// with bench/cmd/netbench, cell encoder, GOGC 100 -> 20: Houston's size
// (349x1905x144) inference peak RSS 1.64 -> 1.37 GB (the branches in
// sequence, see encode) and training step 4.29 -> 3.46 GB, times within the
// runs' spread; at Pavia's size (610x340x103) inference 0.28 s at 20 and
// 100 alike, 0.38 s at 15 and 0.39 s at 10 (see docs/model.md, "Where the
// memory goes").
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
