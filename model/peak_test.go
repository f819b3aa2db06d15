package model

// peakRSSBytes reads the process's peak resident set size from /proc (Linux).
func peakRSSBytes() (int64, bool) { return procStatusBytes("VmHWM") }
