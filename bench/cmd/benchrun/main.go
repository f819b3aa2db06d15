// Command benchrun is pnec's benchmark harness (make bench, make
// bench-quick): it builds pnec, runs every Go benchmark of the module, runs
// the whole-command rows of bench/e2e.tsv under GNU time, and writes
// BENCHMARKS.md and bench/results.json with the machine, the backend, the
// date, the commit and, per row, the median, minimum and maximum of several
// runs.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun: "+err.Error())
		os.Exit(1)
	}
}

// options are benchrun's settings.
type options struct {
	Mode      string // "quick" or "full"
	Root      string // repository root
	MD, JSON  string // outputs
	E2E       string // e2e.tsv
	DataDir   string
	Count     int           // go test -count
	BenchTime string        // go test -benchtime
	Runs      int           // timed runs per e2e row
	RowLimit  time.Duration // per timed run of an e2e row
	GoLimit   time.Duration // whole go test run
	Budget    time.Duration // whole harness run; e2e rows past it are skipped
	Deadline  time.Time
	GoOnly    bool
	E2EOnly   bool
	TorchOnly bool
	NoTorch   bool
	TorchRuns int    // runs per side of each comparison (default 2 full, 1 quick)
	Reference string // folder of the PyTorch reference (default ../shared/reference from the root)
	Filter    string // go test -bench pattern
}

func run(ctx context.Context, args []string) error {
	o, render, err := parseFlags(args)
	if err != nil {
		return err
	}
	if render != "" {
		return renderOnly(render, o.MD)
	}
	if err := o.fillDefaults(); err != nil {
		return err
	}
	if err := o.resolvePaths(); err != nil {
		return err
	}
	root := o.Root
	started := time.Now()
	rep := Report{Mode: o.Mode, Started: started.UTC().Format(time.RFC3339), Machine: machineInfo(root)}
	scratch, err := os.MkdirTemp("", "pnec-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)

	pnec := filepath.Join(scratch, "bin", "pnec")
	logf("building pnec (GOEXPERIMENT=%s)", os.Getenv("GOEXPERIMENT"))
	if err := buildPnec(ctx, root, pnec); err != nil {
		return err
	}
	if err := runSections(ctx, &o, pnec, scratch, &rep); err != nil {
		return err
	}
	rep.DurationS = time.Since(started).Seconds()
	if err := writeJSON(under(root, o.JSON), rep); err != nil {
		return err
	}
	if err := writeMarkdown(under(root, o.MD), rep); err != nil {
		return err
	}
	logf("wrote %s and %s in %s", o.MD, o.JSON, time.Since(started).Round(time.Second))
	return nil
}

// parseFlags reads benchrun's flags into options; render is -render's
// results JSON ("" to run the benchmarks).
func parseFlags(args []string) (o options, render string, err error) {
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.StringVar(&o.Mode, "mode", "full", "quick (about 3 minutes, for development) or full (make bench)")
	fs.StringVar(&o.Root, "root", ".", "repository root")
	fs.StringVar(&o.MD, "md", "BENCHMARKS.md", "Markdown report to write")
	fs.StringVar(&o.JSON, "json", "bench/results.json", "JSON results to write")
	fs.StringVar(&o.E2E, "e2e", "bench/e2e.tsv", "whole-command rows")
	fs.StringVar(&o.DataDir, "data", "", "shared data folder ($DATA of e2e rows; default ../shared/data from the root)")
	fs.IntVar(&o.Count, "count", 0, "go test -count (default 5 full, 1 quick)")
	fs.StringVar(&o.BenchTime, "benchtime", "", "go test -benchtime (default 1s full, 100ms quick)")
	fs.IntVar(&o.Runs, "runs", 0, "timed runs per e2e row (default 5 full, 2 quick)")
	fs.DurationVar(&o.RowLimit, "row-timeout", 0, "limit per timed e2e run (default 5m full, 60s quick)")
	fs.DurationVar(&o.GoLimit, "go-timeout", 0, "limit for all Go benchmarks, shared out between packages (default 18m full, 75s quick)")
	fs.DurationVar(&o.Budget, "budget", 0, "whole run; e2e rows that would start past it are skipped (default 50m full, 150s quick)")
	fs.BoolVar(&o.GoOnly, "go-only", false, "run only the Go benchmarks")
	fs.BoolVar(&o.E2EOnly, "e2e-only", false, "run only the e2e rows")
	fs.StringVar(&o.Filter, "bench", ".", "go test -bench pattern")
	fs.BoolVar(&o.TorchOnly, "torch-only", false, "run only the side-by-side comparison with PyTorch")
	fs.BoolVar(&o.NoTorch, "no-torch", false, "skip the side-by-side comparison with PyTorch")
	fs.IntVar(&o.TorchRuns, "torch-runs", 0, "runs per side of each PyTorch comparison (default 2 full, 1 quick)")
	fs.StringVar(&o.Reference, "reference", "", "folder of the PyTorch reference pnec_torch.py (default ../shared/reference from the root)")
	renderFlag := fs.String("render", "", "only rewrite the Markdown report from this results JSON (no benchmarks run)")
	if err := fs.Parse(args); err != nil {
		return o, "", err
	}
	return o, *renderFlag, nil
}

// fillDefaults checks -mode and gives each setting left at zero its full
// or quick default; the budget starts now.
func (o *options) fillDefaults() error {
	quick := o.Mode == "quick"
	if !quick && o.Mode != "full" {
		return fmt.Errorf("-mode %s: want quick or full", o.Mode)
	}
	def := func(v *int, full, q int) {
		if *v == 0 {
			*v = full
			if quick {
				*v = q
			}
		}
	}
	def(&o.Count, 5, 1)
	def(&o.Runs, 5, 2)
	if o.BenchTime == "" {
		o.BenchTime = map[bool]string{true: "100ms", false: "1s"}[quick]
	}
	if o.RowLimit == 0 {
		o.RowLimit = map[bool]time.Duration{true: 60 * time.Second, false: 5 * time.Minute}[quick]
	}
	if o.GoLimit == 0 {
		o.GoLimit = map[bool]time.Duration{true: 75 * time.Second, false: 18 * time.Minute}[quick]
	}
	if o.Budget == 0 {
		o.Budget = map[bool]time.Duration{true: 150 * time.Second, false: 50 * time.Minute}[quick]
	}
	o.Deadline = time.Now().Add(o.Budget)
	return nil
}

// resolvePaths makes the root absolute and finds the shared data folder
// (none, with a notice, when it is absent).
func (o *options) resolvePaths() error {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return err
	}
	o.Root = root
	if o.DataDir == "" {
		o.DataDir = filepath.Join(filepath.Dir(root), "shared", "data")
	}
	if _, err := os.Stat(o.DataDir); err != nil {
		fmt.Fprintf(os.Stderr, "benchrun: no data folder at %s: rows that need $DATA are skipped\n", o.DataDir)
		o.DataDir = ""
	}
	return nil
}

// runSections runs the Go benchmarks, the e2e rows and the comparison
// with PyTorch that the -*-only and -no-torch flags select, into rep.
func runSections(ctx context.Context, o *options, pnec, scratch string, rep *Report) error {
	if o.TorchOnly {
		o.GoOnly, o.E2EOnly = false, true
	}
	if !o.E2EOnly {
		rows, notes, err := runGoBenchmarks(ctx, *o, scratch)
		if err != nil {
			return err
		}
		rep.Go = rows
		rep.Notes = append(rep.Notes, notes...)
	}
	if !o.GoOnly && !o.TorchOnly {
		rows, err := runE2E(ctx, *o, pnec, scratch)
		if err != nil {
			return err
		}
		rep.E2E = rows
	}
	if !o.NoTorch && !o.GoOnly && (!o.E2EOnly || o.TorchOnly) {
		rows, notes, err := runTorchComparison(ctx, *o, scratch)
		if err != nil {
			return err
		}
		rep.Torch = rows
		rep.Notes = append(rep.Notes, notes...)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchrun: "+format+"\n", args...)
}

// under resolves p against root unless it is absolute.
func under(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// renderOnly rewrites the Markdown report from a saved results JSON.
func renderOnly(jsonPath, md string) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	return writeMarkdown(md, rep)
}
