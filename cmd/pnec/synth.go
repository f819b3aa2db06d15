package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/importer"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/synth"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "synth",
		Usage:     "generate a synthetic hyperspectral scene and its labels from a layout and real class spectra",
		UsageText: "pnec synth --layout LABELS --bands N --out scene.tif [--labels-out labels.tif] [--spectra SOURCE] [--noise F] [--mixing PX] [--seed N] [--vrt ROWSxCOLS]",
		Description: "The layout is a ground-truth map (a GeoTIFF from 'pnec import mat', or a .mat label file,\n" +
			"FILE.mat or FILE.mat:VAR) or 'procedural:ROWSxCOLS' (fields, roads, buildings, water drawn as\n" +
			"polygons). Each class gets the spectral distribution of a real class of the source (SalinasA\n" +
			"or JasperRidge from the shared data folder, or SCENE,LABELS files): a few modes, each a mean\n" +
			"and a low-rank covariance, resampled to --bands; extra classes are mixtures of real ones. The\n" +
			"layout's unlabelled background (0) is split into --background-classes regions with spectra\n" +
			"of their own but stays 0 in the label output. Boundaries carry mixed pixels (--mixing) and\n" +
			"every pixel sensor noise (--noise). The same --seed gives the same bytes.\n\n" +
			"Examples:\n" +
			"  pnec synth --layout ../shared/data/PaviaU/paviaU_gt.mat --bands 103 --out paviau.tif --labels-out paviau_gt.tif\n" +
			"  pnec synth --layout procedural:2048x2048 --bands 64 --spectra JasperRidge --out fields.tif\n" +
			"  pnec synth --layout procedural:1024x1024 --bands 103 --out huge.vrt --vrt 20000x20000",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "layout", Required: true, Usage: "label `LAYOUT`: a ground-truth GeoTIFF, FILE.mat[:VAR], or procedural:ROWSxCOLS"},
			&cli.IntFlag{Name: "bands", Usage: "`N` output bands, resampled linearly over the band axis (0 = the source's: 204 for SalinasA, 198 for JasperRidge)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "output scene `PATH` (GeoTIFF; with --vrt, the VRT)"},
			&cli.StringFlag{Name: "labels-out", Usage: "also write the labels (Byte GeoTIFF, 0 = unlabelled; with --vrt, a VRT) to `PATH`"},
			&cli.StringFlag{Name: "spectra", Value: "SalinasA", Usage: "spectra source: SalinasA, JasperRidge, or `SCENE,LABELS` (.mat or GDAL rasters)"},
			&cli.StringFlag{Name: "data-dir", Usage: "shared data folder `DIR` for named sources (default: $PNEC_DATA, else shared/data above the working directory)"},
			&cli.Float64Flag{Name: "noise", Value: 0.01, Usage: "sensor noise standard deviation as a `FRACTION` of each band's mean signal"},
			&cli.Float64Flag{Name: "mixing", Value: 0.7, Usage: "sigma in `PIXELS` of the point spread that mixes classes at boundaries (0 = none, at most 5)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random `SEED`; the same seed gives the same scene"},
			&cli.IntFlag{Name: "background-classes", Value: 3, Usage: "`N` land-cover regions the unlabelled background (0) is split into"},
			&cli.IntFlag{Name: "rank", Value: 8, Usage: "`N` principal axes kept per class mode from the source covariance"},
			&cli.StringFlag{Name: "type", Value: "Int16", Usage: "scene data `TYPE`: Int16, UInt16 or Float32"},
			&cli.Float64Flag{Name: "gsd", Value: 1.0, Usage: "pixel size in `METRES` when the layout has no georeference (placed in UTM 32N)"},
			&cli.StringFlag{Name: "vrt", Usage: "write a `ROWSxCOLS` VRT that repeats the generated block (written beside it as .block.tif)"},
			creationOptionsFlag("GTiff", "for the scene", "--co COMPRESS=NONE"),
		},
		Action: synthAction,
	})
}

// synthConfigFlags are the flags that set synth.Config's fields.
var synthConfigFlags = map[string]string{
	"Bands": "bands", "NoiseRel": "noise", "MixingSigmaPx": "mixing", "BackgroundClasses": "background-classes",
}

func synthAction(c *cli.Context) error {
	ctx := c.Context
	start := time.Now()
	var dt geo.DataType
	switch strings.ToLower(c.String("type")) {
	case "int16":
		dt = geo.Int16
	case "uint16":
		dt = geo.UInt16
	case "float32":
		dt = geo.Float32
	default:
		return fmt.Errorf("--type %s: want Int16, UInt16 or Float32", c.String("type"))
	}
	if c.Int("bands") < 0 {
		return fmt.Errorf("--bands %d: want a positive number of bands (or 0 for the source's)", c.Int("bands"))
	}
	if c.Float64("gsd") <= 0 {
		return fmt.Errorf("--gsd %g: want a positive pixel size in metres", c.Float64("gsd"))
	}
	var vrtRows, vrtCols int
	if v := c.String("vrt"); v != "" {
		var err error
		if vrtRows, vrtCols, err = synth.ParseSize(v); err != nil {
			return fmt.Errorf("--vrt: %w", err)
		}
	}
	if err := synthNotInputs(c); err != nil {
		return err
	}
	seed := c.Uint64("seed")
	layout, ref, err := synth.LoadLayout(ctx, c.String("layout"), seed)
	if err != nil {
		return fmt.Errorf("layout %s: %w", c.String("layout"), err)
	}
	dataDir := c.String("data-dir")
	if dataDir == "" {
		wd, _ := os.Getwd()
		dataDir, _ = synth.FindDataDir(wd) // named sources report the missing folder
	}
	src, err := synth.LoadSource(ctx, c.String("spectra"), dataDir, synth.EstimateOptions{Rank: c.Int("rank"), BackgroundClusters: 3, Seed: seed})
	if err != nil {
		return fmt.Errorf("spectra %s: %w", c.String("spectra"), err)
	}
	cfg := synth.DefaultConfig()
	cfg.Bands = c.Int("bands")
	cfg.Seed = seed
	cfg.NoiseRel = c.Float64("noise")
	cfg.MixingSigmaPx = c.Float64("mixing")
	cfg.BackgroundClasses = c.Int("background-classes")
	gen, err := synth.New(layout, src, cfg)
	var ce *synth.ConfigError
	if errors.As(err, &ce) {
		if flag, ok := synthConfigFlags[ce.Field]; ok {
			return fmt.Errorf("--%s %g: want %s", flag, ce.Value, ce.Want)
		}
	}
	if err != nil {
		return err
	}
	if ref == nil {
		r := synth.DefaultGeoRef(c.Float64("gsd"))
		ref = &r
	}
	opt := synth.WriteOptions{
		Path: c.String("out"), LabelsPath: c.String("labels-out"), DataType: dt, GeoRef: *ref,
		CreationOptions: c.StringSlice("co"), Metadata: gen.Describe(src.Name),
	}
	if vrtRows > 0 {
		if _, err := synth.WriteVRT(ctx, gen, opt, vrtRows, vrtCols); errors.Is(err, synth.ErrTooLarge) {
			return fmt.Errorf("--vrt %s: %w", c.String("vrt"), err)
		} else if err != nil {
			return err
		}
	} else if err := synth.WriteScene(ctx, gen, opt); err != nil {
		return err
	}
	if c.Bool("verbose") {
		fmt.Fprintf(os.Stderr, "synth: %dx%d block, %d bands, %d spectral classes from %s in %s\n",
			layout.Rows, layout.Cols, gen.Bands(), len(gen.Classes()), src.Name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// synthNotInputs refuses, before any work, outputs that are inputs (the
// layout file, the spectra source's files) or each other.
func synthNotInputs(c *cli.Context) error {
	inputs := []samefile.Named{{Path: importer.ParseSource(c.String("layout")).File, Role: "--layout"}}
	if scene, labels, ok := strings.Cut(c.String("spectra"), ","); ok {
		inputs = append(inputs, samefile.Named{Path: importer.ParseSource(scene).File, Role: "--spectra"},
			samefile.Named{Path: importer.ParseSource(labels).File, Role: "--spectra"})
	}
	out := samefile.Named{Path: c.String("out"), Role: "--out"}
	outputs := []samefile.Named{out}
	if l := c.String("labels-out"); l != "" {
		labelsOut := samefile.Named{Path: l, Role: "--labels-out"}
		outputs = append(outputs, labelsOut)
		if samefile.Same(out.Path, l) {
			return fmt.Errorf("--labels-out %s is --out %s: give two files", l, out.Path)
		}
	}
	return checkOutputsNotInputs(outputs, inputs)
}
