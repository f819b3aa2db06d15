package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	termbar "github.com/pnec/pnec/internal/progress"
	"github.com/pnec/pnec/pipelines"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/stac"
)

func init() {
	register(&cli.Command{
		Name:      "batch",
		Usage:     "classify many scenes (files, globs, directories, STAC) into COG products with STAC Items, idempotently",
		UsageText: "pnec batch --model MODEL --out-dir DIR [options] INPUT...\npnec batch --payload PAYLOAD.json|- [--payload-out OUT.json|-] [options] [INPUT...]",
		Description: "Each INPUT is a GDAL dataset name (path, VRT, /vsizip/, /vsicurl/, /vsis3/ ...), a glob, a\n" +
			"directory (its raster and STAC files, not recursive), or a STAC Item, ItemCollection, Catalog or\n" +
			"Collection (local file or http(s) URL; the scene is the asset with role \"data\", or --asset KEY).\n" +
			"For each scene KEY (the STAC Item id or the file name without extension) the run writes\n" +
			"DIR/KEY.tif (the COG product) and DIR/KEY.json (its STAC Item, which also records the input's\n" +
			"size and modification time and the model checksum). A scene whose product is up to date is\n" +
			"skipped (--force redoes it); a run killed at any moment and started again finishes the rest.\n" +
			"One failing scene does not stop the others; the exit status is 1 when any failed (4 when the\n" +
			"only failures are scenes refused for their drift under --on-drift fail).\n" +
			"A JSON line per scene goes to --report (default stdout), a summary to stderr, and a page for a\n" +
			"person to --report-html (default DIR/index.html: every scene of the folder with its thumbnail\n" +
			"DIR/KEY.thumbnail.png, status, drift, class shares and footprint). DIR/catalog.json (or the\n" +
			"--stac-collection) is the root of the folder's STAC Items, so DIR opens in STAC Browser as it is.\n" +
			"--payload reads a STAC task payload (the stac-task convention Cirrus uses: a FeatureCollection of\n" +
			"Items with process[0].tasks.pnec parameters named like these flags, e.g. \"out_dir\", \"max_memory\";\n" +
			"flags given here win) and --payload-out writes the output payload: the features replaced by the\n" +
			"product Items, uploaded to process[0].upload_options.path_template when it has one\n" +
			"(docs/stac-task.md).\n\n" +
			"Examples:\n" +
			"  pnec batch --model salinas.pnec --out-dir products/ incoming/*.tif\n" +
			"  pnec batch --model m.pnec --out-dir products/ --stac-collection products/collection.json catalog.json\n" +
			"  pnec batch --model m.pnec --out-dir /shared/products --shard 2/8 /shared/incoming/\n" +
			"  JOB_COMPLETION_INDEX=2 pnec batch --model m.pnec --out-dir out --shards 8 in/   (Kubernetes Indexed Job)\n" +
			"  sbatch --array=0-7 --wrap 'pnec batch --model m.pnec --out-dir /shared/out /shared/in/'   (Slurm: shard from the array)\n" +
			"  pnec --config AWS_REGION=eu-west-1 batch --model m.pnec --out-dir out /vsis3/bucket/scene.tif\n" +
			"  pnec batch --payload - --payload-out - < payload.json > output-payload.json",
		Flags: append([]cli.Flag{
			modelFlag(false, "required, here or as the payload's model parameter"),
			&cli.StringFlag{Name: "out-dir", Usage: "output `DIR` (local file system) for KEY.tif and KEY.json; created if missing; required, here or as the payload's out_dir parameter"},
			&cli.StringFlag{Name: "payload", Usage: "STAC task payload `FILE` (- = standard input): its Items are inputs, process[0].tasks.pnec (over workflow_options) its parameters"},
			&cli.StringFlag{Name: "payload-out", Usage: "write the output payload to `FILE` (- = standard output; the report then goes to --report only when it names a file)"},
			&cli.StringFlag{Name: "task-name", Value: stac.DefaultTaskName, Usage: "`NAME` of the task's parameters in the payload (process[0].tasks.NAME)"},
			&cli.StringFlag{Name: "asset", Usage: "STAC asset `KEY` to classify (default: the asset with role \"data\")"},
			&cli.StringFlag{Name: "mask", Usage: "classify only inside an area of interest `SPEC`: a raster (non-zero = inside) or vector file (any CRS, reprojected) for every scene; a path pattern with {key} (the scene's KEY) for one per scene; or asset:ROLE for the asset with that role of each scene's STAC Item"},
			&cli.BoolFlag{Name: "allow-outside-catalog", Usage: "let STAC documents, and the VRTs they name, read local files outside their folder (absolute and /vsi paths, file:// URLs, ../, symbolic links leading out, VRT sources there, other XML dataset descriptions); refused by default"},
			&cli.BoolFlag{Name: "force", Usage: "redo scenes whose product is up to date"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "scenes classified at once, `N`; 0 = 1 on a GPU backend, on CPU as many as fit in --max-memory (at most the CPU count)"},
			&cli.StringFlag{Name: "shard", Usage: "process only shard `I/N` of the inputs (0-based I; deterministic, by a hash of the scene key)"},
			&cli.IntFlag{Name: "shards", Usage: "number of shards `N` where the engine does not say (Kubernetes Indexed Job, AWS Batch array; or PNEC_SHARDS); the shard index comes from SLURM_ARRAY_TASK_ID (the count from the array's range), JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX without --shard"},
			&cli.StringFlag{Name: "stac-collection", Usage: "STAC Collection `FILE` each Item is added to (created if missing, updated atomically)"},
			&cli.StringFlag{Name: "collection-id", Usage: "`ID` of a new collection (default: the collection file's directory name)"},
			&cli.StringFlag{Name: "license", Usage: "licence of the Collection's products, an SPDX `ID` or expression (e.g. CC-BY-4.0; default: proprietary, none granted)"},
			&cli.StringFlag{Name: "datetime", Usage: "acquisition `TIME` (RFC 3339, or YYYY-MM-DD) of the scenes, or an interval START/END they were acquired in, written as each Item's datetime (an interval: datetime null, start_datetime, end_datetime); without it, a scene's own (source STAC Item, ACQUISITIONDATETIME/TIFFTAG_DATETIME metadata), and a scene without any fails"},
			stacBaseURLFlag("the Items' root (the --stac-collection file's directory, else --out-dir)", "Items and the Collection get absolute self links under it"),
			&cli.StringFlag{Name: "model-item", Usage: "`HREF` of the model's STAC Item the products' Items point at: a URL, or a path under the Items' root (a local path elsewhere is refused); default: MODEL.json beside the model (from 'pnec train' or 'pnec model-item') when under the root, else its self URL when it has one, else a copy written into --out-dir"},
			&cli.StringFlag{Name: "on-drift", Value: string(pipelines.OnDriftWarn), Usage: "what to do with a scene whose drift verdict is fail (docs/acquisitions.md): `ACTION` warn (publish and report it), skip (withhold its product and Item, status refused) or fail (withhold them, the scene fails; exit status 4 when nothing else failed)"},
			&cli.StringFlag{Name: "report", Value: "-", Usage: "run report `FILE`: one JSON line per scene (- = stdout)"},
			&cli.StringFlag{Name: "report-html", Usage: "HTML page `FILE` the run writes at its end, made anew from the run's scenes and the folder's catalog: summary, scenes with status, reason, drift, class shares, reliability, thumbnail and links, footprints on a map; self-contained, no network (default: index.html in --out-dir; none = no page)"},
			quietFlag(),
		}, productFlags()...),
		Action: batchAction,
	})
}

// batchEngine reads --shard, else the shard the job engine gives
// (pipelines.EngineFromEnv: Slurm job arrays, Kubernetes Indexed Jobs, AWS
// Batch array jobs; --shards or PNEC_SHARDS for the count where the engine
// does not publish it).
func batchEngine(c *cli.Context) (pipelines.Engine, pipelines.Shard, error) {
	s := c.String("shard")
	if s != "" && c.IsSet("shards") {
		return pipelines.Engine{}, pipelines.Shard{}, errors.New("batch: give --shard I/N or --shards N, not both")
	}
	if s != "" {
		sh, err := pipelines.ParseShard(s)
		if err != nil {
			return pipelines.Engine{}, sh, fmt.Errorf("batch: --shard: %w", err)
		}
		return pipelines.Engine{}, sh, nil
	}
	if c.IsSet("shards") && c.Int("shards") < 1 {
		return pipelines.Engine{}, pipelines.Shard{}, fmt.Errorf("batch: --shards %d: want at least 1", c.Int("shards"))
	}
	e, sh, err := pipelines.EngineFromEnv(os.Getenv, c.Int("shards"))
	var ee *pipelines.EngineError
	if errors.As(err, &ee) {
		switch ee.Need {
		case pipelines.NeedShard:
			return e, sh, fmt.Errorf("batch: %w; give --shard I/N", err)
		case pipelines.NeedCount:
			return e, sh, fmt.Errorf("batch: %w; give --shards N or %s=N", err, pipelines.ShardsEnv)
		}
	}
	if err != nil {
		return e, sh, fmt.Errorf("batch: %w", err)
	}
	return e, sh, nil
}

func batchAction(c *cli.Context) error {
	inputs := c.Args().Slice()
	payload, err := readPayloadFlag(c)
	if err != nil {
		return err
	}
	if err := checkBatchArgs(c, inputs, payload); err != nil {
		return err
	}
	engine, shard, err := batchEngine(c)
	if err != nil {
		return err
	}
	opts, err := productOptions(c)
	if err != nil {
		return err
	}
	if c.Int("jobs") < 0 {
		return fmt.Errorf("--jobs %d: want a positive number (or 0 for the default)", c.Int("jobs"))
	}

	stderr := c.App.ErrWriter
	if stderr == nil {
		stderr = os.Stderr
	}
	report, rf, err := batchReport(c)
	if err != nil {
		return err
	}
	if rf != nil {
		defer rf.f.Close()
	}
	cfg, err := batchConfig(c, inputs, engine, shard, opts, report)
	if err != nil {
		return err
	}
	if rf != nil {
		cfg.ReportPath = c.String("report")
	}
	cfg.PayloadOut = c.String("payload-out")
	setBatchLogging(c, &cfg, stderr)

	var sum pipelines.Summary
	started := time.Now()
	if payload != nil {
		var out map[string]any
		sum, out, err = pipelines.RunPayload(c.Context, cfg, payload)
		if werr := writePayloadOut(c, out); werr != nil {
			err = errors.Join(err, werr)
		}
	} else {
		sum, err = pipelines.Run(c.Context, cfg)
	}
	if rf != nil {
		if ferr := rf.finish(errors.Is(err, processor.ErrOutputIsInput)); ferr != nil && err == nil {
			err = fmt.Errorf("--report %s: %w", cfg.ReportPath, ferr)
		}
	}
	if errors.Is(err, processor.ErrOutputIsInput) {
		return fmt.Errorf("batch: %w; give --out-dir, --stac-collection, --report and --payload-out apart from the inputs", err)
	}
	if !c.Bool("quiet") && sum.Scenes > 0 {
		fmt.Fprintln(stderr, "batch: "+sum.String())
		if st, serr := os.Stat(cfg.ReportHTML); cfg.ReportHTML != "" && serr == nil && st.ModTime().After(started) {
			fmt.Fprintln(stderr, "batch: report page "+cfg.ReportHTML)
		}
	}
	return batchError(err)
}

// checkBatchArgs refuses a batch with nothing to classify, without
// --model or --out-dir, or with a --payload-out that cannot be written,
// before any work.
func checkBatchArgs(c *cli.Context, inputs []string, payload *stac.Payload) error {
	if len(inputs) == 0 && payload == nil {
		return errors.New("batch: no INPUT given (scenes, globs, directories or STAC documents) and no --payload")
	}
	if len(inputs) == 0 && len(payload.Features) == 0 {
		return fmt.Errorf("batch: --payload %s: its features list is empty and no INPUT is given: nothing to classify", c.String("payload"))
	}
	for _, f := range []string{"model", "out-dir"} {
		if c.String(f) == "" {
			return fmt.Errorf("batch: --%s not set (give it, or the payload's %s parameter)", f, strings.ReplaceAll(f, "-", "_"))
		}
	}
	if p := c.String("payload-out"); p != "" && p != "-" {
		// Written after the run: a directory there was found only then.
		if err := processor.CheckOutput(p); err != nil {
			return fmt.Errorf("--payload-out %w", err)
		}
	}
	return nil
}

// batchReport is where the per-scene report goes: standard output, none
// when standard output carries the output payload, or the --report file
// (rf, which the caller closes).
func batchReport(c *cli.Context) (report io.Writer, rf *reportFile, err error) {
	report = c.App.Writer
	if report == nil {
		report = os.Stdout
	}
	if c.String("payload-out") == "-" && c.String("report") == "-" {
		report = nil // standard output carries the output payload
	}
	if p := c.String("report"); p != "-" {
		if rf, err = openReport(p); err != nil {
			return nil, nil, fmt.Errorf("--report %s: %w", p, err)
		}
		report = rf
	}
	return report, rf, nil
}

// batchConfig is the pipeline's configuration from the flags, with
// --datetime, --stac-base-url and --on-drift checked.
func batchConfig(c *cli.Context, inputs []string, engine pipelines.Engine, shard pipelines.Shard, opts processor.Options, report io.Writer) (pipelines.Config, error) {
	acquired, acquiredEnd, err := parseDatetimeFlag(c.String("datetime"))
	if err != nil {
		return pipelines.Config{}, err
	}
	baseURL := c.String("stac-base-url")
	if baseURL != "" && !strings.HasPrefix(baseURL, "https://") && !strings.HasPrefix(baseURL, "http://") {
		return pipelines.Config{}, fmt.Errorf("--stac-base-url %q: want an http(s) URL", baseURL)
	}
	onDrift, err := pipelines.ParseOnDrift(c.String("on-drift"))
	if err != nil {
		return pipelines.Config{}, fmt.Errorf("--on-drift %s: want warn, skip or fail", c.String("on-drift"))
	}
	return pipelines.Config{
		Datetime: acquired, DatetimeEnd: acquiredEnd, License: c.String("license"),
		STACBaseURL: baseURL, ModelItem: c.String("model-item"),
		OnDrift:   onDrift,
		ModelPath: c.String("model"), OutDir: c.String("out-dir"), Inputs: inputs,
		Asset: c.String("asset"), Mask: c.String("mask"), AllowOutsideCatalog: c.Bool("allow-outside-catalog"),
		Force: c.Bool("force"), Jobs: c.Int("jobs"), Shard: shard, Engine: engine,
		Collection: c.String("stac-collection"), CollectionID: c.String("collection-id"),
		Options: opts, Report: report, ReportHTML: reportHTMLPath(c.String("report-html"), c.String("out-dir")),
	}, nil
}

// reportHTMLPath is the HTML page's file: the flag's, else index.html in
// the output folder; "none" (or no output folder) is no page.
func reportHTMLPath(flag, outDir string) string {
	switch {
	case flag == "none":
		return ""
	case flag != "":
		return flag
	case outDir == "":
		return ""
	}
	return filepath.Join(outDir, "index.html")
}

// setBatchLogging gives cfg a progress bar on a terminal (and the log
// too with --verbose), a text log elsewhere, and neither with --quiet.
func setBatchLogging(c *cli.Context, cfg *pipelines.Config, stderr io.Writer) {
	level := slog.LevelInfo
	if c.Bool("verbose") {
		level = slog.LevelDebug
	}
	switch {
	case c.Bool("quiet"):
	case termbar.IsTerminal(stderr):
		cfg.Progress = batchBar(stderr)
		if c.Bool("verbose") {
			cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
		}
	default:
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	}
}

// batchError words the run's error for the command line: the flag that
// helps, and exit status exitDrift when only drift failed scenes.
func batchError(err error) error {
	if errors.Is(err, stac.ErrNoDatetime) {
		return fmt.Errorf("batch: %w (give --datetime TIME or START/END)", err)
	}
	if errors.Is(err, pipelines.ErrModelItemOutside) {
		return fmt.Errorf("batch: --model-item %w", err)
	}
	if errors.Is(err, pipelines.ErrOutsideCatalog) {
		return fmt.Errorf("batch: %w (--allow-outside-catalog reads it)", err)
	}
	var failed *pipelines.FailedError
	if errors.As(err, &failed) && failed.Drift == failed.Failed {
		// Only scenes refused for their drift (--on-drift fail) failed.
		return cli.Exit(fmt.Sprintf("batch: %v", err), exitDrift)
	}
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	return nil
}

// parseDatetimeFlag reads --datetime: a time, or an interval START/END
// (end zero for a single time).
func parseDatetimeFlag(v string) (time.Time, time.Time, error) {
	if v == "" {
		return time.Time{}, time.Time{}, nil
	}
	bad := fmt.Errorf("--datetime %q: want an RFC 3339 time (2024-06-01T10:30:00Z), a date (2024-06-01) or an interval START/END of them", v)
	a, b, interval := strings.Cut(v, "/")
	start, ok := stac.ParseDatetime(a)
	if !ok {
		return time.Time{}, time.Time{}, bad
	}
	if !interval {
		return start, time.Time{}, nil
	}
	end, ok := stac.ParseDatetime(b)
	if !ok || end.Before(start) {
		return time.Time{}, time.Time{}, bad
	}
	return start, end, nil
}

// reportFile is the --report file. It is opened (created when missing)
// before the run but emptied only when the first line comes, so that a run
// refused before any work (the report path is one of the inputs, say)
// leaves an existing file as it was.
type reportFile struct {
	f       *os.File
	created bool // the file did not exist before
	started bool // a line was written
}

func openReport(path string) (*reportFile, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &reportFile{f: f, created: errors.Is(statErr, fs.ErrNotExist)}, nil
}

// empty truncates a regular file (a device such as /dev/stdout is left alone).
func (r *reportFile) empty() error {
	if st, err := r.f.Stat(); err != nil || !st.Mode().IsRegular() {
		return err
	}
	return r.f.Truncate(0)
}

func (r *reportFile) Write(b []byte) (int, error) {
	if !r.started {
		r.started = true
		if err := r.empty(); err != nil {
			return 0, err
		}
	}
	return r.f.Write(b)
}

// finish ends a run's report: a run that wrote no line leaves an empty
// report, unless it was refused, when the file is left as it was (removed
// when the run created it).
func (r *reportFile) finish(refused bool) error {
	switch {
	case r.started:
		return nil
	case refused && r.created:
		return os.Remove(r.f.Name())
	case refused:
		return nil
	}
	return r.empty()
}

// exitDrift is batch's exit status when every failed scene was refused for
// its drift under --on-drift fail.
const exitDrift = 4

// batchBar draws scenes done, and the current scene's tiles, on a terminal.
func batchBar(w io.Writer) progress.Func {
	var bar *progressbar.ProgressBar
	return func(ev progress.Event) {
		if bar == nil {
			bar = termbar.New(w, ev.Total, termbar.Options{})
		}
		name := ev.Subject
		if len(name) > 40 {
			name = "..." + name[len(name)-37:]
		}
		if ev.Parts > 0 {
			bar.Describe(fmt.Sprintf("scenes (%s: tile %d/%d)", name, ev.Part, ev.Parts))
		} else {
			bar.Describe("scenes")
		}
		_ = bar.Set64(ev.Done)
		if ev.Done == ev.Total && ev.Parts == 0 {
			_ = bar.Finish()
		}
	}
}
