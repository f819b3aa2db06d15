package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/importer"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "import",
		Usage: "convert benchmark files into GeoTIFFs that the other commands read",
		Subcommands: []*cli.Command{{
			Name:      "mat",
			Usage:     "convert MATLAB .mat cubes and label maps to GeoTIFF",
			UsageText: "pnec import mat [--cube FILE.mat[:VAR] --out scene.tif] [--labels FILE.mat[:VAR] --labels-out labels.tif] [--epsg N --origin X,Y --pixel-size S]",
			Description: "Reads MATLAB 5/7 MAT-files (compressed or not, any stored numeric type, either byte\n" +
				"order) and writes tiled, DEFLATE-compressed GeoTIFFs.\n\n" +
				"The cube is a rows x cols x bands array, or the unmixing layout Y (bands x pixels, pixels\n" +
				"column-major) with scalars nRow and nCol, found automatically. Without :VAR the file's only\n" +
				"3-D array (cube) or only 2-D array (labels) is taken. The cube is written as Int16 or UInt16\n" +
				"when every value is an integer that fits, else Float32; labels as Byte (UInt16 above 255).\n" +
				"Label value 0 means unlabelled and is kept as a value: no nodata is set on either file.\n\n" +
				"Without --epsg/--origin/--pixel-size the output is a local pixel grid: no geotransform\n" +
				"(origin 0,0, pixel size 1, row axis down) and no CRS, marked by the metadata item\n" +
				"PNEC_GRID=local. MATLAB v7.3 files are HDF5: they are read through GDAL's HDF5 driver and\n" +
				"need :VAR.\n\n" +
				"Examples:\n" +
				"  pnec import mat --cube ../shared/data/SalinasA/SalinasA_corrected.mat \\\n" +
				"      --labels ../shared/data/SalinasA/SalinasA_gt.mat --out salinasA.tif --labels-out salinasA_gt.tif\n" +
				"  pnec import mat --cube ../shared/data/JasperRidge/JasperRidge2_R198.mat --out jasper.tif\n" +
				"  pnec import mat --labels ../shared/data/Houston2013/houston_gt_trte.mat:houston_gt_tr --labels-out houston_tr.tif\n" +
				"  pnec import mat --labels ../shared/data/PaviaU/paviaU_gt.mat --labels-out paviaU_gt.tif \\\n" +
				"      --epsg 32632 --origin 1000,5000 --pixel-size 1.3",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "cube", Usage: "hyperspectral cube `FILE.mat[:VAR]` (VAR defaults to the only 3-D array, or Y with nRow/nCol or lines/cols; refused naming them when several could be the cube)"},
				&cli.StringFlag{Name: "labels", Usage: "label map `FILE.mat[:VAR]` (2-D, 0 = unlabelled; VAR defaults to the only 2-D array)"},
				&cli.StringFlag{Name: "out", Usage: "output GeoTIFF `PATH` for the cube (required with --cube)"},
				&cli.StringFlag{Name: "labels-out", Usage: "output GeoTIFF `PATH` for the labels (required with --labels)"},
				&cli.IntFlag{Name: "epsg", Usage: "EPSG `CODE` of the CRS (needs --origin and --pixel-size)"},
				&cli.StringFlag{Name: "origin", Usage: "`X,Y` of the top-left corner of the top-left pixel, in CRS units"},
				&cli.Float64Flag{Name: "pixel-size", Usage: "pixel size in CRS `UNITS` (metres for projected CRSs); north-up"},
				creationOptionsFlag("GTiff", "", "--co COMPRESS=ZSTD"),
			},
			Action: importMatAction,
		}},
	})
}

func importMatAction(c *cli.Context) error {
	cube, labels := c.String("cube"), c.String("labels")
	out, labelsOut := c.String("out"), c.String("labels-out")
	switch {
	case cube == "" && labels == "":
		return errors.New("import mat: give --cube, --labels or both")
	case cube != "" && out == "":
		return errors.New("import mat: --cube needs --out")
	case cube == "" && out != "":
		return errors.New("import mat: --out is the cube's output; give --cube (or use --labels-out for labels)")
	case labels != "" && labelsOut == "":
		return errors.New("import mat: --labels needs --labels-out")
	case labels == "" && labelsOut != "":
		return errors.New("import mat: --labels-out needs --labels")
	case out != "" && labelsOut != "" && filepath.Clean(out) == filepath.Clean(labelsOut):
		return fmt.Errorf("import mat: --out and --labels-out are the same file %s", out)
	}
	var inputs, outputs []samefile.Named
	if cube != "" {
		inputs = append(inputs, samefile.Named{Path: importer.ParseSource(cube).File, Role: "--cube"})
		outputs = append(outputs, samefile.Named{Path: out, Role: "--out"})
	}
	if labels != "" {
		inputs = append(inputs, samefile.Named{Path: importer.ParseSource(labels).File, Role: "--labels"})
		outputs = append(outputs, samefile.Named{Path: labelsOut, Role: "--labels-out"})
	}
	if cube != "" && labels != "" && samefile.Same(out, labelsOut) {
		return fmt.Errorf("import mat: --out and --labels-out are the same file %s", out)
	}
	if err := checkOutputsNotInputs(outputs, inputs); err != nil {
		return fmt.Errorf("import mat: %w", err)
	}
	ref, local, err := importGeoRef(c)
	if err != nil {
		return err
	}

	res, err := importer.MAT(c.Context, importer.Request{
		Cube: importer.ParseSource(cube), CubeOut: out,
		Labels: importer.ParseSource(labels), LabelsOut: labelsOut,
		GeoRef: ref, Local: local, CreationOptions: c.StringSlice("co"),
		LimitCache: !cacheMaxSet(c),
	})
	// Verbose lines for what was written, even when a later write failed.
	if c.Bool("verbose") {
		if w := res.Cube; w != nil {
			fmt.Fprintf(c.App.ErrWriter, "import: %s -> %s: %d rows x %d cols x %d bands, %s (read %v, total %v)\n",
				w.What, w.Path, w.Rows, w.Cols, w.Bands, w.DataType, res.Read.Round(time.Millisecond), res.CubeDone.Round(time.Millisecond))
		}
		if w := res.Labels; w != nil {
			fmt.Fprintf(c.App.ErrWriter, "import: %s -> %s: %d rows x %d cols, %s\n", w.What, w.Path, w.Rows, w.Cols, w.DataType)
		}
	}
	if err != nil {
		return err
	}
	if local {
		fmt.Fprintln(c.App.ErrWriter, "pnec: notice: no georeference given (--epsg, --origin, --pixel-size): wrote a local pixel grid "+
			"(origin 0,0, pixel size 1, no CRS), marked PNEC_GRID=local; maps made from it have no place on Earth")
	}
	return nil
}

// cacheMaxSet reports whether the user chose GDAL's cache size, through the
// environment or --config.
func cacheMaxSet(c *cli.Context) bool {
	if _, ok := os.LookupEnv("GDAL_CACHEMAX"); ok {
		return true
	}
	for _, kv := range c.StringSlice("config") {
		if k, _, _ := strings.Cut(kv, "="); strings.EqualFold(strings.TrimSpace(k), "GDAL_CACHEMAX") {
			return true
		}
	}
	return false
}

// importGeoRef builds the georeference from the flags; local is true when
// none was given.
func importGeoRef(c *cli.Context) (ref geo.GeoRef, local bool, err error) {
	epsg, origin, size := c.Int("epsg"), c.String("origin"), c.Float64("pixel-size")
	if epsg == 0 && origin == "" && !c.IsSet("pixel-size") {
		return geo.GeoRef{}, true, nil
	}
	if origin == "" || !c.IsSet("pixel-size") {
		return ref, false, errors.New("import mat: --epsg, --origin and --pixel-size go together: give --origin X,Y and --pixel-size S (and --epsg N for a CRS)")
	}
	if epsg < 0 {
		return ref, false, fmt.Errorf("import mat: --epsg %d: want a positive EPSG code", epsg)
	}
	if !(size > 0) || math.IsInf(size, 0) {
		return ref, false, fmt.Errorf("import mat: --pixel-size %g: want a positive size in CRS units", size)
	}
	xs, ys, ok := strings.Cut(origin, ",")
	x, errX := strconv.ParseFloat(strings.TrimSpace(xs), 64)
	y, errY := strconv.ParseFloat(strings.TrimSpace(ys), 64)
	if !ok || errX != nil || errY != nil || math.IsInf(x, 0) || math.IsInf(y, 0) || math.IsNaN(x) || math.IsNaN(y) {
		return ref, false, fmt.Errorf("import mat: --origin %q: want X,Y (two numbers in CRS units)", origin)
	}
	// North-up: x grows with columns, y shrinks with rows.
	return geo.GeoRef{GeoTransform: [6]float64{x, size, 0, y, 0, -size}, EPSG: epsg}, false, nil
}
