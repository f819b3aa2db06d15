package pipelines

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/internal/resources/memory"
)

// TestRunDividesBudget: --jobs N splits the memory budget N ways, the
// default budget (which respects cgroup limits) as well as a given one.
func TestRunDividesBudget(t *testing.T) {
	modelPath := tinyModel(t)
	_, args := batchInputs(t)
	args = args[:2] // the good scenes
	for _, tc := range []struct {
		budget int64
		jobs   int
	}{{0, 2}, {4 << 30, 2}, {3 << 30, 3}} {
		t.Run(fmt.Sprintf("budget%d_jobs%d", tc.budget>>20, tc.jobs), func(t *testing.T) {
			var rep bytes.Buffer
			cfg := Config{ModelPath: modelPath, OutDir: filepath.Join(t.TempDir(), "out"), Inputs: args, Jobs: tc.jobs, Report: &rep}
			cfg.Options.MaxMemoryBytes = tc.budget
			sum, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			whole := tc.budget
			if whole == 0 {
				whole = memory.DefaultBudget()
			}
			want := whole / int64(sum.Jobs)
			// The default reads MemAvailable, which moves between two reads.
			if d := sum.MaxMemoryBytesPerJob - want; d > want/20 || d < -want/20 {
				t.Errorf("%d jobs got %s each, want %s / %d", sum.Jobs, memory.FormatBytes(sum.MaxMemoryBytesPerJob), memory.FormatBytes(whole), sum.Jobs)
			}
			if sum.Jobs != min(tc.jobs, sum.Scenes) {
				t.Errorf("%d jobs, want %d", sum.Jobs, tc.jobs)
			}
			for _, r := range readReport(t, rep.Bytes()) {
				if r.Status != StatusDone {
					t.Errorf("%s: %s %s", r.Input, r.Status, r.Reason)
				}
			}
		})
	}
}
