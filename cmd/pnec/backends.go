package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pnec/pnec/internal/oneline"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/processor"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "backends",
		Usage:     "list the compute backends pnec can use here, check that they run, and show or fill the compile cache",
		UsageText: "pnec backends [--backend NAME] [--json] [--cache-dir DIR] [--precompile MODEL [--shapes RxC,...]]",
		Description: "Lists the pure-Go backend and every XLA PJRT plugin found (PJRT_PLUGIN_LIBRARY_PATH,\n" +
			"/usr/local/lib/go-xla, ~/.local/lib/go-xla, LD_LIBRARY_PATH, and jax's CUDA plugins installed\n" +
			"with pip in Python's site-packages or PNEC_SITE_PACKAGES; nothing is downloaded), or only the\n" +
			"backend --backend names. For each it reports the devices, for XLA plugins the plugin's PJRT C\n" +
			"API version beside pnec's, for a pip-installed CUDA plugin its NVIDIA libraries and CUDA data\n" +
			"folder (or exactly what is missing and the pip package that holds it), and the GPU's memory;\n" +
			"then it compiles and runs a small matrix product to show the backend works. It also says which\n" +
			"backend the commands pick by default and why, and lists the compile cache: XLA's autotuning\n" +
			"results and compiled kernels kept between processes, one folder per plugin, device, driver,\n" +
			"options and XLA flags (PNEC_CACHE_DIR, default $XDG_CACHE_HOME/pnec or ~/.cache/pnec).\n" +
			"--precompile compiles a model's prediction graphs into the cache (for a node image), on\n" +
			"--backend or the first accelerator found: every input shape the model's grid gives (scenes up\n" +
			"to 384 px a side run whole, padded to one of 36 shapes of 64 to 384 px a side; larger ones on\n" +
			"384 px tiles, which share those shapes), or with --shapes only the shapes the plans of the\n" +
			"scene sizes listed run on. Exit status 1 when a listed backend fails.\n\n" +
			"Examples:\n" +
			"  pnec backends\n" +
			"  pnec backends --backend xla:/opt/venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so --json\n" +
			"  pnec backends --precompile landcover.pnec --shapes 610x340,1024x1024\n" +
			"  GOMLX_BACKEND=xla:cuda pnec backends --backend xla:cuda",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Usage: "check only backend `NAME`: " + backendNames},
			jsonFlag("one object per backend and one for the cache"),
			&cli.StringFlag{Name: "cache-dir", Usage: "the compile cache's folder `DIR` (default: $PNEC_CACHE_DIR, else $XDG_CACHE_HOME/pnec)"},
			&cli.StringFlag{Name: "precompile", Usage: "compile the prediction graphs of `MODEL` (a .pnec file) into the compile cache"},
			&cli.StringFlag{Name: "shapes", Usage: "with --precompile: compile only what scenes of the sizes `RxC,...` (rows x columns) and their drift probes run on (default: every shape of the model's grid and of its probe)"},
		},
		Action: backendsAction,
	})
}

func backendsAction(c *cli.Context) error {
	if d := c.String("cache-dir"); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("--cache-dir %s: %w", d, err)
		}
		configureBackends(func(s *backend.Settings) { s.CacheDir = abs })
	}
	if c.IsSet("shapes") && !c.IsSet("precompile") {
		return fmt.Errorf("--shapes needs --precompile MODEL")
	}
	if m := c.String("precompile"); m != "" {
		return precompileAction(c, m)
	}
	names := backend.Available()
	if b := c.String("backend"); b != "" {
		names = []string{b}
	}
	w := c.App.Writer
	var failed []string
	for _, name := range names {
		info, err := backend.Probe(name)
		mem, memErr := info.Backend.DeviceMemory()
		if c.Bool("json") {
			out := struct {
				backend.Info
				Memory *backend.DeviceMemory `json:"device_memory,omitempty"`
				Error  string                `json:"error,omitempty"`
			}{Info: info}
			if memErr == nil && !mem.OnHost {
				out.Memory = &mem
			}
			if err != nil {
				out.Error = err.Error()
			}
			b, _ := json.Marshal(out)
			fmt.Fprintln(w, string(b))
		} else {
			printBackend(c, info, err, mem, memErr)
		}
		if err != nil {
			failed = append(failed, name)
		}
	}
	if c.String("backend") == "" {
		def, err := backend.Decide("", backend.Job{})
		if c.Bool("json") {
			b, _ := json.Marshal(struct {
				Default backend.Backend `json:"default"`
				Error   string          `json:"error,omitempty"`
			}{def, errString(err)})
			fmt.Fprintln(w, string(b))
		} else if err == nil {
			fmt.Fprintf(w, "default: %s (%s; a large job may pick XLA: docs/backends.md)\n", def.Label(), def.Reason)
		}
	}
	if err := printCache(c); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("backends: %s failed", strings.Join(failed, ", "))
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// printBackend writes one backend's probe as text.
func printBackend(c *cli.Context, info backend.Info, err error, mem backend.DeviceMemory, memErr error) {
	w := c.App.Writer
	status := "ok"
	if err != nil {
		status = "FAILED: " + oneline.Fold(err.Error())
	}
	fmt.Fprintf(w, "%s: %s\n", info.Label, status)
	if info.PluginPath != "" {
		fmt.Fprintf(w, "  plugin %s, PJRT C API %d.%d (pnec built with %d.%d)\n", info.PluginPath,
			info.PluginPJRT[0], info.PluginPJRT[1], info.HeaderPJRT[0], info.HeaderPJRT[1])
	}
	if s := info.Backend.CUDA; s != nil {
		dataDir := s.DataDir
		if dataDir == "" {
			dataDir = "not found"
		}
		fmt.Fprintf(w, "  pip CUDA %d set-up in %s: %d NVIDIA libraries, CUDA data folder %s\n", s.CUDAMajor, s.SitePackages, len(s.Libraries), dataDir)
		if len(s.Optional) > 0 {
			fmt.Fprintf(w, "  optional libraries not found (some operations only): %s\n", strings.Join(s.Optional, ", "))
		}
	}
	if info.Description != "" {
		fmt.Fprintf(w, "  %s\n", oneline.Fold(info.Description))
	}
	for i, d := range info.Devices {
		fmt.Fprintf(w, "  device %d: %s\n", i, oneline.Fold(d))
	}
	switch {
	case memErr != nil:
		fmt.Fprintf(w, "  device memory unknown: %s\n", oneline.Fold(memErr.Error()))
	case !mem.OnHost:
		fmt.Fprintf(w, "  device memory: %s, %d MiB, XLA's allocator may take %d MiB (memory_fraction %.2f)\n",
			mem.Device, mem.TotalBytes>>20, mem.LimitBytes>>20, mem.MemoryFraction)
	}
	if info.SmokeOK {
		fmt.Fprintf(w, "  64x64 matrix product compiled and ran in %.1f ms\n", 1000*info.SmokeSec)
	}
}

// printCache lists the compile cache's folders.
func printCache(c *cli.Context) error {
	root, folders, err := backend.CacheFolders()
	if err != nil {
		return fmt.Errorf("backends: compile cache: %w", err)
	}
	w := c.App.Writer
	if c.Bool("json") {
		b, _ := json.Marshal(struct {
			Root    string                `json:"cache_root"`
			Folders []backend.CacheFolder `json:"cache_folders"`
		}{root, folders})
		fmt.Fprintln(w, string(b))
		return nil
	}
	fmt.Fprintf(w, "compile cache: %s (%d folders)\n", root, len(folders))
	for _, f := range folders {
		fmt.Fprintf(w, "  %s: %.1f MiB in %d files: %d autotuning results, kernels %.1f MiB, %d graphs compiled by pnec\n",
			filepath.Base(f.Dir), float64(f.Bytes)/(1<<20), f.Files, f.Autotune, float64(f.KernelBytes)/(1<<20), f.Graphs)
		fmt.Fprintf(w, "    for %s; devices %s; %s; XLA flags %q\n", f.Key.Backend, strings.Join(f.Key.Devices, ", "), f.Key.Driver, strings.Join(f.Key.XLAFlags, " "))
	}
	return nil
}

// precompileAction compiles the model's graphs for --shapes into the cache.
func precompileAction(c *cli.Context, path string) error {
	m, err := model.Load(path)
	if err != nil {
		return fmt.Errorf("--precompile: %w", err)
	}
	shapes, err := precompileShapes(m, c.String("shapes"))
	if err != nil {
		return err
	}
	name := c.String("backend")
	if name == "" {
		for _, p := range backend.FindPlugins() {
			if b, err := backend.Parse("xla:" + p.Path); err == nil && b.OnDevice() {
				name = b.Name
				break
			}
		}
		if name == "" {
			return fmt.Errorf("--precompile: no accelerator plugin found (name one with --backend): the go backend keeps no compile cache")
		}
	}
	fmt.Fprintf(c.App.Writer, "compiling %d shapes on %s\n", len(shapes), name)
	done, err := model.Precompile(c.Context, m, name, shapes)
	for _, d := range done {
		fmt.Fprintf(c.App.Writer, "compiled %v on %s in %.1f s\n", d.CallShape, name, d.Seconds)
	}
	if err != nil {
		return fmt.Errorf("--precompile: %w", err)
	}
	return printCache(c)
}

// precompileShapes is what --precompile compiles: the network input shapes
// the plans of the scene sizes list ("RxC,...") and their drift probes run
// on, each once, or with no list every shape of the model's grid and of
// its probe (processor.GridShapes, processor.ProbeShapes).
func precompileShapes(m *model.Model, list string) ([]model.CallShape, error) {
	var shapes []model.CallShape
	add := func(more ...model.CallShape) { // each shape once, in order
		for _, sh := range more {
			if !slices.Contains(shapes, sh) {
				shapes = append(shapes, sh)
			}
		}
	}
	if list == "" {
		grid, err := processor.GridShapes(m, processor.Options{})
		if err != nil {
			return nil, fmt.Errorf("--precompile: %w", err)
		}
		probes, err := processor.ProbeShapes(m, processor.Options{})
		if err != nil {
			return nil, fmt.Errorf("--precompile: %w", err)
		}
		add(grid...)
		add(probes...)
		return shapes, nil
	}
	sizes, err := parseShapes(list)
	if err != nil {
		return nil, fmt.Errorf("--shapes %s: %w", list, err)
	}
	for _, sz := range sizes {
		sh, err := processor.SceneShape(sz[0], sz[1], m, processor.Options{})
		if err != nil {
			return nil, fmt.Errorf("--shapes %dx%d: %w", sz[0], sz[1], err)
		}
		probe, ok, err := processor.ProbeShape(sz[0], sz[1], m, processor.Options{})
		if err != nil {
			return nil, fmt.Errorf("--shapes %dx%d: %w", sz[0], sz[1], err)
		}
		add(sh)
		if ok {
			add(probe)
		}
	}
	return shapes, nil
}

// parseShapes reads "RxC,RxC".
func parseShapes(s string) ([][2]int, error) {
	var out [][2]int
	for _, part := range strings.Split(s, ",") {
		r, cc, ok := strings.Cut(strings.TrimSpace(part), "x")
		rows, err1 := strconv.Atoi(r)
		cols, err2 := strconv.Atoi(cc)
		if !ok || err1 != nil || err2 != nil || rows < 1 || cols < 1 {
			return nil, fmt.Errorf("%q: want ROWSxCOLS with positive numbers, e.g. 610x340", part)
		}
		if rows > processor.MaxTileSide || cols > processor.MaxTileSide {
			// GDAL's largest raster side: no scene is larger, and the
			// planner's tile lists grow with the side (100000000000x1 ran
			// out of memory).
			return nil, fmt.Errorf("%q: a side above %d, the largest a raster can have", part, processor.MaxTileSide)
		}
		out = append(out, [2]int{rows, cols})
	}
	return out, nil
}
