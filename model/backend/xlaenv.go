package backend

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

// applyXLASettings writes Settings' XLA options into the environment, the
// only place XLA reads them (once, when the first PJRT client starts or the
// plugin loads): so it runs just before a plugin is loaded, and a variable
// the user set wins.
func applyXLASettings() {
	s := CurrentSettings()
	if s.XLAQuiet {
		if _, set := os.LookupEnv("TF_CPP_MIN_LOG_LEVEL"); !set {
			os.Setenv("TF_CPP_MIN_LOG_LEVEL", "2")
		}
	}
	if s.XLAQuickCompile {
		if flags := os.Getenv("XLA_FLAGS"); !strings.Contains(flags, "xla_gpu_autotune_level") {
			os.Setenv("XLA_FLAGS", strings.TrimSpace(flags+" "+xlaTrainingAutotuneFlag))
		}
	}
}
