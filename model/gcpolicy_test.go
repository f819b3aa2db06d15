package model

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/resources"
	"github.com/pnec/pnec/model/backend"
)

// TestGoBackendLowersGCPercent opens the Go backend in a fresh process
// (the policy applies once per process) and reads the collector's GOGC
// after: resources.GoBackendGCPercent by default, left alone when GOGC is set in the
// environment or the program chose another value first.
func TestGoBackendLowersGCPercent(t *testing.T) {
	if mode := os.Getenv("PNEC_GCPOLICY_CHILD"); mode != "" {
		if mode == "program" {
			debug.SetGCPercent(40)
		}
		b, _, err := backend.OpenName("go")
		if err != nil {
			fmt.Println("ERROR", err)
			return
		}
		b.Finalize()
		fmt.Printf("GOGC %d\n", debug.SetGCPercent(-1))
		return
	}
	for _, tc := range []struct {
		mode, env string
		want      int
	}{
		{"default", "", resources.GoBackendGCPercent},
		{"environment", "GOGC=70", 70},
		{"program", "", 40},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestGoBackendLowersGCPercent$", "-test.count=1")
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOGC=") {
					env = append(env, kv)
				}
			}
			env = append(env, "PNEC_GCPOLICY_CHILD="+tc.mode)
			if tc.env != "" {
				env = append(env, tc.env)
			}
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			want := fmt.Sprintf("GOGC %d\n", tc.want)
			if !strings.Contains(string(out), want) {
				t.Errorf("got %q, want a line %q", out, want)
			}
		})
	}
}
