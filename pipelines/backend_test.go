package pipelines

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
)

// TestChooseJobsFollowsDefaultBackend (issue 34 item 20): a batch with no
// backend named, on a machine where a CUDA PJRT plugin is found by pip's
// layout alone (jax_plugins/xla_cuda13 in a site-packages folder), plans
// its jobs for the backend the batch will run on: the one
// model.DecideBackend picks for it, one job at a time on the GPU. Before,
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
	t.Setenv(model.SitePackagesEnv, site)
	t.Setenv("GOMLX_BACKEND", "")
	t.Setenv(model.CacheDirEnv, t.TempDir())
	// This machine stands for one with an NVIDIA GPU.
	saved := model.GPUPresent
	model.GPUPresent = func() bool { return true }
	defer func() { model.GPUPresent = saved }()
	// One core for the Go backend: a large batch is then faster on the GPU
	// by MeasuredSpeed's figures, whatever the machine running the test.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m, err := model.Load(wavelengthModel(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	const scenes = 1000
	want, err := model.DecideBackend("", model.Job{Task: model.TaskClassify, Scenes: scenes})
	if err != nil {
		t.Fatal(err)
	}
	if want.Kind != model.BackendXLACUDA || want.Plugin != plugin {
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
