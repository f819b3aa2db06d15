package pipelines

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/tiling"
)

// TestChooseJobsFollowsDefaultBackend: a batch with no
// backend named, on a machine where a CUDA PJRT plugin is found by pip's
// layout alone (jax_plugins/xla_cuda13 in a site-packages folder), plans
// its jobs for the backend the batch will run on: the one
// backend.Decide picks for it, one job at a time on the GPU. Before,
// chooseJobs re-read GOMLX_BACKEND only, planned CPU-style job counts, and
// each classifier then decided its backend again.
func TestChooseJobsFollowsDefaultBackend(t *testing.T) {
	site := filepath.Join(t.TempDir(), "site-packages")
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(backend.SitePackagesEnv, site)
	t.Setenv("GOMLX_BACKEND", "")
	t.Setenv(backend.CacheDirEnv, t.TempDir())
	// This machine stands for one with an NVIDIA GPU.
	saved := backend.GPUPresent
	backend.GPUPresent = func() bool { return true }
	defer func() { backend.GPUPresent = saved }()
	// One core for the Go backend: a large batch is then faster on the GPU
	// by MeasuredSpeed's figures, whatever the machine running the test.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m := fixture.LoadModelFile(t, fixture.WavelengthModel(t, t.TempDir()))
	const scenes = 1000
	want, err := backend.Decide("", backend.Job{Task: backend.TaskClassify, Scenes: scenes})
	if err != nil {
		t.Fatal(err)
	}
	if want.Kind != backend.XLACUDA || want.Plugin != plugin {
		t.Fatalf("set-up: DecideBackend chose %s (%s), not the plugin %s", want.Name, want.Reason, plugin)
	}
	jobs, b, err := chooseJobs(m, 0, processor.Options{}, scenes)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != want.Name || jobs != 1 {
		t.Errorf("chooseJobs planned %d jobs on %q, want 1 on %q", jobs, b.Name, want.Name)
	}
	// The classifiers open exactly that backend.
	var sum Summary
	_, opts := jobsAndOptions(Config{}, m, scenes, nil, &sum)
	if opts.Backend != want.Name || sum.Jobs != 1 || sum.Backend != want.Label() {
		t.Errorf("classifiers open %q with %d jobs (summary %q), want %q with 1", opts.Backend, sum.Jobs, sum.Backend, want.Name)
	}
}

// TestChooseJobsHoldsOneTile: the default job count never splits the
// budget into shares smaller than the smallest budget a scene of one model
// tile runs in (processor.SmallestBudget), where every scene would be
// refused; below that it plans one job, never none. Before, it divided
// the budget by the network's estimate for a 512 px tile alone (no
// process, reads or canvas): for this 200-band model 216 MiB against the
// smallest budget's 871 MiB, so on two cores it planned two jobs on 1.5
// times the smallest budget and each share refused even a 384 x 384
// scene.
func TestChooseJobsHoldsOneTile(t *testing.T) {
	m := manyBandModel(t, 200)
	side := processor.CanonicalTile
	need, err := processor.SmallestBudget(side, side, m.Bands(), m, processor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The scene SmallestBudget assumes: 4-byte samples in 256 px blocks.
	info := geo.Info{Rows: side, Cols: side, Bands: m.Bands(), SampleBytes: 4, BlockCols: 256, BlockRows: 256}
	if _, _, err := processor.PlanSceneInfo(info, m, processor.Options{MaxMemoryBytes: need - 1}); !errors.Is(err, tiling.ErrBudget) {
		t.Fatalf("set-up: %d bytes, one less than the smallest budget, gave %v; want a refusal", need-1, err)
	}
	for _, tc := range []struct {
		name   string
		budget int64
		want   int
	}{
		{"below one scene's need", need - 1, 1},
		{"one and a half", need * 3 / 2, 1},
		{"two", 2 * need, min(2, runtime.NumCPU())},
		{"a hundred", 100 * need, runtime.NumCPU()},
	} {
		jobs, _, err := chooseJobs(m, 0, processor.Options{Backend: "go", MaxMemoryBytes: tc.budget}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if jobs != tc.want {
			t.Errorf("%s (%d bytes, smallest %d): %d jobs, want %d", tc.name, tc.budget, need, jobs, tc.want)
		}
		if share := tc.budget / int64(max(jobs, 1)); tc.budget >= need {
			if _, _, err := processor.PlanSceneInfo(info, m, processor.Options{MaxMemoryBytes: share}); err != nil {
				t.Errorf("%s: a job's share %d refuses a %dx%d scene: %v", tc.name, share, side, side, err)
			}
		}
	}
	// A --jobs the user gives is kept.
	if jobs, _, _ := chooseJobs(m, 3, processor.Options{Backend: "go", MaxMemoryBytes: need}, 1000); jobs != 3 {
		t.Errorf("--jobs 3: %d jobs", jobs)
	}
}

// manyBandModel is a small model (hidden 32, one epoch) of bands bands,
// where the reads, not the network, set the smallest budget.
func manyBandModel(t *testing.T, bands int) *model.Model {
	t.Helper()
	const side = 24
	s := model.Scene{Rows: side, Cols: side, Bands: bands, Data: make([]float32, side*side*bands)}
	for i := range s.Data {
		s.Data[i] = float32(100 + (i*7)%500)
	}
	labels := make([]int32, side*side)
	for i := range labels {
		labels[i] = int32(1 + i%2)
	}
	cfg := model.DefaultConfig()
	cfg.Hidden, cfg.Epochs = 32, 1
	m, err := model.Train(context.Background(), s, labels, model.TrainOptions{Config: cfg, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
