package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pnec/pnec/internal/dlopen"
)

// Plugin is a PJRT plugin found on this machine.
type Plugin struct {
	// Path is the plugin's absolute path, or go-xla's name for a plugin
	// go-xla finds itself ("cuda", "cpu").
	Path string `json:"path"`
	// From says where it was found: "go-xla" (PJRT_PLUGIN_LIBRARY_PATH,
	// ~/.local/lib/go-xla, /usr/local/lib/go-xla, LD_LIBRARY_PATH) or
	// "pip" (a jax plugin in a Python site-packages folder).
	From string `json:"from"`
	// CUDA is the pip plugin's NVIDIA set-up (nil for go-xla's plugins,
	// whose libraries are the system's).
	CUDA *CUDASetup `json:"cuda,omitempty"`
	// NoGPU marks a CUDA plugin on a machine without an NVIDIA GPU
	// (GPUPresent): listed, never chosen by default. go-xla leaves such
	// plugins out itself.
	NoGPU bool `json:"no_gpu,omitempty"`
}

// GPUPresent reports whether this machine has an NVIDIA GPU: the driver
// describes one in /proc/driver/nvidia/gpus, or /dev/nvidia0 exists. It is
// a variable so that the tests of packages above model can stand for a
// machine with a GPU.
var GPUPresent = func() bool {
	m, _ := filepath.Glob(filepath.Join(nvidiaProcDir, "gpus", "*"))
	if len(m) > 0 {
		return true
	}
	_, err := os.Stat("/dev/nvidia0")
	return err == nil
}

// CUDASetup is what a CUDA PJRT plugin installed with pip (jax-cuda13-pjrt
// or jax-cuda12-pjrt, with the nvidia-* wheels) needs from its Python
// environment. The plugin finds its NVIDIA libraries by their sonames, as
// jax does after loading them itself (jax_plugins/cuda: _load_nvidia_libraries);
// the dynamic loader reads LD_LIBRARY_PATH only when a process starts, so
// pnec loads each library by its full path first (Load), after which the
// plugin's lookups by soname find the copies already loaded.
type CUDASetup struct {
	// SitePackages is the folder holding jax_plugins/ and nvidia/.
	SitePackages string `json:"site_packages"`
	// CUDAMajor is 13 or 12 (the plugin folder's suffix).
	CUDAMajor int `json:"cuda_major"`
	// Libraries are the NVIDIA libraries found, full paths, in the order
	// they load (dependencies first).
	Libraries []string `json:"libraries"`
	// Missing are the required libraries not found, as "soname (pip
	// package)"; Optional those of optional ones (XLA loads them only for
	// some operations).
	Missing  []string `json:"missing,omitempty"`
	Optional []string `json:"optional_missing,omitempty"`
	// DataDir is XLA's CUDA data folder (--xla_gpu_cuda_data_dir: bin/ptxas
	// and nvvm/libdevice), "" when not found; DataMissing says what of it
	// is missing.
	DataDir     string `json:"cuda_data_dir,omitempty"`
	DataMissing string `json:"cuda_data_missing,omitempty"`
}

// cudaLib is one NVIDIA library a CUDA plugin needs.
type cudaLib struct {
	soname, pip string
	required    bool
}

// cudaLibs are the libraries jax's CUDA plugin loads for CUDA major 13 and
// 12 (jax_plugins/cuda/__init__.py, _load_nvidia_libraries), dependencies
// first; with CUDA 13 the nvidia-* wheels put most of them in nvidia/cu13/lib,
// with CUDA 12 in nvidia/<package>/lib: they are looked up in every
// nvidia/*/lib folder.
var cudaLibs = map[int][]cudaLib{
	13: {
		{"libcudart.so.13", "nvidia-cuda-runtime", true},
		{"libnvrtc.so.13", "nvidia-cuda-nvrtc", true},
		{"libnvJitLink.so.13", "nvidia-nvjitlink", false},
		{"libcublasLt.so.13", "nvidia-cublas", true},
		{"libcublas.so.13", "nvidia-cublas", true},
		{"libcupti.so.13", "nvidia-cuda-cupti", false},
		{"libcusparse.so.12", "nvidia-cusparse", false},
		{"libcusolver.so.12", "nvidia-cusolver", false},
		{"libcufft.so.12", "nvidia-cufft", false},
		{"libnccl.so.2", "nvidia-nccl-cu13", false},
		{"libnvshmem_host.so.3", "nvidia-nvshmem-cu13", false},
		{"libcudnn.so.9", "nvidia-cudnn-cu13", true},
	},
	12: {
		{"libcudart.so.12", "nvidia-cuda-runtime-cu12", true},
		{"libnvrtc.so.12", "nvidia-cuda-nvrtc-cu12", true},
		{"libnvJitLink.so.12", "nvidia-nvjitlink-cu12", false},
		{"libcublasLt.so.12", "nvidia-cublas-cu12", true},
		{"libcublas.so.12", "nvidia-cublas-cu12", true},
		{"libcupti.so.12", "nvidia-cuda-cupti-cu12", false},
		{"libcusparse.so.12", "nvidia-cusparse-cu12", false},
		{"libcusolver.so.11", "nvidia-cusolver-cu12", false},
		{"libcufft.so.11", "nvidia-cufft-cu12", false},
		{"libnccl.so.2", "nvidia-nccl-cu12", false},
		{"libnvshmem_host.so.3", "nvidia-nvshmem-cu12", false},
		{"libcudnn.so.9", "nvidia-cudnn-cu12", true},
	},
}

// SitePackagesEnv names Python site-packages folders (colon-separated) to
// search for pip-installed PJRT plugins before Python's own.
const SitePackagesEnv = "PNEC_SITE_PACKAGES"

// FindPlugins lists the PJRT plugins found on this machine, accelerators
// first: go-xla's (which are also what "xla:cuda" opens) and jax's CUDA
// plugins in Python's site-packages folders (PNEC_SITE_PACKAGES, the
// active virtual or conda environment, the site folders of the python3 on
// PATH, worked out without running it). Nothing is downloaded, loaded or
// executed: files are only listed and their symbol tables read
// (backend_scan.go). The result is kept per process for the same
// environment.
func FindPlugins() []Plugin {
	key := os.Getenv(SitePackagesEnv) + "\x00" + os.Getenv("VIRTUAL_ENV") + "\x00" + os.Getenv("CONDA_PREFIX") + "\x00" + os.Getenv("PATH") +
		"\x00" + os.Getenv("LD_LIBRARY_PATH") + "\x00" + os.Getenv("PJRT_PLUGIN_LIBRARY_PATH")
	pluginCache.Lock()
	defer pluginCache.Unlock()
	if p, ok := pluginCache.m[key]; ok {
		return p
	}
	var out []Plugin
	for _, name := range goXLAPlugins() {
		out = append(out, Plugin{Path: name, From: "go-xla"})
	}
	for _, site := range sitePackages() {
		out = append(out, pipPlugins(site)...)
	}
	// Accelerators first, in the order found.
	slices.SortStableFunc(out, func(a, b Plugin) int {
		return btoi(pluginKind(a.Path) == XLACPU) - btoi(pluginKind(b.Path) == XLACPU)
	})
	if pluginCache.m == nil {
		pluginCache.m = map[string][]Plugin{}
	}
	pluginCache.m[key] = out
	return out
}

var pluginCache struct {
	sync.Mutex
	m map[string][]Plugin
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sitePackages are the Python site-packages folders to search, in order,
// each once: PNEC_SITE_PACKAGES, $VIRTUAL_ENV's and $CONDA_PREFIX's, then
// python3's site folders (pythonSites: from where it lives, not by running it).
func sitePackages() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv(SitePackagesEnv)) {
		dirs = append(dirs, d)
	}
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(env); p != "" {
			m, _ := filepath.Glob(filepath.Join(p, "lib", "python3*", "site-packages"))
			dirs = append(dirs, m...)
		}
	}
	dirs = append(dirs, pythonSites()...)
	var uniq []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if !slices.Contains(uniq, d) {
			uniq = append(uniq, d)
		}
	}
	return uniq
}

// pipPlugins are the jax CUDA plugins in site (jax_plugins/xla_cuda13/
// xla_cuda_plugin.so from jax-cuda13-pjrt, xla_cuda12 from jax-cuda12-pjrt),
// newest CUDA first, each with its NVIDIA set-up.
func pipPlugins(site string) []Plugin {
	var out []Plugin
	for _, major := range []int{13, 12} {
		p := filepath.Join(site, "jax_plugins", fmt.Sprintf("xla_cuda%d", major), "xla_cuda_plugin.so")
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			continue
		}
		out = append(out, Plugin{Path: p, From: "pip", CUDA: findCUDA(site, major), NoGPU: !GPUPresent()})
	}
	return out
}

// findCUDA looks up the NVIDIA libraries and CUDA data folder of a CUDA
// major version's plugin in site.
func findCUDA(site string, major int) *CUDASetup {
	s := &CUDASetup{SitePackages: site, CUDAMajor: major}
	libDirs, _ := filepath.Glob(filepath.Join(site, "nvidia", "*", "lib"))
	for _, l := range cudaLibs[major] {
		found := ""
		for _, d := range libDirs {
			if fi, err := os.Stat(filepath.Join(d, l.soname)); err == nil && !fi.IsDir() {
				found = filepath.Join(d, l.soname)
				break
			}
		}
		switch {
		case found != "":
			s.Libraries = append(s.Libraries, found)
		case l.required:
			s.Missing = append(s.Missing, fmt.Sprintf("%s (pip package %s)", l.soname, l.pip))
		default:
			s.Optional = append(s.Optional, fmt.Sprintf("%s (pip package %s)", l.soname, l.pip))
		}
	}
	// XLA's CUDA data folder holds bin/ptxas and nvvm/libdevice: jax takes
	// nvidia/cu13 (CUDA 13 wheels) or nvidia/cuda_nvcc (CUDA 12's
	// nvidia-cuda-nvcc-cu12), or $CUDA_ROOT (jax/_src/lib: _cuda_path).
	cands := []string{filepath.Join(site, "nvidia", "cu13"), filepath.Join(site, "nvidia", "cuda_nvcc")}
	if major == 12 {
		cands = cands[1:]
	}
	if root := os.Getenv("CUDA_ROOT"); root != "" {
		cands = append([]string{root}, cands...)
	}
	nvcc := "nvidia-cuda-nvcc"
	if major == 12 {
		nvcc = "nvidia-cuda-nvcc-cu12"
	}
	s.DataMissing = fmt.Sprintf("bin/ptxas in %s (pip package %s)", strings.Join(cands, " or "), nvcc)
	for _, d := range cands {
		if fi, err := os.Stat(filepath.Join(d, "bin", "ptxas")); err == nil && !fi.IsDir() {
			s.DataDir, s.DataMissing = d, ""
			if m, _ := filepath.Glob(filepath.Join(d, "nvvm", "libdevice", "libdevice*.bc")); len(m) == 0 {
				s.DataMissing = fmt.Sprintf("nvvm/libdevice/libdevice.10.bc in %s (pip package nvidia-nvvm)", d)
			}
			break
		}
	}
	return s
}

// Problem is one line saying what the set-up lacks ("" when nothing
// required is missing).
func (s *CUDASetup) Problem() string {
	var parts []string
	if len(s.Missing) > 0 {
		parts = append(parts, "missing NVIDIA libraries: "+strings.Join(s.Missing, ", "))
	}
	if s.DataMissing != "" {
		parts = append(parts, "missing "+s.DataMissing)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("CUDA %d plugin in %s: %s (install all with: pip install \"jax[cuda%d]\")",
		s.CUDAMajor, s.SitePackages, strings.Join(parts, "; "), s.CUDAMajor)
}

// Load makes the set-up take effect in this process, once: it loads the
// NVIDIA libraries by full path (so that the plugin's lookups by soname
// find them without LD_LIBRARY_PATH), adds --xla_gpu_cuda_data_dir to
// XLA_FLAGS unless set, and turns go-xla's own CUDA check off
// (GOPJRT_CUDA_CHECKS=0) unless set: that check looks for nvidia/ beside
// the plugin's folder, not in site-packages where pip puts it, and warns
// wrongly. A required library or the data folder missing is an error
// naming them and the pip packages that hold them.
func (s *CUDASetup) Load() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded[s.SitePackages] {
		return nil
	}
	if p := s.Problem(); p != "" {
		return fmt.Errorf("%s", p)
	}
	for _, lib := range s.Libraries {
		if err := dlopen.Global(lib); err != nil {
			return fmt.Errorf("load NVIDIA library %s: %w", lib, err)
		}
	}
	if flags := os.Getenv("XLA_FLAGS"); !strings.Contains(flags, "xla_gpu_cuda_data_dir") {
		os.Setenv("XLA_FLAGS", strings.TrimSpace(flags+" --xla_gpu_cuda_data_dir="+s.DataDir))
	}
	if _, ok := os.LookupEnv("GOPJRT_CUDA_CHECKS"); !ok {
		os.Setenv("GOPJRT_CUDA_CHECKS", "0")
	}
	loaded[s.SitePackages] = true
	return nil
}

var (
	loadMu sync.Mutex
	loaded = map[string]bool{}
)
