package model

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend, "go"
	"github.com/gomlx/go-xla/compute/xla"
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

// xlaMu serialises go-xla's plugin discovery: GetAvailablePlugins (called
// directly and by xla's backend constructor) fills a package-level cache
// without a lock in go-xla v0.4.1, a data race when several predictors
// start at once (pnec batch --jobs, library users' goroutines).
var xlaMu sync.Mutex

// availablePlugins is xla.GetAvailablePlugins under xlaMu.
func availablePlugins() []string {
	xlaMu.Lock()
	defer xlaMu.Unlock()
	return xla.GetAvailablePlugins()
}

// ResolveBackend turns a user backend name ("" for the default, "go",
// "xla:cuda", "xla:/path/plugin.so", or GOMLX_BACKEND when name is "")
// into the configuration string used to open it.
func ResolveBackend(name string) string {
	if name == "" {
		name = os.Getenv("GOMLX_BACKEND")
	}
	switch {
	case name == "":
		if plugins := availablePlugins(); len(plugins) > 0 {
			return "xla:" + plugins[0]
		}
		return goBackendConfig
	case name == "go":
		return goBackendConfig
	}
	return withFullFloat32(name)
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

// ErrNoPlugin says that no XLA PJRT plugin was found for an XLA backend.
var ErrNoPlugin = errors.New("no XLA PJRT plugin found: set PJRT_PLUGIN_LIBRARY_PATH to the folder holding pjrt_c_api_*_plugin.so, or name the plugin file (xla:/abs/path/plugin.so)")

// openBackend opens the backend named by name (see ResolveBackend). GoMLX
// panics for unknown backends; that is turned into an error here.
func openBackend(name string) (b compute.Backend, config string, err error) {
	config = ResolveBackend(name)
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("open backend %q: %v", config, r)
		}
	}()
	b, err = func() (compute.Backend, error) {
		xlaMu.Lock()
		defer xlaMu.Unlock() // also when it panics
		if strings.HasPrefix(config, "go:") {
			GuardHeap()
			lowerGCPercent()
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
		return nil, config, fmt.Errorf("open backend %q: %w", config, ErrNoPlugin)
	}
	if err != nil {
		return nil, config, fmt.Errorf("open backend %q: %w", config, err)
	}
	return b, config, nil
}

// backendLabel is the short name recorded in outputs ("go", "xla:cuda").
func backendLabel(config string) string {
	if strings.HasPrefix(config, "go:") {
		return "go"
	}
	return strings.TrimSuffix(config, ",notf32")
}
