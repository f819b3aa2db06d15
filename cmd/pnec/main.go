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
	"time"

	"github.com/urfave/cli/v2"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/oneline"
	"github.com/pnec/pnec/internal/resources"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/pipelines"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
	"github.com/pnec/pnec/version"
)

// commands is filled by each subcommand's file through register, so that
// subcommands live in their own files.
var commands []*cli.Command

func register(c *cli.Command) { commands = append(commands, c) }

// stopGrace is how long a command told to stop (SIGINT, SIGTERM, SIGHUP: a
// closed terminal or ssh session stops work the same way) may take
// to return by itself: a network call or a GDAL read or write in progress
// cannot be interrupted and may take much longer, so after stopGrace the
// process removes its temporaries and exits anyway (well within the 5 s a
// scheduler such as Slurm or Kubernetes usually allows before SIGKILL).
const stopGrace = 2500 * time.Millisecond

func main() {
	// Some settings apply only from a program's start, so where the policy
	// asks for them the command runs again under them before it does
	// anything else (resources.ExecUnderStartSettings). GODEBUG's
	// invalidptr=0 (resources.GODEBUGDefault: godal's stores into fresh C
	// memory must not stop the program) for every command, where the
	// binary was not built with it (`make build` builds it in, so it never
	// runs again for it). glibc's huge pages for GDAL's block buffers
	// (resources.MallocHugePagesTunable) only for the commands that read
	// scenes at scale: running again costs about 0.13 s here, which
	// --help, info or tiles should not pay. Where it cannot be done the
	// command goes on as it is.
	_ = resources.ExecUnderStartSettings(networkCommands[commandOf(os.Args)])
	// The process's resource policy first, on the main thread before any
	// goroutine makes C calls. glibc's arena cap under an address-space
	// limit is applied even earlier, when the program is loaded (see
	// resources.LimitedMallocArenas): from run's goroutine it came too late
	// in 10 of 10 runs of a 16-thread classify under ulimit -v 2000000, and
	// from here it still came after the Go runtime's first threads had
	// taken five arenas (2 of 10 such runs failed to start a thread).
	resources.Start(geo.Knobs{})
	// The cause names the signal, which a batch's report gives for the
	// scenes it stopped.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan error, 1)
	go func() { done <- run(ctx, os.Args) }()
	var err error
	select {
	case err = <-done:
	case sig := <-sigs:
		cancel(fmt.Errorf("signal %s", sig))
		stopOnSignal(sig, sigs, done)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pnec: "+oneline.Bound(oneline.Fold(err.Error()), oneline.MaxBytes))
		var ec cli.ExitCoder
		if errors.As(err, &ec) && ec.ExitCode() != 0 {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

// stopOnSignal stops the process after sig: it waits up to stopGrace for
// the command to return (a second signal cuts the wait short), then removes
// every temporary file the writers recorded, so that no partial product and
// no staging file is left and any earlier product stays as it was, and exits
// with 128 + the signal's number, as shells report a process a signal ended.
func stopOnSignal(sig os.Signal, sigs <-chan os.Signal, done <-chan error) {
	fmt.Fprintf(os.Stderr, "pnec: %s: stopping\n", sig)
	finished := false
	select {
	case <-done:
		finished = true
	case <-time.After(stopGrace):
	case <-sigs:
	}
	removed, err := tempfiles.Abort()
	msg := fmt.Sprintf("pnec: stopped by %s", sig)
	if !finished {
		msg += fmt.Sprintf(" (work in progress abandoned after %s)", stopGrace)
	}
	if len(removed) > 0 {
		msg += fmt.Sprintf("; removed %d temporary file(s)", len(removed))
	}
	if err != nil {
		msg += "; " + oneline.Fold(err.Error())
	}
	fmt.Fprintln(os.Stderr, msg)
	code := 130
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	os.Exit(code)
}

// quietLibraries keeps the libraries' own logging off stderr, where it
// would surround pnec's one line: GDAL's messages outside pnec's calls,
// and the INFO and WARNING lines (glog/absl) an XLA PJRT plugin prints when
// it loads (backend.Settings.XLAQuiet). --verbose keeps them, and so does a
// TF_CPP_MIN_LOG_LEVEL the user set.
func quietLibraries() {
	geo.QuietMessages()
	configureBackends(func(s *backend.Settings) { s.XLAQuiet = true })
}

// configureBackends changes the backends' settings (backend.Configure),
// keeping what an earlier step of the command set.
func configureBackends(edit func(*backend.Settings)) {
	s := backend.CurrentSettings()
	edit(&s)
	backend.Configure(s)
}

// networkCommands are the commands that may run the network on the Go
// backend: they make the heap guard (resources.GuardHeap) before they
// read anything, while the heap is fresh. The others (--version, info,
// synth, tiles, import) never map it, so they run under any address-space
// limit.
var networkCommands = map[string]bool{
	"classify": true, "batch": true, "train": true, "evaluate": true, "experiment": true, "backends": true,
}

// commandOf is the command args name (args[0] is the program), past the
// global options ("" where there is none).
func commandOf(args []string) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "--config" || a == "-config":
			i++ // its value
		case strings.HasPrefix(a, "-"):
			// --config=KEY=VALUE, --verbose, --help, --version
		default:
			return a
		}
	}
	return ""
}

// run builds the application and runs it on args (args[0] is the program
// name). The process's resource policy is in place before anything is
// parsed or read (main applied it; the call here is for callers of run
// other than main, the tests), and --config, applied next, wins over its
// GDAL settings.
func run(ctx context.Context, args []string) error {
	resources.Start(geo.Knobs{})
	return newApp().RunContext(ctx, args)
}

func newApp() *cli.App {
	cmds := make([]*cli.Command, len(commands))
	for i, c := range commands {
		cmds[i] = freshCommand(c)
		quietUsageErrors(cmds[i])
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return &cli.App{
		Name:    "pnec",
		Usage:   "classify hyperspectral scenes with PNEC-Mamba into Cloud-Optimized GeoTIFF land-cover maps",
		Version: version.String,
		Description: "pnec reads any scene GDAL reads, runs the PNEC-Mamba classifier on the whole image or on\n" +
			"overlapping tiles, and writes a COG with a 'class' band and a 'reliability' band.\n" +
			"Run 'pnec COMMAND --help' for each command's flags and examples.",
		Commands:             cmds,
		EnableBashCompletion: true,
		// A repeatable flag's value is one value, commas and all
		// (--quality-mask PATH:1,2, --config KEY=a,b, --co A=1,B=2):
		// urfave/cli would split it at each comma otherwise.
		DisableSliceFlagSeparator: true,
		// Errors are printed once by main, as one line.
		ExitErrHandler: func(*cli.Context, error) {},
		// GDAL configuration applies to every command, before it opens anything.
		Before: func(c *cli.Context) error {
			if networkCommands[c.Args().First()] {
				resources.GuardHeap()
			}
			backend.Configure(backend.Settings{}) // a fresh run in this process starts from none
			if !c.Bool("verbose") {
				quietLibraries()
			}
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

// freshCommand copies c and its subcommands for one app: urfave/cli writes
// its help name into a command when an app runs (prefixing the app's to
// what is there), so commands shared by several runs in one process (the
// tests) read "pnec pnec pnec ... synth" in their help.
func freshCommand(c *cli.Command) *cli.Command {
	cp := *c
	cp.HelpName = ""
	if action := c.Action; action != nil {
		cp.Action = func(ctx *cli.Context) error { return withFlagHints(action(ctx)) }
	}
	cp.Subcommands = make([]*cli.Command, len(c.Subcommands))
	for i, sub := range c.Subcommands {
		cp.Subcommands[i] = freshCommand(sub)
	}
	return &cp
}

// withFlagHints words the libraries' typed errors with the flags that
// change what they refuse (the libraries do not name flags): the memory
// budget, the STAC asset, the Collection's licence.
func withFlagHints(err error) error {
	var be *processor.BudgetError
	var le *stac.LicenseError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &be) && be.TileSize > 0:
		return fmt.Errorf("%w: give --max-memory %s or more, or a smaller --tile", err, be.NeedSize())
	case errors.As(err, &be) && !be.Whole:
		return fmt.Errorf("%w: give --max-memory %s or more (a smaller --tile also fits, but makes another grid and so another map)", err, be.NeedSize())
	case errors.As(err, &be):
		return fmt.Errorf("%w: give --max-memory %s or more", err, be.NeedSize())
	case errors.Is(err, pipelines.ErrNoAsset):
		return fmt.Errorf("%w; choose one with --asset", err)
	case errors.As(err, &le):
		return fmt.Errorf("--license %q: %w", le.License, stac.ErrLicense)
	}
	return err
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
