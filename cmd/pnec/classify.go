package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pnec/pnec/internal/progress"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "classify",
		Usage:     "classify a hyperspectral scene into a COG land-cover product (class + reliability bands)",
		UsageText: "pnec classify --model MODEL --scene SCENE --out PRODUCT.tif [options]\npnec classify --model MODEL [options] INPUT OUTPUT",
		Description: "Runs the model on the whole image when the scene fits the memory budget, otherwise on\n" +
			"overlapping tiles that are blended before the AvgPool recovery, and streams the product: band 1\n" +
			"'class' (colour table and class names inside), band 2 'reliability' (percent); both bands share\n" +
			"the no-data value 255 (65535 for more than 254 classes). --reliability float32 adds OUTPUT's\n" +
			"NAME.reliability.tif (Float32 0..1, NaN no-data); a QGIS style NAME.qml is written beside it.\n" +
			"The reliability is by default the spectral agreement of each pixel with\n" +
			"the model's training pixels of its label (--reliability-score; see 'pnec evaluate' for each kind's\n" +
			"measured error AUROC). The product is written beside OUTPUT and renamed into place when complete.\n" +
			"The scene is any GDAL dataset name (GeoTIFF, ENVI, VRT, /vsicurl/...). The positional form lets\n" +
			"GDAL pipelines call pnec as an external step.\n\n" +
			"Examples:\n" +
			"  pnec classify --model salinas.pnec --scene salinas.tif --out salinas_map.tif\n" +
			"  pnec classify --model paviau.pnec --scene big.vrt --out big_map.tif --max-memory 4G\n" +
			"  pnec classify --model paviau.pnec --scene paviau.tif --out map.tif --tile 256 --overlap 64 --co COMPRESS=ZSTD\n" +
			"  pnec classify --model paviau.pnec scene.tif map.tif",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "trained model `FILE` (from 'pnec train')"},
			&cli.StringFlag{Name: "scene", Usage: "input scene: any GDAL dataset `NAME` (or the first argument)"},
			&cli.StringFlag{Name: "out", Usage: "output product `PATH` (COG GeoTIFF; or the second argument)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress and no summary line"},
		}, productFlags()...),
		Action: classifyAction,
	})
}

// planFlags are the flags that shape the tile plan, shared by classify and tiles.
func planFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-memory", Usage: "memory budget `SIZE` for planning (e.g. 4G, 512M; default: half of physical memory)"},
		&cli.IntFlag{Name: "tile", Usage: "force tiles of `N` pixels a side (rounded up to the stride of 4; 0 = the budget decides)"},
		&cli.IntFlag{Name: "overlap", Value: -1, Usage: "overlap between tiles in `PIXELS` (rounded up to 4; -1 = 32 px, at least the recovery window + 16, measured: see docs/classify.md)"},
	}
}

// productFlags are the flags that shape a product, shared by classify and
// batch: the plan flags plus backend, creation options and reliability.
func productFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "backend", Usage: "compute backend `NAME`: go, xla:cpu, xla:cuda, xla:/abs/plugin.so (default: XLA when a PJRT plugin is installed, else go)"},
		&cli.StringSliceFlag{Name: "co", Usage: "COG creation option `KEY=VALUE` (repeatable), e.g. --co COMPRESS=ZSTD --co BLOCKSIZE=256"},
		&cli.StringFlag{Name: "reliability", Value: "byte", Usage: "reliability `TYPE`: byte (band 2, percent 0-100, no-data 255) or float32 (band 2 as byte plus a Float32 0..1 COG NAME.reliability.tif, NaN no-data)"},
		&cli.StringFlag{Name: "reliability-score", Usage: "`KIND` of score the reliability band carries: spectral, spectral-margin, combined, margin, maxprob, entropy or gate (default: spectral, the best measured; combined for model files without training spectra)"},
	}, planFlags()...)
}

// productOptions reads the product flags (see productFlags) into processor options.
func productOptions(c *cli.Context) (processor.Options, error) {
	opts, err := planOptions(c)
	if err != nil {
		return opts, err
	}
	opts.Backend = c.String("backend")
	opts.CreationOptions = c.StringSlice("co")
	for _, kv := range opts.CreationOptions {
		if !strings.Contains(kv, "=") {
			return opts, fmt.Errorf("--co %s: want KEY=VALUE", kv)
		}
	}
	switch strings.ToLower(c.String("reliability")) {
	case "byte":
	case "float32":
		opts.ReliabilityFloat32 = true
	default:
		return opts, fmt.Errorf("--reliability %s: want byte or float32", c.String("reliability"))
	}
	if v := c.String("reliability-score"); v != "" {
		kind, err := model.ParseReliability(v)
		if err != nil {
			return opts, fmt.Errorf("--reliability-score: %w", err)
		}
		opts.Reliability = kind
	}
	return opts, nil
}

// planOptions reads the plan flags into processor options.
func planOptions(c *cli.Context) (processor.Options, error) {
	var o processor.Options
	if s := c.String("max-memory"); s != "" {
		n, err := processor.ParseBytes(s)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("--max-memory %s: want a positive size such as 4G or 512M", s)
		}
		o.MaxMemoryBytes = n
	}
	if t := c.Int("tile"); t < 0 {
		return o, fmt.Errorf("--tile %d: want a positive tile side in pixels (or 0 for automatic)", t)
	} else {
		o.TileSize = t
	}
	switch ov := c.Int("overlap"); {
	case ov < -1:
		return o, fmt.Errorf("--overlap %d: want pixels >= 0 (or -1 for automatic)", ov)
	case ov == -1:
		o.Overlap = 0 // processor's default
	case ov == 0:
		o.Overlap = -1 // processor's "none"
	default:
		o.Overlap = ov
	}
	if c.IsSet("overlap") && o.TileSize == 0 {
		return o, errors.New("--overlap needs --tile (the automatic plan picks its own overlap)")
	}
	return o, nil
}

func classifyAction(c *cli.Context) error {
	scene, out := c.String("scene"), c.String("out")
	args := c.Args().Slice()
	switch {
	case scene == "" && out == "" && len(args) == 2:
		scene, out = args[0], args[1]
	case scene != "" && out == "" && len(args) == 1:
		out = args[0]
	case len(args) > 0:
		return fmt.Errorf("classify: unexpected arguments %q: give --scene and --out, or INPUT OUTPUT", strings.Join(args, " "))
	}
	if scene == "" || out == "" {
		return errors.New("classify: need a scene and an output: --scene SCENE --out PRODUCT.tif, or INPUT OUTPUT")
	}
	opts, err := productOptions(c)
	if err != nil {
		return err
	}
	if err := processor.CheckOutput(out); err != nil {
		return fmt.Errorf("--out %w", err)
	}
	quiet := c.Bool("quiet")
	stderr := c.App.ErrWriter
	if stderr == nil {
		stderr = os.Stderr
	}
	if c.Bool("verbose") {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	if !quiet {
		opts.OnProgress = progressReporter(stderr, scene)
	}

	m, err := model.Load(c.String("model"))
	if err != nil {
		return fmt.Errorf("%s: %w", c.String("model"), err)
	}
	cl, err := processor.NewClassifier(m, opts)
	if errors.Is(err, processor.ErrTileTooSmall) {
		return fmt.Errorf("--tile %d: %w", opts.TileSize, err)
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := cl.Classify(c.Context, scene, out)
	if err != nil {
		return err
	}
	if !quiet {
		w := c.App.Writer
		if w == nil {
			w = os.Stdout
		}
		printSummary(w, res)
	}
	return cl.Close()
}

// progressReporter shows pixels done, pixels/s and the time left: a bar on
// a terminal, a line per tile otherwise (for logs).
func progressReporter(w io.Writer, scene string) func(processor.Progress) {
	if progress.IsTerminal(w) {
		var bar *progressbar.ProgressBar
		return func(p processor.Progress) {
			if bar == nil {
				bar = progress.New(w, p.PixelsAll, progress.Options{
					Description: "classify " + filepath.Base(scene), Units: "px", Throttle: 200 * time.Millisecond})
			}
			_ = bar.Set64(p.Pixels)
			if p.Tile == p.Tiles {
				_ = bar.Finish()
			}
		}
	}
	return func(p processor.Progress) {
		fmt.Fprintf(w, "classify %s: %s\n", scene, p)
	}
}

func printSummary(w io.Writer, r processor.Result) {
	fmt.Fprintf(w, "%s: %dx%d (cols x rows), %s, backend %s\n", r.Product, r.Cols, r.Rows, r.Plan, r.Backend)
	total := int64(r.Rows) * int64(r.Cols)
	fmt.Fprintf(w, "  valid pixels %d of %d (%.1f%%); classes:", r.ValidPixels, total, 100*float64(r.ValidPixels)/float64(max(total, 1)))
	keys := make([]int, 0, len(r.ClassCounts))
	for k := range r.ClassCounts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		fmt.Fprintf(w, " %d:%d", k, r.ClassCounts[k])
	}
	fmt.Fprintln(w)
	t := r.Times
	rd, nw, st, wr := r.Shares()
	fmt.Fprintf(w, "  time %s, %s px/s (read %s %.0f%%, network %s %.0f%%, stitch+recovery %s %.0f%%, write %s %.0f%% of the wall time; stages overlap)\n",
		r.Elapsed.Round(time.Millisecond), processor.SI(r.PixelsPerSecond()),
		t.Read.Round(time.Millisecond), 100*rd, t.Network.Round(time.Millisecond), 100*nw,
		t.Stitch.Round(time.Millisecond), 100*st, t.Write.Round(time.Millisecond), 100*wr)
	fmt.Fprintf(w, "  memory budget %s, planned peak %s\n", processor.FormatBytes(r.MaxMemoryBytes), processor.FormatBytes(r.PlannedBytes))
	if d := r.Drift; d != nil {
		fmt.Fprintf(w, "  drift %s (far pixels %.1f%%, reliability %.0f%% of the training scene's, brightness x%.2f)\n",
			d.Summary(), 100*d.FarShare, 100*d.ReliabilityRatio, d.BrightnessRatio)
	}
}
