// Command pnec turns hyperspectral scenes into land-cover maps with
// PNEC-Mamba and writes them as Cloud-Optimized GeoTIFFs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/pnec/pnec/geo"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// commands is filled by each subcommand's file through register, so that
// subcommands live in their own files.
var commands []*cli.Command

func register(c *cli.Command) { commands = append(commands, c) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pnec: "+oneLine(err.Error()))
		var ec cli.ExitCoder
		if errors.As(err, &ec) && ec.ExitCode() != 0 {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

// run builds the application and runs it on args (args[0] is the program name).
func run(ctx context.Context, args []string) error {
	return newApp().RunContext(ctx, args)
}

func newApp() *cli.App {
	cmds := append([]*cli.Command(nil), commands...)
	for _, c := range cmds {
		quietUsageErrors(c)
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return &cli.App{
		Name:    "pnec",
		Usage:   "classify hyperspectral scenes with PNEC-Mamba into Cloud-Optimized GeoTIFF land-cover maps",
		Version: version,
		Description: "pnec reads any scene GDAL reads, runs the PNEC-Mamba classifier on the whole image or on\n" +
			"overlapping tiles, and writes a COG with a 'class' band and a 'reliability' band.\n" +
			"Run 'pnec COMMAND --help' for each command's flags and examples.",
		Commands:             cmds,
		EnableBashCompletion: true,
		// Errors are printed once by main, as one line.
		ExitErrHandler: func(*cli.Context, error) {},
		// GDAL configuration applies to every command, before it opens anything.
		Before: func(c *cli.Context) error {
			if kv := c.StringSlice("config"); len(kv) > 0 {
				if err := geo.SetConfig(kv); err != nil {
					return fmt.Errorf("--config: %w", err)
				}
			}
			return nil
		},
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "config", Usage: "GDAL configuration option `KEY=VALUE` (repeatable), e.g. --config GDAL_CACHEMAX=512"},
			&cli.BoolFlag{Name: "verbose", Usage: "log more detail to stderr"},
		},
	}
}

// usageError keeps a bad flag to one line: urfave/cli would print the whole
// help text before the error otherwise.
func usageError(c *cli.Context, err error, isSubcommand bool) error {
	var path []string
	for _, l := range c.Lineage() {
		// The app runs as a root command named like the app itself: skip it.
		if l.Command != nil && l.Command.Name != "" && l.Command.Name != c.App.Name {
			path = append([]string{l.Command.Name}, path...)
		}
	}
	if len(path) == 0 {
		return fmt.Errorf("%w (see 'pnec --help')", err)
	}
	cmd := strings.Join(path, " ")
	return fmt.Errorf("%s: %w (see 'pnec %s --help')", cmd, err, cmd)
}

func quietUsageErrors(c *cli.Command) {
	if c.OnUsageError == nil {
		c.OnUsageError = usageError
	}
	for _, sub := range c.Subcommands {
		quietUsageErrors(sub)
	}
}

// oneLine folds a multi-line message (GDAL often reports several lines for
// one failure) into the single line users and log scrapers expect.
func oneLine(msg string) string {
	lines := strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "; ")
}
