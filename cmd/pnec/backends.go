package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pnec/pnec/internal/oneline"
	"github.com/pnec/pnec/model"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "backends",
		Usage:     "list the compute backends pnec can use here and check that they run",
		UsageText: "pnec backends [--backend NAME] [--json]",
		Description: "Lists the pure-Go backend and every XLA PJRT plugin found (PJRT_PLUGIN_LIBRARY_PATH,\n" +
			"/usr/local/lib/go-xla, ~/.local/lib/go-xla, LD_LIBRARY_PATH; nothing is downloaded), or only\n" +
			"the backend --backend names. For each it reports the devices, and for XLA plugins the plugin's\n" +
			"PJRT C API version beside the one pnec was built with, then compiles and runs a small matrix\n" +
			"product to show the backend works. Exit status 1 when a listed backend fails.\n\n" +
			"Examples:\n" +
			"  pnec backends\n" +
			"  pnec backends --backend xla:/opt/jax/jax_plugins/xla_cuda13/xla_cuda_plugin.so --json\n" +
			"  GOMLX_BACKEND=xla:cuda pnec backends --backend xla:cuda",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "backend", Usage: "check only backend `NAME`: go, xla:cuda, xla:/abs/path/plugin.so"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per backend instead of text"},
		},
		Action: backendsAction,
	})
}

func backendsAction(c *cli.Context) error {
	names := model.AvailableBackends()
	if b := c.String("backend"); b != "" {
		names = []string{b}
	}
	w := c.App.Writer
	var failed []string
	for _, name := range names {
		info, err := model.ProbeBackend(name)
		if c.Bool("json") {
			out := struct {
				model.BackendInfo
				Error string `json:"error,omitempty"`
			}{BackendInfo: info}
			if err != nil {
				out.Error = err.Error()
			}
			b, _ := json.Marshal(out)
			fmt.Fprintln(w, string(b))
		} else {
			status := "ok"
			if err != nil {
				status = "FAILED: " + oneline.Fold(err.Error())
			}
			fmt.Fprintf(w, "%s: %s\n", info.Label, status)
			if info.PluginPath != "" {
				fmt.Fprintf(w, "  plugin %s, PJRT C API %d.%d (pnec built with %d.%d)\n", info.PluginPath,
					info.PluginPJRT[0], info.PluginPJRT[1], info.HeaderPJRT[0], info.HeaderPJRT[1])
			}
			if info.Description != "" {
				fmt.Fprintf(w, "  %s\n", oneline.Fold(info.Description))
			}
			for i, d := range info.Devices {
				fmt.Fprintf(w, "  device %d: %s\n", i, oneline.Fold(d))
			}
			if info.SmokeOK {
				fmt.Fprintf(w, "  64x64 matrix product compiled and ran in %.1f ms\n", 1000*info.SmokeSec)
			}
		}
		if err != nil {
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("backends: %s failed", strings.Join(failed, ", "))
	}
	return nil
}
