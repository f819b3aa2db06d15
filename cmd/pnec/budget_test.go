package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
)

// smallestPlanBytes is the memory model's estimate for scene through the
// model at modelPath in 64 px tiles, the smallest plan the planner makes.
func smallestPlanBytes(t *testing.T, modelPath, scene string, base processor.Options) int64 {
	t.Helper()
	m, err := model.Load(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := geo.Open(scene)
	if err != nil {
		t.Fatal(err)
	}
	info := sc.Info()
	sc.Close()
	opts := base
	opts.TileSize, opts.MaxMemoryBytes = 64, 1<<40
	p, _, err := processor.PlanSceneInfo(info, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return processor.PlannedBytes(p, info, m, opts)
}

// TestBudgetHolds runs the real binary on a wide scene (the shape whose
// canvas stripe the old planner missed) and a tall one with a small
// --max-memory and checks the kernel's peak RSS of the process against it:
// within 10% above.
func TestBudgetHolds(t *testing.T) {
	bin := pnecBinary(t)
	modelPath, err := fixture.ModelPath()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		rows, cols int
		budget     string
		extra      []string          // more flags
		opts       processor.Options // what they ask for
	}{
		{"wide", 160, 8192, "260M", nil, processor.Options{}},
		{"tall", 3072, 256, "160M", nil, processor.Options{}},
		// The probabilities' rows in flight and stage cache are counted too.
		{"wide_probabilities", 160, 8192, "260M", []string{"--probabilities", "network"}, processor.Options{Probabilities: processor.ProbabilitiesNetwork}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			scene := bigFixtureScene(t, dir, tc.rows, tc.cols)
			budget, _ := processor.ParseBytes(tc.budget)
			// A recalibrated memory model may need more for the smallest
			// plan (64 px tiles): keep the budget above that, so the test
			// checks the budget holds rather than the calibration's level.
			if need := smallestPlanBytes(t, modelPath, scene, tc.opts); budget < need*5/4 {
				budget = need * 5 / 4
			}
			args := append([]string{"classify", "--backend", "go", "--model", modelPath, "--scene", scene,
				"--out", filepath.Join(dir, "p.tif"), "--max-memory", fmt.Sprint(budget)}, tc.extra...)
			cmd := exec.Command(bin, args...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, tail(string(out), 2000))
			}
			peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			t.Logf("peak RSS %s for --max-memory %s (%.2f)\n%s", processor.FormatBytes(peak), processor.FormatBytes(budget), float64(peak)/float64(budget), tail(string(out), 400))
			if float64(peak) > 1.1*float64(budget) {
				t.Errorf("peak RSS %s, more than 10%% over --max-memory %s", processor.FormatBytes(peak), processor.FormatBytes(budget))
			}
		})
	}
}
