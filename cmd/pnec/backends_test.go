package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
)

// TestBackendsCacheAndPrecompile: pnec backends lists the compile cache of
// the folder --cache-dir names, refuses --shapes without --precompile and
// a bad shape with one line naming it, precompiles the shapes scenes of
// the sizes given run on, on the backend named (the default, every shape
// of the model's grid, is TestPrecompileDefaultIsTheGrid's), and finds a pip-installed CUDA plugin by its layout
// alone, saying exactly what it lacks.
func TestBackendsCacheAndPrecompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pnec: skipped with -short")
	}
	modelPath := fixture.ModelFile(t)
	cache := filepath.Join(t.TempDir(), "cache")
	r := runPnec(t, time.Minute, "backends", "--backend", "go", "--cache-dir", cache)
	if r.code != 0 || !strings.Contains(r.stdout, "compile cache: "+cache+" (0 folders)") {
		t.Errorf("backends --cache-dir: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runPnec(t, time.Minute, "backends", "--shapes", "10x10")
	if r.code != 1 || !strings.Contains(r.stderr, "--shapes needs --precompile") {
		t.Errorf("--shapes alone: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runPnec(t, time.Minute, "backends", "--precompile", modelPath, "--shapes", "10x0", "--backend", "go")
	if r.code != 1 || !strings.Contains(r.stderr, `"10x0"`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("bad shape: exit %d, stderr %q", r.code, r.stderr)
	}
	// Scene sizes compile what their plans run on: two small scenes run
	// whole on one rung of the ladder, unrecovered (the default's fused
	// decision recovers on the host), which their probe windows (the
	// scenes themselves) share; a long one on 384 px tiles across its 100
	// px on the next rung up, and its drift probe's 96x96 window on
	// 128x128.
	r = runPnec(t, time.Minute, "backends", "--precompile", modelPath, "--shapes", "16x16,24x20,500x100", "--backend", "go")
	if r.code != 0 || !strings.Contains(r.stdout, "compiling 3 shapes on go") || strings.Contains(r.stdout, "(whole scenes)") ||
		!strings.Contains(r.stdout, "compiled 64x64 (tiles) on go") ||
		!strings.Contains(r.stdout, "compiled 384x128 (tiles) on go") || !strings.Contains(r.stdout, "compiled 128x128 (tiles) on go") {
		t.Errorf("precompile: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// A CUDA 13 plugin installed with pip, without its NVIDIA wheels.
	site := filepath.Join(t.TempDir(), "site-packages")
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	os.MkdirAll(filepath.Dir(plugin), 0o755)
	os.WriteFile(plugin, nil, 0o755)
	t.Setenv("PNEC_SITE_PACKAGES", site)
	r = runPnec(t, time.Minute, "backends")
	for _, want := range []string{"xla:" + plugin + ": FAILED", "libcublas.so.13 (pip package nvidia-cublas)", `pip install "jax[cuda13]"`, "default: go"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("backends with a bare pip plugin: stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 1 {
		t.Errorf("exit %d with a failing plugin, want 1", r.code)
	}
}

// TestPrecompileShapesBounded: --shapes sides above
// GDAL's largest raster side are refused with one line naming the shape;
// 100000000000x1 ran the planner out of memory (Go's fatal "out of
// memory" after 24 s).
func TestPrecompileShapesBounded(t *testing.T) {
	for _, s := range []string{"100000000000x1", "1x2147483648", "610x340,99999999999x99999999999"} {
		if _, err := parseShapes(s); err == nil || !strings.Contains(err.Error(), "the largest a raster can have") {
			t.Errorf("--shapes %s: %v, want a refusal naming the bound", s, err)
		}
	}
	if got, err := parseShapes("610x340,2147483647x1"); err != nil || len(got) != 2 {
		t.Errorf("sizes within the bound: %v, %v", got, err)
	}
}
