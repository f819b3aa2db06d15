package backend

import (
	"os"
	"testing"
)

func TestApplyXLASettings(t *testing.T) {
	defer Configure(Settings{})
	for _, tc := range []struct {
		name             string
		s                Settings
		flags, level     string // the user's XLA_FLAGS and TF_CPP_MIN_LOG_LEVEL ("-": unset)
		wantFlags, wantL string
	}{
		{"nothing asked", Settings{}, "", "-", "", "-"},
		{"quick compile", Settings{XLAQuickCompile: true}, "", "-", xlaTrainingAutotuneFlag, "-"},
		{"quick compile kept beside the user's flags", Settings{XLAQuickCompile: true}, "--xla_gpu_cuda_data_dir=/x", "-", "--xla_gpu_cuda_data_dir=/x " + xlaTrainingAutotuneFlag, "-"},
		{"the user's autotune level wins", Settings{XLAQuickCompile: true}, "--xla_gpu_autotune_level=4", "-", "--xla_gpu_autotune_level=4", "-"},
		{"quiet", Settings{XLAQuiet: true}, "", "-", "", "2"},
		{"the user's log level wins", Settings{XLAQuiet: true}, "", "0", "", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XLA_FLAGS", tc.flags)
			t.Setenv("TF_CPP_MIN_LOG_LEVEL", "")
			if tc.level == "-" {
				os.Unsetenv("TF_CPP_MIN_LOG_LEVEL")
			} else {
				os.Setenv("TF_CPP_MIN_LOG_LEVEL", tc.level)
			}
			Configure(tc.s)
			applyXLASettings()
			if got := os.Getenv("XLA_FLAGS"); got != tc.wantFlags {
				t.Errorf("XLA_FLAGS %q -> %q, want %q", tc.flags, got, tc.wantFlags)
			}
			got, set := os.LookupEnv("TF_CPP_MIN_LOG_LEVEL")
			if !set {
				got = "-"
			}
			if got != tc.wantL {
				t.Errorf("TF_CPP_MIN_LOG_LEVEL %q -> %q, want %q", tc.level, got, tc.wantL)
			}
		})
	}
}
