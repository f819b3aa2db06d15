package model

import (
	"fmt"
	"os"
	"strings"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // the pure-Go backend, "go"
	"github.com/gomlx/go-xla/compute/xla"
)

// goBackendConfig is the configuration used for the pure-Go backend. The
// default worker pool of GoMLX v0.28.2 can deadlock on graphs with several
// independent matmuls (TOOLCHAIN.md); running ops in sequence avoids it while
// every matmul still uses all cores internally.
const goBackendConfig = "go:ops_sequential"

func init() {
	// Never download a PJRT plugin at run time: go-xla would otherwise try to
	// on the first GetAvailablePlugins call.
	xla.EnableAutoInstall(false)
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
		if plugins := xla.GetAvailablePlugins(); len(plugins) > 0 {
			return "xla:" + plugins[0]
		}
		return goBackendConfig
	case name == "go":
		return goBackendConfig
	}
	return name
}

// openBackend opens the backend named by name (see ResolveBackend). GoMLX
// panics for unknown backends; that is turned into an error here.
func openBackend(name string) (b compute.Backend, config string, err error) {
	config = ResolveBackend(name)
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("open backend %q: %v", config, r)
		}
	}()
	b, err = compute.NewWithConfig(config)
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
	return config
}
