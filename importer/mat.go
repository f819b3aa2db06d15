package importer

import (
	"context"
	"errors"
	"fmt"
	"github.com/pnec/pnec/internal/regular"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/resources"
	"github.com/pnec/pnec/matfile"
)

// Source is one "FILE.mat[:VAR]" argument: a MAT-file and, optionally, the
// variable to read.
type Source struct{ File, Var string }

func (s Source) String() string {
	if s.Var == "" {
		return s.File
	}
	return s.File + ":" + s.Var
}

// ParseSource splits FILE.mat:VAR at the last colon after ".mat"; a path
// without such a suffix is all file.
func ParseSource(s string) Source {
	if i := strings.LastIndex(s, ":"); i > 0 && strings.HasSuffix(strings.ToLower(s[:i]), ".mat") && !strings.ContainsAny(s[i+1:], `/\`) {
		return Source{File: s[:i], Var: s[i+1:]}
	}
	return Source{File: s}
}

// Image is a decoded raster, row-major and pixel-interleaved.
type Image struct {
	Rows, Cols, Bands int
	Pixels            []float32
	What              string // "file:VAR" for messages and metadata
}

// Request says what MAT imports: a cube, a label map or both (a zero Source
// is none), where to write them and how to georeference them.
type Request struct {
	Cube      Source
	CubeOut   string // GeoTIFF path for the cube
	Labels    Source
	LabelsOut string // GeoTIFF path for the labels
	// GeoRef places the outputs; with Local set they are a local pixel grid
	// instead (no geotransform, no CRS, metadata PNEC_GRID=local).
	GeoRef geo.GeoRef
	Local  bool
	// CreationOptions are extra GTiff creation options (KEY=VALUE).
	CreationOptions []string
	// LimitCache sets GDAL's block cache to 32 MiB before a cube is written
	// (resources.LimitCacheForMemoryWrite): the cube is already in memory
	// once, and GDAL's default cache (5% of RAM) would otherwise hold most
	// of the output as well. Callers leave it false when the user chose
	// GDAL_CACHEMAX.
	LimitCache bool
}

// Written describes one GeoTIFF MAT wrote.
type Written struct {
	What, Path        string // source "file:VAR" and output path
	Rows, Cols, Bands int
	DataType          geo.DataType
}

// Result is what MAT wrote; Cube or Labels is nil when not requested.
type Result struct {
	Cube, Labels *Written
	// Read is the time spent reading and checking the inputs; CubeDone the
	// time from the start until the cube was written.
	Read, CubeDone time.Duration
}

// MAT reads and checks every input before it writes anything, then writes
// the cube and the labels. Each output appears atomically or not at all.
func MAT(ctx context.Context, req Request) (Result, error) {
	var res Result
	start := time.Now()
	var cube, labels *Image
	var err error
	if req.Cube != (Source{}) {
		if cube, err = ReadCube(ctx, req.Cube); err != nil {
			return res, err
		}
	}
	if req.Labels != (Source{}) {
		if labels, err = ReadLabels(ctx, req.Labels); err != nil {
			return res, err
		}
	}
	if cube != nil && labels != nil && (cube.Rows != labels.Rows || cube.Cols != labels.Cols) {
		return res, fmt.Errorf("%s is %dx%d pixels but %s is %dx%d (rows x cols); they must match",
			labels.What, labels.Rows, labels.Cols, cube.What, cube.Rows, cube.Cols)
	}
	var labelType geo.DataType
	if labels != nil {
		if labelType, err = LabelDataType(labels); err != nil {
			return res, err
		}
	}
	if cube != nil && req.LimitCache {
		resources.LimitCacheForMemoryWrite(geo.Knobs{})
	}
	res.Read = time.Since(start)
	if cube != nil {
		dt := CubeDataType(cube.Pixels)
		if err := WriteGeoTIFF(req.CubeOut, cube, dt, req.GeoRef, req.Local, req.CreationOptions); err != nil {
			return res, err
		}
		res.Cube = &Written{What: cube.What, Path: req.CubeOut, Rows: cube.Rows, Cols: cube.Cols, Bands: cube.Bands, DataType: dt}
		res.CubeDone = time.Since(start)
	}
	if labels != nil {
		if err := WriteGeoTIFF(req.LabelsOut, labels, labelType, req.GeoRef, req.Local, req.CreationOptions); err != nil {
			return res, err
		}
		res.Labels = &Written{What: labels.What, Path: req.LabelsOut, Rows: labels.Rows, Cols: labels.Cols, Bands: labels.Bands, DataType: labelType}
	}
	return res, nil
}

// ReadCube reads a cube: a 3-D (or 2-D) array or the unmixing layout Y
// (bands x pixels) with scalars nRow and nCol. Without a variable name the
// file's only 3-D array is taken, or its only numeric array.
func ReadCube(ctx context.Context, src Source) (*Image, error) {
	if err := regular.Check(src.File); err != nil { // a FIFO would block the reader
		return nil, err
	}
	vars, err := matfile.Variables(src.File)
	if errors.Is(err, matfile.ErrV73) {
		return readV73(ctx, src, false)
	}
	if err != nil {
		return nil, err
	}
	img := &Image{What: src.String()}
	name := src.Var
	if name == "" {
		if name, err = cubeVariable(src.File, vars); err != nil {
			return nil, err
		}
	}
	if name == "Y" && matfile.IsUnmixing(vars) {
		img.What = src.File + ":Y"
		img.Rows, img.Cols, img.Bands, img.Pixels, err = matfile.ReadUnmixing(src.File)
		if err != nil {
			return nil, err
		}
		return img, nil
	}
	// With name still "", ReadImage fails listing the variables.
	img.Rows, img.Cols, img.Bands, img.Pixels, err = matfile.ReadImage(src.File, name)
	if err != nil {
		return nil, err
	}
	img.What = src.File + ":" + name
	return img, nil
}

// cubeVariable is the variable a cube is read from when none is named: the
// only array that could be one, Y of the unmixing layout (bands x pixels
// beside nRow/nCol or lines/cols) or a 3-D array, else matfile's only
// numeric array ("" when there is none, for ReadImage to list the
// variables). Several that could be the cube are refused naming them: an
// unmixing benchmark's 3-D abundance array beside its Y was taken for the
// cube.
func cubeVariable(file string, vars []matfile.VarInfo) (string, error) {
	var cubes []string
	if rowVar, colVar, ok := matfile.UnmixingSize(vars); ok {
		cubes = append(cubes, fmt.Sprintf("Y (bands x pixels with %s and %s)", rowVar, colVar))
	}
	for _, v := range vars {
		if len(trimDims(v.Dims)) == 3 && !v.Complex {
			cubes = append(cubes, fmt.Sprintf("%s (%s)", v.Name, dimsText(v.Dims)))
		}
	}
	switch {
	case len(cubes) > 1:
		return "", fmt.Errorf("%s: several arrays could be the cube: %s; name one as %s:VAR", file, strings.Join(cubes, ", "), file)
	case len(cubes) == 1:
		name, _, _ := strings.Cut(cubes[0], " ")
		return name, nil
	}
	return matfile.DefaultVariable(vars), nil
}

// dimsText is an array's dimensions as MATLAB prints them (100x100x3).
func dimsText(d []int) string {
	s := make([]string, len(d))
	for i, v := range d {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, "x")
}

// ReadLabels reads a 2-D label map; without a variable name, the file's
// only numeric array.
func ReadLabels(ctx context.Context, src Source) (*Image, error) {
	if err := regular.Check(src.File); err != nil { // a FIFO would block the reader
		return nil, err
	}
	vars, err := matfile.Variables(src.File)
	if errors.Is(err, matfile.ErrV73) {
		return readV73(ctx, src, true)
	}
	if err != nil {
		return nil, err
	}
	name := src.Var
	if name == "" {
		name = matfile.DefaultVariable(vars)
	}
	img := &Image{What: src.File + ":" + name}
	img.Rows, img.Cols, img.Bands, img.Pixels, err = matfile.ReadImage(src.File, name)
	if err != nil {
		return nil, err
	}
	if img.Bands != 1 {
		return nil, fmt.Errorf("%s: labels are %dx%dx%d; want a 2-D label map", img.What, img.Rows, img.Cols, img.Bands)
	}
	return img, nil
}

func trimDims(d []int) []int {
	for len(d) > 2 && d[len(d)-1] == 1 {
		d = d[:len(d)-1]
	}
	return d
}

// readV73 reads variable src.Var of a MATLAB v7.3 (HDF5) file through
// GDAL's HDF5 driver. MATLAB stores arrays column-major, so HDF5 (row-major)
// sees the dimensions reversed and GDAL shows the image transposed: GDAL's
// x is MATLAB's row, y its column; the bands stay bands.
func readV73(ctx context.Context, src Source, labels bool) (*Image, error) {
	if src.Var == "" {
		return nil, fmt.Errorf("%s is a MATLAB v7.3 (HDF5) MAT-file: name the variable as %s:VAR (gdalinfo %s lists them)", src.File, src.File, src.File)
	}
	name := fmt.Sprintf("HDF5:%q://%s", src.File, src.Var)
	sc, err := geo.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s is a MATLAB v7.3 (HDF5) MAT-file; reading it through GDAL's HDF5 driver failed: %w", src.File, err)
	}
	defer sc.Close()
	info := sc.Info()
	blk, err := sc.ReadWindow(ctx, geo.Window{Cols: info.Cols, Rows: info.Rows})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	img := &Image{Rows: info.Cols, Cols: info.Rows, Bands: info.Bands, What: src.String()}
	if labels && img.Bands != 1 {
		return nil, fmt.Errorf("%s: labels have %d bands; want a 2-D label map", img.What, img.Bands)
	}
	img.Pixels = transposeV73(blk.Data, img.Rows, img.Cols, img.Bands)
	return img, nil
}

// transposeV73 turns GDAL's view of a v7.3 array (gdalRows = MATLAB
// columns, gdalCols = MATLAB rows, pixel-interleaved) into MATLAB's rows x
// cols order, pixel-interleaved.
func transposeV73(data []float32, rows, cols, bands int) []float32 {
	out := make([]float32, len(data))
	for r := 0; r < rows; r++ { // MATLAB row = GDAL column
		for c := 0; c < cols; c++ { // MATLAB column = GDAL row
			copy(out[(r*cols+c)*bands:(r*cols+c+1)*bands], data[(c*rows+r)*bands:(c*rows+r+1)*bands])
		}
	}
	return out
}

// CubeDataType is Int16 or UInt16 when every value is an integer that
// fits, else Float32.
func CubeDataType(px []float32) geo.DataType {
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

// LabelDataType is Byte, or UInt16 above 255; labels must be non-negative
// integers.
func LabelDataType(img *Image) (geo.DataType, error) {
	var hi float32
	for i, v := range img.Pixels {
		if v < 0 || v > math.MaxUint16 || v != float32(math.Trunc(float64(v))) {
			return 0, fmt.Errorf("%s: pixel (row %d, col %d) is %v; labels must be integers 0..65535 (0 = unlabelled)", img.What, i/img.Cols, i%img.Cols, v)
		}
		hi = max(hi, v)
	}
	if hi > math.MaxUint8 {
		return geo.UInt16, nil
	}
	return geo.Byte, nil
}

// WriteGeoTIFF writes img to path as a GeoTIFF of type dt, atomically (geo
// writes a temporary file beside path and renames it on Commit). The
// metadata item PNEC_SOURCE names the source; PNEC_GRID=local marks a local
// pixel grid.
func WriteGeoTIFF(path string, img *Image, dt geo.DataType, ref geo.GeoRef, local bool, co []string) error {
	md := map[string]string{"PNEC_SOURCE": filepath.Base(img.What)}
	if local {
		md["PNEC_GRID"] = "local"
	}
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{
		Cols: img.Cols, Rows: img.Rows, Bands: img.Bands, DataType: dt, GeoRef: ref,
		Metadata: md, CreationOptions: co,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	// Strips of whole tiles (geo writes 256x256 tiles) keep GDAL's conversion
	// buffers small.
	const stripRows = 256
	rowValues := img.Cols * img.Bands
	for r0 := 0; r0 < img.Rows; r0 += stripRows {
		n := min(stripRows, img.Rows-r0)
		if err := w.WriteWindow(geo.Window{Row: r0, Cols: img.Cols, Rows: n}, img.Pixels[r0*rowValues:(r0+n)*rowValues]); err != nil {
			return err
		}
	}
	return w.Commit()
}
