package backend

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/pjrt"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
)

// PJRTHeaderVersion is the PJRT C API version (major, minor) of the
// pjrt_c_api.h that the linked go-xla (v0.4.13) was compiled against; go-xla
// does not export it, and TestPJRTHeaderVersion checks it against the
// header in the module. A plugin reports its own version; PJRT keeps older
// callers working through struct sizes, so a plugin of the same major and a
// higher minor is expected to work, and a different major never does.
var PJRTHeaderVersion = [2]int{0, 104}

// Info is what Probe found out about one backend.
type Info struct {
	Name        string   `json:"name"`        // as given ("go", "xla:cuda", "xla:/abs/plugin.so")
	Config      string   `json:"config"`      // the configuration opened (Backend.Config)
	Backend     Backend  `json:"backend"`     // the backend described (Decide)
	Label       string   `json:"label"`       // the name recorded in products ("go", "xla:cuda")
	Description string   `json:"description"` // the backend's own description
	Devices     []string `json:"devices"`
	// PluginPath and PluginPJRT (major, minor) are set for XLA backends.
	PluginPath string  `json:"plugin_path,omitempty"`
	PluginPJRT [2]int  `json:"plugin_pjrt_version,omitempty"`
	HeaderPJRT [2]int  `json:"go_xla_pjrt_version"`
	SmokeOK    bool    `json:"smoke_ok"`      // a small matrix product compiled, ran and was right
	SmokeSec   float64 `json:"smoke_seconds"` // its compile + first run, wall seconds
}

// Available lists the backend names that can be probed here: "go"
// always, then "xla:PLUGIN" for each PJRT plugin found (FindPlugins:
// go-xla's folders and pip-installed jax plugins; nothing is downloaded).
func Available() []string {
	out := []string{"go"}
	for _, p := range FindPlugins() {
		out = append(out, "xla:"+p.Path)
	}
	return out
}

// loadPJRTPlugin loads the PJRT plugin plugin (a name or an absolute
// path) through go-xla, whose panics become errors; a plugin whose
// GetPjrtApi returns NULL, which go-xla v0.4.13 answers with neither a
// plugin nor an error, is an error naming it.
func loadPJRTPlugin(plugin string) (p *pjrt.Plugin, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("load PJRT plugin %s: %v", plugin, r)
		}
	}()
	xlaMu.Lock()
	defer xlaMu.Unlock()
	p, err = pjrt.GetPlugin(plugin)
	if err != nil {
		if f := goXLAPluginFile(plugin); f != "" && !filepath.IsAbs(plugin) {
			// Found by its name and symbol table, then refused by go-xla's
			// own check, which loads it: its GetPjrtApi returned NULL (or
			// it failed to load), which go-xla reports as "not found".
			return nil, fmt.Errorf("load PJRT plugin %s (%s): it does not load, or its GetPjrtApi returned NULL: not a usable PJRT plugin", plugin, f)
		}
		return nil, fmt.Errorf("load PJRT plugin: %w", err)
	}
	if p == nil {
		return nil, fmt.Errorf("load PJRT plugin %s: its GetPjrtApi returned NULL (not a usable PJRT plugin)", plugin)
	}
	return p, nil
}

// Probe opens the backend named by name (as Resolve takes it),
// reports what it is, and runs a small matrix product on it to show that
// compilation and execution work. For XLA plugins it first loads the plugin
// alone and checks its PJRT C API major version against go-xla's, so that an
// incompatible plugin is reported with both versions rather than failing
// somewhere inside compilation.
func Probe(name string) (info Info, err error) {
	info = Info{Name: name, HeaderPJRT: PJRTHeaderVersion}
	desc, err := Decide(name, Job{})
	if err != nil {
		return info, fmt.Errorf("probe backend: %w", err)
	}
	info.Backend, info.Config, info.Label = desc, desc.Config(), desc.Label()
	if desc.CUDA != nil {
		if p := desc.CUDA.Problem(); p != "" {
			return info, fmt.Errorf("probe backend %q: %s", name, p)
		}
		if err := desc.CUDA.Load(); err != nil {
			return info, fmt.Errorf("probe backend %q: %w", name, err)
		}
	}
	if plugin := desc.Plugin; desc.Kind != Go {
		if filepath.IsAbs(plugin) {
			if _, statErr := os.Stat(plugin); statErr != nil {
				return info, fmt.Errorf("probe backend %q: plugin: %w", name, statErr)
			}
		}
		applyXLASettings()
		p, perr := loadPJRTPlugin(plugin)
		if perr != nil {
			return info, fmt.Errorf("probe backend %q: %w", name, perr)
		}
		info.PluginPath = p.Path()
		info.PluginPJRT[0], info.PluginPJRT[1] = p.Version()
		if info.PluginPJRT[0] != PJRTHeaderVersion[0] {
			return info, fmt.Errorf("probe backend %q: plugin speaks PJRT C API %d.%d, pnec's go-xla %d.%d: major versions differ",
				name, info.PluginPJRT[0], info.PluginPJRT[1], PJRTHeaderVersion[0], PJRTHeaderVersion[1])
		}
	}
	b, err := desc.Open()
	if err != nil {
		return info, fmt.Errorf("probe backend: %w", err)
	}
	defer b.Finalize()
	info.Description = b.Description()
	for d := range b.NumDevices() {
		info.Devices = append(info.Devices, b.DeviceDescription(compute.DeviceNum(d)))
	}
	// The smoke test: (A·B) for A = ones[64,64], B = iota/64, whose every
	// row sums column j of B over 64 rows: 64 * j/64 = j.
	const n = 64
	start := time.Now()
	got, err := func() (got []float32, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		e, err := NewExec(b, func(a, bm *Node) *Node { return MatMul(a, bm) })
		if err != nil {
			return nil, err
		}
		defer e.Finalize()
		ones := make([]float32, n*n)
		ramp := make([]float32, n*n)
		for i := range ones {
			ones[i] = 1
			ramp[i] = float32(i%n) / n
		}
		ta := tensors.FromFlatDataAndDimensions(ones, n, n)
		tb := tensors.FromFlatDataAndDimensions(ramp, n, n)
		outs, err := e.Call(ta, tb)
		if err != nil {
			return nil, err
		}
		return tensors.MustCopyFlatData[float32](outs[0]), nil
	}()
	info.SmokeSec = time.Since(start).Seconds()
	if err != nil {
		return info, fmt.Errorf("probe backend %q: smoke test: %w", name, err)
	}
	for i, v := range got {
		if want := float32(i % n); math.Abs(float64(v-want)) > 1e-3 {
			return info, fmt.Errorf("probe backend %q: smoke test: element %d = %g, want %g", name, i, v, want)
		}
	}
	info.SmokeOK = true
	return info, nil
}
