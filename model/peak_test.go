package model

import "github.com/pnec/pnec/internal/resources/memory"

// peakRSSBytes reads the process's peak resident set size from /proc (Linux).
func peakRSSBytes() (int64, bool) { return memory.StatusBytes("/", "VmHWM") }
