package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/pnec/pnec/internal/progress"
	"github.com/pnec/pnec/pipelines"
)

func init() {
	register(&cli.Command{
		Name:      "batch",
		Usage:     "classify many scenes (files, globs, directories, STAC) into COG products with STAC Items, idempotently",
		UsageText: "pnec batch --model MODEL --out-dir DIR [options] INPUT...",
		Description: "Each INPUT is a GDAL dataset name (path, VRT, /vsizip/, /vsicurl/, /vsis3/ ...), a glob, a\n" +
			"directory (its raster and STAC files, not recursive), or a STAC Item, ItemCollection, Catalog or\n" +
			"Collection (local file or http(s) URL; the scene is the asset with role \"data\", or --asset KEY).\n" +
			"For each scene KEY (the STAC Item id or the file name without extension) the run writes\n" +
			"DIR/KEY.tif (the COG product) and DIR/KEY.json (its STAC Item, which also records the input's\n" +
			"size and modification time and the model checksum). A scene whose product is up to date is\n" +
			"skipped (--force redoes it); a run killed at any moment and started again finishes the rest.\n" +
			"One failing scene does not stop the others; the exit status is 1 when any failed (4 when the\n" +
			"only failures are scenes refused for their drift under --on-drift fail).\n" +
			"A JSON line per scene goes to --report (default stdout), a summary to stderr.\n\n" +
			"Examples:\n" +
			"  pnec batch --model salinas.pnec --out-dir products/ incoming/*.tif\n" +
			"  pnec batch --model m.pnec --out-dir products/ --stac-collection products/collection.json catalog.json\n" +
			"  pnec batch --model m.pnec --out-dir /shared/products --shard 2/8 /shared/incoming/\n" +
			"  JOB_COMPLETION_INDEX=2 pnec batch --model m.pnec --out-dir out --shards 8 in/   (Kubernetes Indexed Job)\n" +
			"  sbatch --array=0-7 --wrap 'pnec batch --model m.pnec --out-dir /shared/out /shared/in/'   (Slurm: shard from the array)\n" +
			"  pnec --config AWS_REGION=eu-west-1 batch --model m.pnec --out-dir out /vsis3/bucket/scene.tif",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "trained model `FILE` (from 'pnec train')"},
			&cli.StringFlag{Name: "out-dir", Required: true, Usage: "output `DIR` (local file system) for KEY.tif and KEY.json; created if missing"},
			&cli.StringFlag{Name: "asset", Usage: "STAC asset `KEY` to classify (default: the asset with role \"data\")"},
			&cli.BoolFlag{Name: "force", Usage: "redo scenes whose product is up to date"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "scenes classified at once, `N`; 0 = 1 on a GPU backend, on CPU as many as fit in --max-memory (at most the CPU count)"},
			&cli.StringFlag{Name: "shard", Usage: "process only shard `I/N` of the inputs (0-based I; deterministic, by a hash of the scene key)"},
			&cli.IntFlag{Name: "shards", Usage: "number of shards `N` where the engine does not say (Kubernetes Indexed Job, AWS Batch array; or PNEC_SHARDS); the shard index comes from SLURM_ARRAY_TASK_ID (the count from the array's range), JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX without --shard"},
			&cli.StringFlag{Name: "stac-collection", Usage: "STAC Collection `FILE` each Item is added to (created if missing, updated atomically)"},
			&cli.StringFlag{Name: "collection-id", Usage: "`ID` of a new collection (default: the collection file's directory name)"},
			&cli.StringFlag{Name: "license", Usage: "licence of the Collection's products, an SPDX `ID` or expression (e.g. CC-BY-4.0; default: proprietary, none granted)"},
			&cli.StringFlag{Name: "datetime", Usage: "acquisition `TIME` (RFC 3339, or YYYY-MM-DD) of the scenes, written as each Item's datetime; without it, a scene's own (source STAC Item, ACQUISITIONDATETIME/TIFFTAG_DATETIME metadata), or datetime null with start_datetime..end_datetime when it has none"},
			&cli.StringFlag{Name: "on-drift", Value: string(pipelines.OnDriftWarn), Usage: "what to do with a scene whose drift verdict is fail (docs/acquisitions.md): `ACTION` warn (publish and report it), skip (withhold its product and Item, status refused) or fail (withhold them, the scene fails; exit status 4 when nothing else failed)"},
			&cli.StringFlag{Name: "report", Value: "-", Usage: "run report `FILE`: one JSON line per scene (- = stdout)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bar or log lines (the report and errors still appear)"},
		}, productFlags()...),
		Action: batchAction,
	})
}

// batchEngine reads --shard, else the shard the job engine gives
// (pipelines.EngineFromEnv: Slurm job arrays, Kubernetes Indexed Jobs, AWS
// Batch array jobs; --shards or PNEC_SHARDS for the count where the engine
// does not publish it).
func batchEngine(c *cli.Context) (pipelines.Engine, error) {
	s := c.String("shard")
	if s != "" && c.IsSet("shards") {
		return pipelines.Engine{}, errors.New("batch: give --shard I/N or --shards N, not both")
	}
	if s != "" {
		sh, err := pipelines.ParseShard(s)
		return pipelines.Engine{Shard: sh}, err
	}
	if c.IsSet("shards") && c.Int("shards") < 1 {
		return pipelines.Engine{}, fmt.Errorf("batch: --shards %d: want at least 1", c.Int("shards"))
	}
	e, err := pipelines.EngineFromEnv(os.Getenv, c.Int("shards"))
	if err != nil {
		return pipelines.Engine{}, fmt.Errorf("batch: %w", err)
	}
	return e, nil
}

func batchAction(c *cli.Context) error {
	inputs := c.Args().Slice()
	if len(inputs) == 0 {
		return errors.New("batch: no INPUT given (scenes, globs, directories or STAC documents)")
	}
	engine, err := batchEngine(c)
	shard := engine.Shard
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
	var report io.Writer = c.App.Writer
	if report == nil {
		report = os.Stdout
	}
	if p := c.String("report"); p != "-" {
		f, err := os.Create(p)
		if err != nil {
			return fmt.Errorf("--report %s: %w", p, err)
		}
		defer f.Close()
		report = f
	}

	var acquired time.Time
	if v := c.String("datetime"); v != "" {
		t, ok := pipelines.ParseDatetime(v)
		if !ok {
			return fmt.Errorf("--datetime %q: want an RFC 3339 time (2024-06-01T10:30:00Z) or a date (2024-06-01)", v)
		}
		acquired = t
	}
	onDrift, err := pipelines.ParseOnDrift(c.String("on-drift"))
	if err != nil {
		return fmt.Errorf("--on-drift %s: want warn, skip or fail", c.String("on-drift"))
	}
	cfg := pipelines.Config{
		OnDrift:  onDrift,
		Datetime: acquired, License: c.String("license"),
		ModelPath: c.String("model"), OutDir: c.String("out-dir"), Inputs: inputs,
		Asset: c.String("asset"), Force: c.Bool("force"), Jobs: c.Int("jobs"), Shard: shard, Engine: engine,
		Collection: c.String("stac-collection"), CollectionID: c.String("collection-id"),
		Options: opts, Report: report, Version: version,
	}
	level := slog.LevelInfo
	if c.Bool("verbose") {
		level = slog.LevelDebug
	}
	switch {
	case c.Bool("quiet"):
	case progress.IsTerminal(stderr):
		cfg.OnEvent = batchBar(stderr)
		if c.Bool("verbose") {
			cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
		}
	default:
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	}

	sum, err := pipelines.Run(c.Context, cfg)
	if !c.Bool("quiet") && sum.Scenes > 0 {
		fmt.Fprintln(stderr, "batch: "+sum.String())
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

// exitDrift is batch's exit status when every failed scene was refused for
// its drift under --on-drift fail.
const exitDrift = 4

// batchBar draws scenes done, and the current scene's tiles, on a terminal.
func batchBar(w io.Writer) func(pipelines.Event) {
	var bar *progressbar.ProgressBar
	return func(ev pipelines.Event) {
		if bar == nil {
			bar = progress.New(w, int64(ev.ScenesTotal), progress.Options{})
		}
		name := ev.Scene
		if len(name) > 40 {
			name = "..." + name[len(name)-37:]
		}
		if ev.TilesTotal > 0 {
			bar.Describe(fmt.Sprintf("scenes (%s: tile %d/%d)", name, ev.TilesDone, ev.TilesTotal))
		} else {
			bar.Describe("scenes")
		}
		_ = bar.Set(ev.ScenesDone)
		if ev.ScenesDone == ev.ScenesTotal && ev.TilesTotal == 0 {
			_ = bar.Finish()
		}
	}
}
