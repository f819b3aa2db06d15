package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/matfile"
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
				&cli.StringFlag{Name: "cube", Usage: "hyperspectral cube `FILE.mat[:VAR]` (VAR defaults to the only 3-D array, or Y with nRow/nCol)"},
				&cli.StringFlag{Name: "labels", Usage: "label map `FILE.mat[:VAR]` (2-D, 0 = unlabelled; VAR defaults to the only 2-D array)"},
				&cli.StringFlag{Name: "out", Usage: "output GeoTIFF `PATH` for the cube (required with --cube)"},
				&cli.StringFlag{Name: "labels-out", Usage: "output GeoTIFF `PATH` for the labels (required with --labels)"},
				&cli.IntFlag{Name: "epsg", Usage: "EPSG `CODE` of the CRS (needs --origin and --pixel-size)"},
				&cli.StringFlag{Name: "origin", Usage: "`X,Y` of the top-left corner of the top-left pixel, in CRS units"},
				&cli.Float64Flag{Name: "pixel-size", Usage: "pixel size in CRS `UNITS` (metres for projected CRSs); north-up"},
				&cli.StringSliceFlag{Name: "co", Usage: "GTiff creation option `KEY=VALUE` (repeatable), e.g. --co COMPRESS=ZSTD"},
			},
			Action: importMatAction,
		}},
	})
}

// matSource is one "FILE.mat[:VAR]" argument.
type matSource struct{ file, varName string }

func (s matSource) String() string {
	if s.varName == "" {
		return s.file
	}
	return s.file + ":" + s.varName
}

// parseMatSource splits FILE.mat:VAR at the last colon after ".mat"; a
// path without such a suffix is all file.
func parseMatSource(s string) matSource {
	if i := strings.LastIndex(s, ":"); i > 0 && strings.HasSuffix(strings.ToLower(s[:i]), ".mat") && !strings.ContainsAny(s[i+1:], `/\`) {
		return matSource{file: s[:i], varName: s[i+1:]}
	}
	return matSource{file: s}
}

// image is a decoded raster, row-major and pixel-interleaved.
type image struct {
	rows, cols, bands int
	pixels            []float32
	what              string // "file:VAR" for messages and metadata
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
	ref, local, err := importGeoRef(c)
	if err != nil {
		return err
	}

	// Read and check everything before writing anything.
	start := time.Now()
	var cubeImg, labelImg *image
	if cube != "" {
		if cubeImg, err = readMatCube(c.Context, parseMatSource(cube)); err != nil {
			return err
		}
	}
	if labels != "" {
		if labelImg, err = readMatLabels(c.Context, parseMatSource(labels)); err != nil {
			return err
		}
	}
	if cubeImg != nil && labelImg != nil && (cubeImg.rows != labelImg.rows || cubeImg.cols != labelImg.cols) {
		return fmt.Errorf("%s is %dx%d pixels but %s is %dx%d (rows x cols); they must match",
			labelImg.what, labelImg.rows, labelImg.cols, cubeImg.what, cubeImg.rows, cubeImg.cols)
	}
	var labelType geo.DataType
	if labelImg != nil {
		if labelType, err = labelDataType(labelImg); err != nil {
			return err
		}
	}

	if cubeImg != nil && !cacheMaxSet(c) {
		// The cube is already in memory once; GDAL's block cache (5% of RAM
		// by default) would otherwise hold most of the output as well.
		if err := geo.SetConfig([]string{"GDAL_CACHEMAX=32"}); err != nil {
			return err
		}
	}
	readTime := time.Since(start)
	co := c.StringSlice("co")
	if cubeImg != nil {
		dt := cubeDataType(cubeImg.pixels)
		if err := writeImage(out, cubeImg, dt, ref, local, co); err != nil {
			return err
		}
		if c.Bool("verbose") {
			fmt.Fprintf(c.App.ErrWriter, "import: %s -> %s: %d rows x %d cols x %d bands, %s (read %v, total %v)\n",
				cubeImg.what, out, cubeImg.rows, cubeImg.cols, cubeImg.bands, dt, readTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		}
	}
	if labelImg != nil {
		if err := writeImage(labelsOut, labelImg, labelType, ref, local, co); err != nil {
			return err
		}
		if c.Bool("verbose") {
			fmt.Fprintf(c.App.ErrWriter, "import: %s -> %s: %d rows x %d cols, %s\n", labelImg.what, labelsOut, labelImg.rows, labelImg.cols, labelType)
		}
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

// readMatCube reads a cube: a 3-D (or 2-D) array or the Y/nRow/nCol layout.
func readMatCube(ctx context.Context, src matSource) (*image, error) {
	vars, err := matfile.Variables(src.file)
	if errors.Is(err, matfile.ErrV73) {
		return readV73(ctx, src, false)
	}
	if err != nil {
		return nil, err
	}
	img := &image{what: src.String()}
	name := src.varName
	if (name == "" || name == "Y") && matfile.IsUnmixing(vars) {
		img.what = src.file + ":Y"
		img.rows, img.cols, img.bands, img.pixels, err = matfile.ReadUnmixing(src.file)
		if err != nil {
			return nil, err
		}
		return img, nil
	}
	if name == "" {
		// Prefer the only 3-D array; otherwise let matfile pick the only
		// numeric array (or list the candidates).
		var cubes []string
		for _, v := range vars {
			if len(trimDims(v.Dims)) == 3 && !v.Complex {
				cubes = append(cubes, v.Name)
			}
		}
		if len(cubes) == 1 {
			name = cubes[0]
		} else {
			name = matfile.DefaultVariable(vars)
		}
	}
	// With name still "", ReadImage fails listing the variables.
	img.rows, img.cols, img.bands, img.pixels, err = matfile.ReadImage(src.file, name)
	if err != nil {
		return nil, err
	}
	img.what = src.file + ":" + name
	return img, nil
}

// readMatLabels reads a 2-D label map.
func readMatLabels(ctx context.Context, src matSource) (*image, error) {
	vars, err := matfile.Variables(src.file)
	if errors.Is(err, matfile.ErrV73) {
		return readV73(ctx, src, true)
	}
	if err != nil {
		return nil, err
	}
	name := src.varName
	if name == "" {
		name = matfile.DefaultVariable(vars)
	}
	img := &image{what: src.file + ":" + name}
	img.rows, img.cols, img.bands, img.pixels, err = matfile.ReadImage(src.file, name)
	if err != nil {
		return nil, err
	}
	if img.bands != 1 {
		return nil, fmt.Errorf("%s: labels are %dx%dx%d; want a 2-D label map", img.what, img.rows, img.cols, img.bands)
	}
	return img, nil
}

func trimDims(d []int) []int {
	for len(d) > 2 && d[len(d)-1] == 1 {
		d = d[:len(d)-1]
	}
	return d
}

// readV73 reads variable src.varName of a MATLAB v7.3 (HDF5) file through
// GDAL's HDF5 driver. MATLAB stores arrays column-major, so HDF5 (row-major)
// sees the dimensions reversed and GDAL shows the image transposed: GDAL's
// x is MATLAB's row, y its column; the bands stay bands.
func readV73(ctx context.Context, src matSource, labels bool) (*image, error) {
	if src.varName == "" {
		return nil, fmt.Errorf("%s is a MATLAB v7.3 (HDF5) MAT-file: name the variable as %s:VAR (gdalinfo %s lists them)", src.file, src.file, src.file)
	}
	name := fmt.Sprintf("HDF5:%q://%s", src.file, src.varName)
	sc, err := geo.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s is a MATLAB v7.3 (HDF5) MAT-file; reading it through GDAL's HDF5 driver failed: %w", src.file, err)
	}
	defer sc.Close()
	info := sc.Info()
	blk, err := sc.ReadWindow(ctx, geo.Window{Cols: info.Cols, Rows: info.Rows})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	img := &image{rows: info.Cols, cols: info.Rows, bands: info.Bands, what: src.String()}
	if labels && img.bands != 1 {
		return nil, fmt.Errorf("%s: labels have %d bands; want a 2-D label map", img.what, img.bands)
	}
	img.pixels = make([]float32, len(blk.Data))
	b := img.bands
	for r := 0; r < img.rows; r++ { // MATLAB row = GDAL column
		for c := 0; c < img.cols; c++ { // MATLAB column = GDAL row
			copy(img.pixels[(r*img.cols+c)*b:(r*img.cols+c+1)*b], blk.Data[(c*info.Cols+r)*b:(c*info.Cols+r+1)*b])
		}
	}
	return img, nil
}

// cubeDataType is Int16 or UInt16 when every value is an integer that fits,
// else Float32.
func cubeDataType(px []float32) geo.DataType {
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, v := range px {
		if v != float32(math.Trunc(float64(v))) { // false for NaN and ±Inf too
			return geo.Float32
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	switch {
	case lo >= math.MinInt16 && hi <= math.MaxInt16:
		return geo.Int16
	case lo >= 0 && hi <= math.MaxUint16:
		return geo.UInt16
	}
	return geo.Float32
}

// labelDataType is Byte, or UInt16 above 255; labels must be non-negative integers.
func labelDataType(img *image) (geo.DataType, error) {
	var hi float32
	for i, v := range img.pixels {
		if v < 0 || v > math.MaxUint16 || v != float32(math.Trunc(float64(v))) {
			return 0, fmt.Errorf("%s: pixel (row %d, col %d) is %v; labels must be integers 0..65535 (0 = unlabelled)", img.what, i/img.cols, i%img.cols, v)
		}
		hi = max(hi, v)
	}
	if hi > math.MaxUint8 {
		return geo.UInt16, nil
	}
	return geo.Byte, nil
}

// writeImage writes img to path as a GeoTIFF of type dt (atomically: geo
// writes a temporary file beside path and renames it on Commit).
func writeImage(path string, img *image, dt geo.DataType, ref geo.GeoRef, local bool, co []string) error {
	md := map[string]string{"PNEC_SOURCE": filepath.Base(img.what)}
	if local {
		md["PNEC_GRID"] = "local"
	}
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{
		Cols: img.cols, Rows: img.rows, Bands: img.bands, DataType: dt, GeoRef: ref,
		Metadata: md, CreationOptions: co,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	// Strips of whole tiles (geo writes 256x256 tiles) keep GDAL's conversion
	// buffers small.
	const stripRows = 256
	rowValues := img.cols * img.bands
	for r0 := 0; r0 < img.rows; r0 += stripRows {
		n := min(stripRows, img.rows-r0)
		if err := w.WriteWindow(geo.Window{Row: r0, Cols: img.cols, Rows: n}, img.pixels[r0*rowValues:(r0+n)*rowValues]); err != nil {
			return err
		}
	}
	if err := w.Commit(); err != nil {
		return err
	}
	return nil
}
