package backend

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend, "go"
	"github.com/gomlx/go-xla/compute/xla"

	"github.com/pnec/pnec/internal/resources"
)

// goBackendConfig is the configuration used for the pure-Go backend. The
// default worker pool of GoMLX v0.28.2 can deadlock on graphs with several
// independent matmuls (TOOLCHAIN.md); an unbounded pool (parallelism=-1)
// avoids it. It was also measured here against "go:ops_sequential": full-scene
// inference 2.1 vs 4.8 CPU-s, because independent ops (the two Mamba branches,
// whose elementwise kernels are single-threaded) then run side by side.
const goBackendConfig = "go:parallelism=-1"

func init() {
	// Never download a PJRT plugin at run time: go-xla would otherwise try to
	// on the first GetAvailablePlugins call.
	xla.EnableAutoInstall(false)
}

// xlaMu serialises go-xla's plugin loading: its plugin search fills a
// package-level cache without a lock in go-xla v0.4.1, a data race when
// several predictors start at once (pnec batch --jobs, library users'
// goroutines). pnec's own discovery (goXLAPlugins) loads nothing.
var xlaMu sync.Mutex

// Kind is what runs the network: where its buffers live and what
// it is good at. It is decided once, from the backend's name and the
// plugin found (Backend.Kind), and every policy that differs by backend
// (jobs in flight, memory budgets, input preparation, compile cache)
// reads it instead of the name.
type Kind string

const (
	// Go is the pure-Go backend: the network's buffers are on the
	// Go heap, its work on the host's cores.
	Go Kind = "go"
	// XLACPU is XLA's CPU plugin: host memory outside the Go heap.
	XLACPU Kind = "xla-cpu"
	// XLACUDA is XLA on an NVIDIA GPU (a CUDA PJRT plugin).
	XLACUDA Kind = "xla-cuda"
	// XLAROCm is XLA on an AMD GPU (a ROCm PJRT plugin).
	XLAROCm Kind = "xla-rocm"
	// XLAOther is another PJRT plugin (TPU, Metal, ...): taken to
	// be an accelerator with memory of its own.
	XLAOther Kind = "xla"
)

// Backend is the one description of the backend a run uses: what it is,
// which plugin and options, why it was chosen, where its compile cache
// lives and, for a pip-installed CUDA plugin, the NVIDIA libraries it
// needs. Decide makes it (the only place that reads the backend's
// name, GOMLX_BACKEND and the plugins found); it is plain data.
type Backend struct {
	// Name is the backend to pass on ("go", "xla:cuda,tf32",
	// "xla:/abs/path/xla_cuda_plugin.so"): opening Name again gives the
	// same backend without a new decision.
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Plugin is the PJRT plugin's name or absolute path (XLA only).
	Plugin string `json:"plugin,omitempty"`
	// Options are the backend options after the plugin ("tf32",
	// "memory_fraction=0.9"), as given.
	Options []string `json:"options,omitempty"`
	// Device is the device the network runs on (pnec uses one).
	Device int `json:"device"`
	// Reason says how the backend was chosen.
	Reason string `json:"reason"`
	// CUDA is the set-up of a CUDA plugin installed with pip (nil for
	// others): its NVIDIA libraries and CUDA data folder.
	CUDA *CUDASetup `json:"cuda,omitempty"`
}

// Label is the short name recorded in products and Items ("go",
// "xla:cuda"): the name without pnec's default options.
func (b Backend) Label() string {
	if b.Kind == Go {
		return "go"
	}
	return "xla:" + strings.Join(append([]string{b.Plugin}, b.Options...), ",")
}

// Config is the configuration string GoMLX opens: XLA backends compute
// float32 matrix products in full float32 unless the options ask for TF32
// (withFullFloat32).
func (b Backend) Config() string {
	if b.Kind == Go {
		if len(b.Options) > 0 {
			return "go:" + strings.Join(b.Options, ",")
		}
		return goBackendConfig
	}
	return withFullFloat32(b.Label())
}

// NetworkOnGoHeap reports whether the network's buffers live on the Go
// heap (the Go backend): the Go memory limit must then include them.
func (b Backend) NetworkOnGoHeap() bool { return b.Kind == Go }

// OnDevice reports whether the network runs on an accelerator with memory
// of its own (a GPU): one scene at a time keeps it busy, and the device's
// memory, not the host's, bounds a tile.
func (b Backend) OnDevice() bool {
	switch b.Kind {
	case XLACUDA, XLAROCm, XLAOther:
		return true
	}
	return false
}

// PrepInGraph reports whether the scene's normalisation, masks and
// recovery run inside the compiled graph (on the device) rather than on
// the host: on every XLA backend. The Go backend keeps pnec's host kernels,
// which are faster on the CPU than the same work as graph operations.
func (b Backend) PrepInGraph() bool { return b.Kind != Go }

// Parse describes the backend name names without choosing a
// default: "go" (or "go:OPTIONS"), "xla:PLUGIN[,OPTIONS]" where PLUGIN is a
// plugin name ("cuda", "cpu") or an absolute path to its .so file.
func Parse(name string) (Backend, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "go":
		return Backend{Name: name, Kind: Go}, nil
	case strings.HasPrefix(name, "go:"):
		return Backend{Name: name, Kind: Go, Options: splitOptions(strings.TrimPrefix(name, "go:"))}, nil
	case strings.HasPrefix(name, "xla:"):
		parts := strings.Split(strings.TrimPrefix(name, "xla:"), ",")
		plugin := strings.TrimSpace(parts[0])
		if plugin == "" {
			return Backend{}, fmt.Errorf("backend %q: no plugin after xla: (xla:cuda, xla:cpu or xla:/abs/path/plugin.so)", name)
		}
		if strings.ContainsRune(plugin, filepath.Separator) && !filepath.IsAbs(plugin) {
			return Backend{}, fmt.Errorf("backend %q: a plugin path must be absolute", name)
		}
		b := Backend{Name: name, Kind: pluginKind(plugin), Plugin: plugin, Options: splitOptions(strings.Join(parts[1:], ","))}
		return b, nil
	}
	return Backend{}, fmt.Errorf("backend %q: %w", name, ErrUnknown)
}

// ErrUnknown is a backend name that is neither go nor xla:PLUGIN.
var ErrUnknown = errors.New("unknown backend: use go, xla:cuda, xla:cpu or xla:/abs/path/plugin.so")

func splitOptions(s string) []string {
	var out []string
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// pluginKind is the kind of the PJRT plugin named plugin (a name or a
// path): the one place a plugin's name is read for what it runs on.
// jax's CUDA plugin is xla_cuda_plugin.so in jax_plugins/xla_cuda13,
// go-xla's pjrt_c_api_cuda_plugin.so.
func pluginKind(plugin string) Kind {
	base := strings.ToLower(filepath.Base(plugin))
	switch {
	case strings.Contains(base, "cuda") || strings.Contains(base, "nvidia"):
		return XLACUDA
	case strings.Contains(base, "rocm") || strings.Contains(base, "amd"):
		return XLAROCm
	case base == "cpu" || strings.Contains(base, "cpu"):
		return XLACPU
	}
	return XLAOther
}

// withFullFloat32 turns TF32 matrix products off on an XLA backend unless
// the name asks for them ("xla:cuda,tf32"). go-xla enables TF32 on CUDA by
// default; on an H100 that moved the network's outputs by up to 4e-3 from
// the Go backend and the PyTorch reference (whose float32 matmuls are full
// precision by default), against the 1e-4 parity target.
func withFullFloat32(config string) string {
	if !strings.HasPrefix(config, "xla:") {
		return config
	}
	for _, opt := range strings.Split(config, ",")[1:] {
		if k, _, _ := strings.Cut(opt, "="); k == "tf32" || k == "notf32" {
			return config
		}
	}
	return config + ",notf32"
}

// Resolve turns a user backend name ("" for the default, "go",
// "xla:cuda", "xla:/path/plugin.so", or GOMLX_BACKEND when name is "")
// into the configuration string used to open it (Backend.Config of
// Decide's choice for a job of unknown size); a name it cannot
// parse is returned as it is, for GoMLX to refuse.
func Resolve(name string) string {
	b, err := Decide(name, Job{})
	if err != nil {
		return name
	}
	return b.Config()
}

// ErrNoPlugin says that no XLA PJRT plugin was found for an XLA backend.
var ErrNoPlugin = errors.New("no XLA PJRT plugin found: install one with pip (pip install jax[cuda13]) or set PJRT_PLUGIN_LIBRARY_PATH to the folder holding pjrt_c_api_*_plugin.so, or name the plugin file (xla:/abs/path/plugin.so)")

// OpenName decides the backend named by name (see Decide) for a
// job of unknown size and opens it.
func OpenName(name string) (compute.Backend, Backend, error) {
	d, err := Decide(name, Job{})
	if err != nil {
		return nil, Backend{}, err
	}
	b, err := d.Open()
	return b, d, err
}

// Open opens the backend b describes. For a CUDA plugin installed with pip
// it first loads the NVIDIA libraries beside it (CUDASetup.Load) and points
// XLA at the CUDA data folder; for every XLA backend it points XLA's own
// caches at the compile cache (see CompileCache). GoMLX panics for unknown
// backends; that is turned into an error here.
func (b Backend) Open() (cb compute.Backend, err error) {
	config := b.Config()
	defer func() {
		if r := recover(); r != nil {
			cb, err = nil, fmt.Errorf("open backend %q: %v", config, r)
		}
	}()
	if b.CUDA != nil {
		if err := b.CUDA.Load(); err != nil {
			return nil, fmt.Errorf("open backend %q: %w", config, err)
		}
	}
	if b.Kind != Go {
		applyXLASettings()
		if _, err := useCompileCache(b); err != nil {
			// The cache only saves time: run without it, and say why once,
			// through slog's default logger (Open has no logger of a
			// caller's; with none set, that is stderr).
			warnCacheOnce.Do(func() { slog.Warn("compile cache off", "err", err) })
		}
	}
	if b.Kind != Go && filepath.IsAbs(b.Plugin) {
		// A plugin named by path is loaded without go-xla's checks, which
		// a plugin found by name passes first: a NULL API is an error here.
		if _, err := loadPJRTPlugin(b.Plugin); err != nil {
			return nil, fmt.Errorf("open backend %q: %w", config, err)
		}
	}
	cb, err = func() (compute.Backend, error) {
		xlaMu.Lock()
		defer xlaMu.Unlock() // also when it panics
		// The resource policy's settings for where the network's buffers
		// live (the heap guard and GOGC on the Go heap), before any runs.
		resources.BackendOpening(b.NetworkOnGoHeap())
		if b.Kind == Go {
			// The Go backend prints its parallelism setting to stdout, which
			// would corrupt machine-readable output (pnec evaluate --json).
			if devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
				saved := os.Stdout
				os.Stdout = devnull
				defer func() { os.Stdout = saved; devnull.Close() }()
			}
		}
		return compute.NewWithConfig(config)
	}()
	if err != nil && strings.Contains(err.Error(), "no plugins found") {
		// GoMLX's message ends in a hint for Go developers (import its
		// autoinstall package), not for someone running pnec.
		return nil, fmt.Errorf("open backend %q: %w", config, ErrNoPlugin)
	}
	if err != nil {
		return nil, fmt.Errorf("open backend %q: %w", config, err)
	}
	return cb, nil
}

var warnCacheOnce sync.Once
