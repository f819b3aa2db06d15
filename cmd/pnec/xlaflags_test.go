package main

import (
	"os"
	"testing"
)

func TestPreferQuickXLACompile(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", xlaTrainingAutotuneFlag},
		{"--xla_gpu_cuda_data_dir=/x", "--xla_gpu_cuda_data_dir=/x " + xlaTrainingAutotuneFlag},
		{"--xla_gpu_autotune_level=4", "--xla_gpu_autotune_level=4"},
	} {
		t.Setenv("XLA_FLAGS", tc.in)
		preferQuickXLACompile()
		if got := os.Getenv("XLA_FLAGS"); got != tc.want {
			t.Errorf("XLA_FLAGS %q -> %q, want %q", tc.in, got, tc.want)
		}
	}
}
