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

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/geo"
	termbar "github.com/pnec/pnec/internal/progress"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/tiling"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "classify",
		Usage:     "classify a hyperspectral scene into a COG land-cover product (class + reliability bands)",
		UsageText: "pnec classify --model MODEL --scene SCENE --out PRODUCT.tif [options]\npnec classify --model MODEL [options] INPUT OUTPUT",
		Description: "Runs the model on the model's grid: the whole image when both sides are at most " + fmt.Sprint(processor.CanonicalTile) + " px,\n" +
			"otherwise overlapping tiles of that side blended before the AvgPool recovery; the memory budget\n" +
			"and the machine never change the grid, so a scene and a model give one map. It streams the product: band 1\n" +
			"'class' (colour table and class names inside), band 2 'reliability' (percent); both bands share\n" +
			"the no-data value 255 (65535 for more than 254 classes). --reliability float32 adds OUTPUT's\n" +
			"NAME.reliability.tif (Float32 0..1, NaN no-data); a QGIS style NAME.qml is written beside it.\n" +
			"--probabilities adds NAME.probabilities.tif: the class probabilities in percent, a band per class or\n" +
			"with --top-k the K most probable classes of each pixel (docs/product.md).\n" +
			"The reliability is by default the spectral agreement of each pixel with\n" +
			"the model's training pixels of its label (--reliability-score; see 'pnec evaluate' for each kind's\n" +
			"measured error AUROC). The product is written beside OUTPUT and renamed into place when complete.\n" +
			"The scene is any GDAL dataset name (GeoTIFF, ENVI, VRT, /vsicurl/...). The positional form lets\n" +
			"GDAL pipelines call pnec as an external step: gdal raster pipeline ... ! external\n" +
			"\"pnec classify --model M -q <INPUT> <OUTPUT>\" ! ... (docs/gdal-pipeline.md).\n\n" +
			"Examples:\n" +
			"  pnec classify --model salinas.pnec --scene salinas.tif --out salinas_map.tif\n" +
			"  pnec classify --model paviau.pnec --scene big.vrt --out big_map.tif --max-memory 4G\n" +
			"  pnec classify --model paviau.pnec --scene paviau.tif --out map.tif --tile 256 --overlap 64 --co COMPRESS=ZSTD\n" +
			"  pnec classify --model paviau.pnec scene.tif map.tif --probabilities recovered --top-k 3\n" +
			"  pnec classify --model paviau.pnec scene.tif map.tif",
		Flags: append([]cli.Flag{
			modelFlag(true, ""),
			sceneFlag("input scene", "or the first argument", false),
			&cli.StringFlag{Name: "out", Usage: "output product `PATH` (COG GeoTIFF; or the second argument)"},
			&cli.StringFlag{Name: "mask", Usage: "classify only inside the area of interest `FILE`: a raster (non-zero = inside) or a vector file OGR reads (GeoJSON, GeoPackage, Shapefile; polygons in any CRS, reprojected); outside is no-data, tiles wholly outside are not read"},
			quietFlag(),
		}, productFlags()...),
		Action: classifyAction,
	})
}

// planFlags are the flags that shape the tile plan, shared by classify and tiles.
func planFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-memory", Usage: "memory budget `SIZE` (e.g. 4G, 512M; default: half of what the process may use: physical memory, its cgroup limit or the address space left under ulimit -v): it decides how many tiles are in flight, never the map; a budget too small for one tile is refused with the smallest that works"},
		&cli.IntFlag{Name: "tile", Usage: fmt.Sprintf("tiles of `N` pixels a side (rounded up to the stride of 4): another grid than the model's, so another map (0 = the model's grid: the whole image up to %d px a side, else %d px tiles, whatever the budget or the machine; docs/classify.md)", processor.CanonicalTile, processor.CanonicalTile)},
		&cli.IntFlag{Name: "overlap", Value: -1, Usage: fmt.Sprintf("overlap between tiles in `PIXELS` with --tile (rounded up to 4; -1 = the model's grid's %d px, at most half the tile, measured: see docs/classify.md)", tiling.DefaultOverlapPixels)},
	}
}

// productFlags are the flags that shape a product, shared by classify and
// batch: the plan flags plus backend, creation options and reliability.
func productFlags() []cli.Flag {
	return append([]cli.Flag{
		backendFlag(),
		creationOptionsFlag("COG", "checked against GDAL's COG driver before any work, large BLOCKSIZE counted in the memory budget", "--co COMPRESS=ZSTD --co BLOCKSIZE=256"),
		&cli.StringFlag{Name: "reliability", Value: "byte", Usage: "reliability `TYPE`: byte (band 2, percent 0-100, no-data 255) or float32 (band 2 as byte plus a Float32 0..1 COG NAME.reliability.tif, NaN no-data)"},
		&cli.StringFlag{Name: "reliability-score", Usage: "`KIND` of score the reliability band carries: spectral, spectral-margin, combined, margin, maxprob, entropy or gate (default: spectral, the best measured; combined for model files without training spectra)"},
		&cli.StringFlag{Name: "probabilities", Usage: "also write the class probabilities as NAME.probabilities.tif (percent 0-100, the product's no-data): `STAGE` recovered (after the AvgPool recovery; the class band is their argmax) or network (the network's, blended across tiles, before the recovery)"},
		&cli.IntFlag{Name: "top-k", Usage: "keep the `K` most probable classes of each pixel in --probabilities, as band pairs class_1, probability_1, ... (0 = one band per class)"},
		&cli.BoolFlag{Name: "no-thumbnail", Usage: "do not write NAME.thumbnail.png, the PNG of the class map in its colours (no-data transparent, at most 512 px a side, from the COG's overview) written beside every product by default; a stale one is removed"},
	}, append(append(bandFlags(), qualityMaskFlag()), planFlags()...)...)
}

// productOptions reads the product flags (see productFlags) into processor options.
func productOptions(c *cli.Context) (processor.Options, error) {
	opts, err := planOptions(c)
	if err != nil {
		return opts, err
	}
	opts.Backend = c.String("backend")
	opts.ResampleBands = c.Bool("resample-bands")
	if err := qualityMasksFromFlag(c, &opts); err != nil {
		return opts, err
	}
	if opts.Radiometry, err = radiometryFromFlag(c); err != nil {
		return opts, err
	}
	opts.CreationOptions = c.StringSlice("co")
	opts.NoThumbnail = c.Bool("no-thumbnail")
	switch strings.ToLower(c.String("reliability")) {
	case "byte":
	case "float32":
		opts.ReliabilityFloat32 = true
	default:
		return opts, fmt.Errorf("--reliability %s: want byte or float32", c.String("reliability"))
	}
	if v := c.String("probabilities"); v != "" {
		st, err := processor.ParseProbabilityStage(strings.ToLower(v))
		if err != nil {
			return opts, fmt.Errorf("--probabilities %s: want recovered or network", v)
		}
		opts.Probabilities = st
	}
	if k := c.Int("top-k"); k != 0 {
		if opts.Probabilities == processor.ProbabilitiesOff {
			return opts, errors.New("--top-k needs --probabilities recovered or network")
		}
		if k < 0 {
			return opts, fmt.Errorf("--top-k %d: want a positive number of classes (or 0 for all)", k)
		}
		opts.TopK = k
	}
	// Checked for a Byte product here, before anything is opened; the
	// classifier checks them again for the model's classes.
	if err := geo.CheckCreationOptions(opts.CreationOptions, nil, opts.ReliabilityFloat32); err != nil {
		return opts, coError(err)
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
		n, err := memory.ParseBytes(s)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("--max-memory %s: want a positive size such as 4G or 512M", s)
		}
		o.MaxMemoryBytes = n
	}
	if t := c.Int("tile"); t < 0 || t > processor.MaxTileSide {
		return o, fmt.Errorf("--tile %d: want a tile side of 1..%d pixels (or 0 for automatic)", t, processor.MaxTileSide)
	} else {
		o.TileSize = t
	}
	// The flag's -1 (automatic) and 0 (none) read as a user counts pixels;
	// the library's zero value is its default: translated here, once.
	switch ov := c.Int("overlap"); {
	case ov < -1 || ov > processor.MaxTileSide:
		return o, fmt.Errorf("--overlap %d: want 0..%d pixels (or -1 for automatic)", ov, processor.MaxTileSide)
	case ov == -1:
		o.Overlap = tiling.OverlapAuto
	case ov == 0:
		o.Overlap = tiling.OverlapNone
	default:
		o.Overlap = ov
	}
	if c.IsSet("overlap") && o.TileSize == 0 {
		return o, errors.New("--overlap needs --tile (the model's grid has its own overlap)")
	}
	return o, nil
}

func classifyAction(c *cli.Context) error {
	scene, out := c.String("scene"), c.String("out")
	args := c.Args().Slice()
	sceneRole, outRole := "--scene", "--out"
	switch {
	case scene == "" && out == "" && len(args) == 2:
		scene, out = args[0], args[1]
		sceneRole, outRole = "INPUT", "OUTPUT"
	case scene != "" && out == "" && len(args) == 1:
		out = args[0]
		outRole = "OUTPUT"
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
	mask := c.String("mask")
	if strings.Contains(mask, "{key}") || strings.HasPrefix(mask, "asset:") {
		return fmt.Errorf("--mask %s: a pattern or asset:ROLE is for pnec batch; give the mask file", mask)
	}
	quiet := c.Bool("quiet")
	stderr := c.App.ErrWriter
	if stderr == nil {
		stderr = os.Stderr
	}
	if c.Bool("verbose") {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	var report progress.Func
	if !quiet {
		report = progressReporter(stderr, scene)
	}

	m, err := model.Load(c.String("model"))
	if err != nil {
		return fmt.Errorf("%s: %w", c.String("model"), err)
	}
	cl, err := processor.NewClassifier(m, opts)
	if errors.Is(err, processor.ErrTileTooSmall) {
		return fmt.Errorf("--tile %d: %w", opts.TileSize, err)
	}
	if errors.Is(err, processor.ErrProbabilities) {
		return fmt.Errorf("--top-k %d: %w", opts.TopK, err)
	}
	if err != nil {
		return coError(err)
	}
	defer cl.Close()
	res, err := cl.Run(c.Context, processor.Request{Scene: scene, Mask: mask, Out: out, Keep: []string{c.String("model")}, Progress: report})
	if res.StaleTemporaries > 0 {
		fmt.Fprintf(stderr, "pnec: %s: removed %d stale temporary file(s) of an earlier run\n", out, res.StaleTemporaries)
	}
	if err != nil {
		return requestHint(bandHint(err), sceneRole, outRole)
	}
	printWarnings(stderr, scene, res.Warnings)
	if !quiet {
		w := c.App.Writer
		if w == nil {
			w = os.Stdout
		}
		printSummary(w, res)
	}
	return cl.Close()
}

// requestHint words the library's refusals of the request (processor's
// checkRequest, run before anything else) after the flags or arguments
// that gave the files: an unusable product path after --out (or OUTPUT),
// an output that is one of the inputs with each file's flag.
func requestHint(err error, sceneRole, outRole string) error {
	var cf *samefile.Conflict
	switch {
	case errors.Is(err, processor.ErrBadOutput):
		return fmt.Errorf("%s %w", outRole, err)
	case errors.As(err, &cf):
		flag := map[string]string{
			processor.RoleScene: sceneRole, processor.RoleMask: "--mask",
			processor.RoleQualityMask: "--quality-mask", processor.RoleKept: "--model",
		}
		c := *cf
		if f, ok := flag[c.InputRole]; ok {
			c.InputRole = f
		}
		if rest, ok := strings.CutPrefix(c.OutputRole, "the product's "); ok {
			c.OutputRole = outRole + "'s " + rest
		} else if c.OutputRole == "the product" {
			c.OutputRole = outRole
		}
		return fmt.Errorf("%w; give another output", &c)
	}
	return err
}

// coError words a refused creation option after the --co flag that gave it.
func coError(err error) error {
	var coe *geo.CreationOptionError
	if errors.As(err, &coe) {
		return fmt.Errorf("--co %s: %s", coe.Option, coe.Reason)
	}
	return err
}

// checkOutputsNotInputs refuses, before any work, an output that is one of
// the inputs (the same path, a symbolic or hard link to it): one line naming
// both.
func checkOutputsNotInputs(outputs, inputs []samefile.Named) error {
	if err := samefile.Check(outputs, inputs); err != nil {
		return fmt.Errorf("%w; give another output", err)
	}
	return nil
}

// progressReporter shows pixels done, pixels/s and the time left: a bar on
// a terminal, a line per tile otherwise (for logs).
func progressReporter(w io.Writer, scene string) progress.Func {
	if termbar.IsTerminal(w) {
		var bar *progressbar.ProgressBar
		return func(ev progress.Event) {
			if bar == nil {
				bar = termbar.New(w, ev.Total, termbar.Options{
					Description: "classify " + filepath.Base(scene), Units: "px", Throttle: 200 * time.Millisecond})
			}
			_ = bar.Set64(ev.Done)
			if ev.Part == ev.Parts {
				_ = bar.Finish()
			}
		}
	}
	return func(ev progress.Event) {
		fmt.Fprintf(w, "classify %s: %s\n", scene, ev.Message)
	}
}

// describeFlight says how many tiles the budget (and the device) hold in
// flight: "2 tiles in flight (the next read while one runs)".
func describeFlight(f tiling.Flight) string {
	s := "1 tile in flight (the budget holds no read-ahead)"
	if f.Host > 1 {
		s = fmt.Sprintf("%d tiles in flight (the next read while one runs)", f.Host)
	}
	if f.Device > 0 {
		s += fmt.Sprintf(", %d on the device", f.Device)
	}
	return s
}

func printSummary(w io.Writer, r processor.Result) {
	fmt.Fprintf(w, "%s: %dx%d (cols x rows), %s, backend %s\n", r.Product, r.Cols, r.Rows, r.Plan, r.Backend)
	if r.Mask != "" {
		fmt.Fprintf(w, "  mask %s: %d pixels inside, %d of %d tiles wholly outside (not read)\n", r.Mask, r.MaskPixels, r.TilesSkipped, r.Tiles)
	}
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
	fmt.Fprintf(w, "  memory budget %s, planned peak %s, %s\n", memory.FormatBytes(r.MaxMemoryBytes), memory.FormatBytes(r.PlannedBytes), describeFlight(r.Flight))
	fmt.Fprintf(w, "  model bands: %s\n", r.Bands)
	if r.QualityMasks != "" {
		fmt.Fprintf(w, "  quality masks: %s\n", r.QualityMasks)
	}
	if d := r.Drift; d != nil {
		// The figures the verdict judges, then the brightness.
		var figs []string
		for _, l := range drift.DefaultThresholds.Limits {
			if f, ok := drift.FigureByKey(l.Figure); ok {
				figs = append(figs, f.Key+" "+f.Format(f.Value(*d)))
			}
		}
		fmt.Fprintf(w, "  drift %s (%s; brightness x%.2f)\n", d.Summary(), strings.Join(figs, ", "), d.BrightnessRatio)
	}
}
