package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pnec/pnec/pipelines/pipelinetest"
	"github.com/pnec/pnec/processor"
)

// TestBudgetHolds runs the real binary on a wide scene (the shape whose
// canvas stripe the old planner missed) and a tall one with a small
// --max-memory and checks the kernel's peak RSS of the process against it:
// within 10% above.
func TestBudgetHolds(t *testing.T) {
	bin := pnecBinary(t)
	modelPath, err := pipelinetest.ModelPath()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		rows, cols int
		budget     string
	}{
		{"wide", 160, 8192, "260M"},
		{"tall", 3072, 256, "160M"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			scene := bigFixtureScene(t, dir, tc.rows, tc.cols)
			cmd := exec.Command(bin, "classify", "--backend", "go", "--model", modelPath, "--scene", scene,
				"--out", filepath.Join(dir, "p.tif"), "--max-memory", tc.budget)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, tail(string(out), 2000))
			}
			budget, _ := processor.ParseBytes(tc.budget)
			peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			t.Logf("peak RSS %s for --max-memory %s (%.2f)\n%s", processor.FormatBytes(peak), tc.budget, float64(peak)/float64(budget), tail(string(out), 400))
			if float64(peak) > 1.1*float64(budget) {
				t.Errorf("peak RSS %s, more than 10%% over --max-memory %s", processor.FormatBytes(peak), tc.budget)
			}
		})
	}
}
