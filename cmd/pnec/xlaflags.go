package main

import (
	"os"
	"strings"
)

// xlaTrainingAutotuneFlag turns off XLA's GPU autotuning for processes that
// train. Measured on an NVIDIA H100 (docs/development.md, "GPU (XLA/CUDA)"):
// 200 epochs of the paper encoder at Pavia size took 82.0 s with autotuning
// (about 60 s of it compiling the training step) and 26.3 s without; an epoch
// costs about 50 ms instead of 15 ms, so autotuning pays only after about
// 1,300 epochs. Inference keeps autotuning: its device time at Pavia size is
// 6.7 ms with it and 20.7 ms without, and a classify run reuses one compiled
// tile shape.
const xlaTrainingAutotuneFlag = "--xla_gpu_autotune_level=0"

// preferQuickXLACompile adds xlaTrainingAutotuneFlag to XLA_FLAGS unless the
// user already chose an autotune level there. XLA reads the variable once,
// when the first PJRT client starts, so this must run before any backend is
// opened; it has no effect on the Go backend.
func preferQuickXLACompile() {
	flags := os.Getenv("XLA_FLAGS")
	if strings.Contains(flags, "xla_gpu_autotune_level") {
		return
	}
	os.Setenv("XLA_FLAGS", strings.TrimSpace(flags+" "+xlaTrainingAutotuneFlag))
}
