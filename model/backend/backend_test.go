package backend

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeSite lays out a Python site-packages folder as pip installs
// jax-cuda13-pjrt and the CUDA 13 nvidia-* wheels (jax_plugins/xla_cuda13/,
// nvidia/cu13/{lib,bin,nvvm}, nvidia/cudnn/lib, nvidia/nccl/lib,
// nvidia/nvshmem/lib), leaving out the files named in skip. With build,
// each library is a real shared library with its soname (built with cc),
// else an empty file.
func fakeSite(t *testing.T, build bool, skip ...string) string {
	t.Helper()
	site := filepath.Join(t.TempDir(), "lib", "python3.12", "site-packages")
	files := []string{
		"jax_plugins/xla_cuda13/xla_cuda_plugin.so",
		"jax_plugins/xla_cuda13/__init__.py",
		"nvidia/cu13/bin/ptxas",
		"nvidia/cu13/nvvm/libdevice/libdevice.10.bc",
		"nvidia/cudnn/lib/libcudnn.so.9",
		"nvidia/nccl/lib/libnccl.so.2",
		"nvidia/nvshmem/lib/libnvshmem_host.so.3",
	}
	for _, l := range []string{"libcudart.so.13", "libnvrtc.so.13", "libnvJitLink.so.13", "libcublasLt.so.13", "libcublas.so.13",
		"libcupti.so.13", "libcusparse.so.12", "libcusolver.so.12", "libcufft.so.12"} {
		files = append(files, "nvidia/cu13/lib/"+l)
	}
	var cc string
	if build {
		var err error
		if cc, err = exec.LookPath("cc"); err != nil {
			t.Skip("no C compiler to build stand-in NVIDIA libraries")
		}
	}
	src := filepath.Join(t.TempDir(), "lib.c")
	os.WriteFile(src, []byte("int pnec_stand_in(void) { return 1; }\n"), 0o644)
	for _, f := range files {
		if strings.Contains(strings.Join(skip, "\n"), f) {
			continue
		}
		p := filepath.Join(site, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if build && strings.Contains(f, "/lib/") {
			// Unique sonames per test, so that two tests' stand-ins do not
			// meet in the process's loaded libraries.
			if b, err := exec.Command(cc, "-shared", "-fPIC", "-Wl,-soname,"+filepath.Base(f), "-o", p, src).CombinedOutput(); err != nil {
				t.Fatalf("cc: %v: %s", err, b)
			}
			continue
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return site
}

// TestFindPluginsPip: a jax CUDA 13 plugin installed with pip is found in
// the site-packages folder named by PNEC_SITE_PACKAGES, with every NVIDIA
// library in the wheels' layout and XLA's CUDA data folder.
func TestFindPluginsPip(t *testing.T) {
	site := fakeSite(t, false)
	t.Setenv(SitePackagesEnv, site)
	saved := GPUPresent
	GPUPresent = func() bool { return false }
	defer func() { GPUPresent = saved }()
	var got *Plugin
	for _, p := range FindPlugins() {
		if p.From == "pip" && strings.HasPrefix(p.Path, site) {
			got = &p
			break
		}
	}
	if got == nil {
		t.Fatalf("no pip plugin found in %s: %+v", site, FindPlugins())
	}
	if want := filepath.Join(site, "jax_plugins/xla_cuda13/xla_cuda_plugin.so"); got.Path != want {
		t.Errorf("plugin %s, want %s", got.Path, want)
	}
	if !got.NoGPU {
		t.Error("a CUDA plugin on a machine without a GPU is not marked NoGPU")
	}
	if b, err := decide("", Job{Task: TaskClassify, Pixels: 1e12}, MeasuredSpeed, FindPlugins()); err != nil || b.Kind != Go {
		t.Errorf("without a GPU the default chose %s (%v), want go", b.Kind, err)
	}
	if k := pluginKind(got.Path); k != XLACUDA {
		t.Errorf("kind %s, want %s", k, XLACUDA)
	}
	c := got.CUDA
	if c == nil || c.CUDAMajor != 13 {
		t.Fatalf("CUDA set-up %+v, want CUDA 13", c)
	}
	if p := c.Problem(); p != "" {
		t.Errorf("complete layout reported a problem: %s", p)
	}
	if len(c.Libraries) != len(cudaLibs[13]) {
		t.Errorf("%d libraries found, want %d: %v", len(c.Libraries), len(cudaLibs[13]), c.Libraries)
	}
	// Dependencies load first: the runtime before cuBLAS, cuBLASLt before cuBLAS.
	if !strings.HasSuffix(c.Libraries[0], "libcudart.so.13") || !strings.HasSuffix(c.Libraries[3], "libcublasLt.so.13") {
		t.Errorf("load order %v", c.Libraries)
	}
	if want := filepath.Join(site, "nvidia", "cu13"); c.DataDir != want {
		t.Errorf("CUDA data folder %q, want %q", c.DataDir, want)
	}
}

// TestFindPluginsPipMissing: what a partial install lacks is named with
// the pip package that holds it; optional libraries do not make a problem.
func TestFindPluginsPipMissing(t *testing.T) {
	site := fakeSite(t, false, "nvidia/cu13/lib/libcublas.so.13", "nvidia/cu13/bin/ptxas", "nvidia/nccl/lib/libnccl.so.2")
	c := findCUDA(site, 13)
	p := c.Problem()
	for _, want := range []string{"libcublas.so.13 (pip package nvidia-cublas)", "bin/ptxas", "nvidia-cuda-nvcc", `pip install "jax[cuda13]"`} {
		if !strings.Contains(p, want) {
			t.Errorf("problem %q does not name %q", p, want)
		}
	}
	if strings.Contains(p, "libnccl") {
		t.Errorf("an optional library is reported as a problem: %q", p)
	}
	if len(c.Optional) != 1 || !strings.Contains(c.Optional[0], "libnccl.so.2") {
		t.Errorf("optional missing %v, want libnccl.so.2", c.Optional)
	}
	if err := c.Load(); err == nil || !strings.Contains(err.Error(), "libcublas.so.13") {
		t.Errorf("Load of a partial install: %v, want an error naming libcublas.so.13", err)
	}
}

// TestCUDASetupLoad: Load loads every library by full path (afterwards
// each soname is found without a search path), points XLA at the CUDA
// data folder and turns go-xla's misplaced CUDA check off, without
// overriding what the user set.
func TestCUDASetupLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	site := fakeSite(t, true)
	t.Setenv("XLA_FLAGS", "--xla_gpu_autotune_level=2")
	t.Setenv("GOPJRT_CUDA_CHECKS", "")
	os.Unsetenv("GOPJRT_CUDA_CHECKS")
	c := findCUDA(site, 13)
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	if got, want := os.Getenv("XLA_FLAGS"), "--xla_gpu_autotune_level=2 --xla_gpu_cuda_data_dir="+filepath.Join(site, "nvidia", "cu13"); got != want {
		t.Errorf("XLA_FLAGS %q, want %q", got, want)
	}
	if got := os.Getenv("GOPJRT_CUDA_CHECKS"); got != "0" {
		t.Errorf("GOPJRT_CUDA_CHECKS %q, want 0", got)
	}
}

// TestDecideBackend: the one decision, for named backends, GOMLX_BACKEND
// and the default rule with injected plugins and speed figures.
func TestDecideBackend(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "")
	t.Setenv(CacheDirEnv, t.TempDir()) // a cold cache
	cuda := []Plugin{{Path: "/site/jax_plugins/xla_cuda13/xla_cuda_plugin.so", From: "pip", CUDA: &CUDASetup{CUDAMajor: 13}}}
	cpuOnly := []Plugin{{Path: "cpu", From: "go-xla"}}
	f := SpeedFacts{GoClassifyCoreSecPerPixel: 1e-6, XLAClassifySecPerPixel: 1e-7, XLACompileColdSec: 40, XLACompileWarmSec: 2,
		GoTrainCoreSecPerPixelEpoch: 1e-5, XLATrainSecPerPixelEpoch: 1e-6, XLATrainCompileSec: 10}
	big := Job{Task: TaskClassify, Pixels: 1e10, Cores: 4}
	for _, tc := range []struct {
		name, env string
		job       Job
		found     []Plugin
		kind      Kind
		reason    string
	}{
		{name: "go", found: cuda, job: big, kind: Go, reason: "named"},
		{name: "xla:cuda,tf32", kind: XLACUDA, reason: "named"},
		{env: "xla:cpu", found: cuda, kind: XLACPU, reason: "GOMLX_BACKEND"},
		{found: nil, job: big, kind: Go, reason: "no accelerator plugin"},
		{found: cpuOnly, job: big, kind: Go, reason: "no accelerator plugin"},
		{found: cuda, job: Job{}, kind: Go, reason: "size is unknown"},
		// 1e10 px: go 2500 s on 4 cores, XLA 40 s + 1000 s.
		{found: cuda, job: big, kind: XLACUDA, reason: "faster"},
		// One Pavia-size scene: go 0.05 s, XLA 40 s of compilation.
		{found: cuda, job: Job{Task: TaskClassify, Pixels: paviaPixels, Cores: 4}, kind: Go, reason: "go is faster"},
		// Warm cache: XLA 2 s + 0.2 s against go 5 s.
		{found: cuda, job: Job{Task: TaskClassify, Pixels: 2e7, Cores: 4, Warm: true}, kind: XLACUDA, reason: "faster"},
		{found: cuda, job: Job{Task: TaskClassify, Pixels: 2e7, Cores: 4}, kind: Go, reason: "go is faster"},
		// Training 200 epochs at Pavia size: go 104 s on 4 cores, XLA 10 + 41 s; on 32 cores go 13 s.
		{found: cuda, job: Job{Task: TaskTrain, Pixels: paviaPixels, Epochs: 200, Cores: 4}, kind: XLACUDA, reason: "faster"},
		{found: cuda, job: Job{Task: TaskTrain, Pixels: paviaPixels, Epochs: 200, Cores: 32}, kind: Go, reason: "go is faster"},
	} {
		t.Run(tc.name+tc.env+string(tc.kind)+tc.reason, func(t *testing.T) {
			t.Setenv("GOMLX_BACKEND", tc.env)
			b, err := decide(tc.name, tc.job, f, tc.found)
			if err != nil {
				t.Fatal(err)
			}
			if b.Kind != tc.kind || !strings.Contains(b.Reason, tc.reason) {
				t.Errorf("got %s (%s), want %s (%s)", b.Kind, b.Reason, tc.kind, tc.reason)
			}
			if b.Kind == XLACUDA && tc.name == "" && tc.env == "" && (b.CUDA == nil || b.Name != "xla:"+cuda[0].Path) {
				t.Errorf("the chosen pip plugin lost its set-up or path: %+v", b)
			}
		})
	}
	if _, err := decide("cuda", Job{}, f, nil); err == nil {
		t.Error("a name without go or xla: was accepted")
	}
	if _, err := decide("xla:", Job{}, f, nil); err == nil {
		t.Error("xla: without a plugin was accepted")
	}
}

// TestBackendPolicies: what each kind means for the run, decided from the
// kind alone.
func TestBackendPolicies(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		kind                      Kind
		onHeap, onDevice, inGraph bool
		label                     string
	}{
		{"go", Go, true, false, false, "go"},
		{"xla:cpu", XLACPU, false, false, true, "xla:cpu"},
		{"xla:cuda", XLACUDA, false, true, true, "xla:cuda"},
		{"xla:/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so,tf32", XLACUDA, false, true, true, "xla:/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so,tf32"},
		{"xla:/opt/pjrt_c_api_rocm_plugin.so", XLAROCm, false, true, true, "xla:/opt/pjrt_c_api_rocm_plugin.so"},
		{"xla:tpu", XLAOther, false, true, true, "xla:tpu"},
	} {
		b, err := Parse(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if b.Kind != tc.kind || b.NetworkOnGoHeap() != tc.onHeap || b.OnDevice() != tc.onDevice || b.PrepInGraph() != tc.inGraph || b.Label() != tc.label {
			t.Errorf("%s: kind %s heap %v device %v graph %v label %s", tc.name, b.Kind, b.NetworkOnGoHeap(), b.OnDevice(), b.PrepInGraph(), b.Label())
		}
	}
	if _, err := Parse("xla:relative/plugin.so"); err == nil {
		t.Error("a relative plugin path was accepted")
	}
}
