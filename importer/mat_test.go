package importer

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/matwrite"
)

func TestParseSource(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Source
	}{
		{"a.mat", Source{File: "a.mat"}},
		{"a.mat:cube", Source{File: "a.mat", Var: "cube"}},
		{"dir/A.MAT:gt", Source{File: "dir/A.MAT", Var: "gt"}},
		{"c:/data/a.mat", Source{File: "c:/data/a.mat"}}, // the colon belongs to the path
		{"x.mat:y/z", Source{File: "x.mat:y/z"}},
		{"plain.tif:band", Source{File: "plain.tif:band"}},
	} {
		if got := ParseSource(tc.in); got != tc.want {
			t.Errorf("ParseSource(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got := ParseSource(tc.in).String(); got != tc.in {
			t.Errorf("ParseSource(%q).String() = %q", tc.in, got)
		}
	}
}

func TestCubeDataType(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		px   []float32
		want geo.DataType
	}{
		{[]float32{0, -32768, 32767}, geo.Int16},
		{[]float32{0, 40000, 65535}, geo.UInt16},
		{[]float32{-1, 40000}, geo.Float32},
		{[]float32{0, 65536}, geo.Float32},
		{[]float32{0, 0.5}, geo.Float32},
		{[]float32{1, nan}, geo.Float32},
	} {
		if got := CubeDataType(tc.px); got != tc.want {
			t.Errorf("CubeDataType(%v) = %v, want %v", tc.px, got, tc.want)
		}
	}
}

func TestLabelDataType(t *testing.T) {
	for _, tc := range []struct {
		px      []float32
		want    geo.DataType
		wantErr string
	}{
		{[]float32{0, 1, 255}, geo.Byte, ""},
		{[]float32{0, 256}, geo.UInt16, ""},
		{[]float32{0, 1, 2, -1}, 0, "pixel (row 1, col 1) is -1"},
		{[]float32{0, 1.5}, 0, "pixel (row 0, col 1) is 1.5"},
		{[]float32{70000, 0}, 0, "labels must be integers 0..65535"},
	} {
		img := &Image{Rows: 2, Cols: 2, Bands: 1, Pixels: tc.px, What: "gt.mat:gt"}
		got, err := LabelDataType(img)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "gt.mat:gt")):
			t.Errorf("LabelDataType(%v): error %v, want one naming gt.mat:gt and %q", tc.px, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("LabelDataType(%v) = %v, %v; want %v", tc.px, got, err, tc.want)
		}
	}
}

func TestTransposeV73(t *testing.T) {
	// GDAL sees a MATLAB 2 x 3 x 2 array as 2 columns x 3 rows: GDAL pixel
	// (row c, col r) is MATLAB (row r, col c). Value = 100*row + 10*col + band.
	const rows, cols, bands = 2, 3, 2
	gdal := make([]float32, rows*cols*bands)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			for b := 0; b < bands; b++ {
				gdal[(c*rows+r)*bands+b] = float32(100*r + 10*c + b)
			}
		}
	}
	var want []float32
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			for b := 0; b < bands; b++ {
				want = append(want, float32(100*r+10*c+b))
			}
		}
	}
	if got := transposeV73(gdal, rows, cols, bands); !slices.Equal(got, want) {
		t.Errorf("transposeV73 = %v, want %v", got, want)
	}
}

// TestMATWritesNothingOnBadInput checks that a failing input leaves no output.
func TestMATWritesNothingOnBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "scene.tif")
	_, err := MAT(context.Background(), Request{Cube: Source{File: filepath.Join(dir, "missing.mat")}, CubeOut: out, Local: true})
	if err == nil || !strings.Contains(err.Error(), "missing.mat") {
		t.Fatalf("MAT on a missing file: %v, want an error naming it", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("files left after a failed import: %v", m)
	}
}

// TestMATRoundTrip writes a cube and labels read back through geo.
func TestMATRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cube := &Image{Rows: 3, Cols: 2, Bands: 2, Pixels: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, What: "c.mat:cube"}
	path := filepath.Join(dir, "c.tif")
	ref := geo.GeoRef{GeoTransform: [6]float64{1000, 2, 0, 5000, 0, -2}, EPSG: 32632}
	if err := WriteGeoTIFF(path, cube, CubeDataType(cube.Pixels), ref, false, nil); err != nil {
		t.Fatal(err)
	}
	sc, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	info := sc.Info()
	if info.Cols != 2 || info.Rows != 3 || info.Bands != 2 || info.DataType != "Int16" || info.EPSG != 32632 || info.GeoTransform != ref.GeoTransform {
		t.Errorf("read back %dx%dx%d %s EPSG:%d %v", info.Cols, info.Rows, info.Bands, info.DataType, info.EPSG, info.GeoTransform)
	}
	if info.Metadata["PNEC_SOURCE"] != "c.mat:cube" || info.Metadata["PNEC_GRID"] != "" {
		t.Errorf("metadata %v", info.Metadata)
	}
	blk, err := sc.ReadWindow(context.Background(), geo.Window{Cols: 2, Rows: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(blk.Data, cube.Pixels) {
		t.Errorf("pixels %v, want %v", blk.Data, cube.Pixels)
	}
}

// TestMAT imports a MAT-file holding a cube and a label map (MATLAB's
// column-major layout, as matwrite writes it) and reads both GeoTIFFs back.
func TestMAT(t *testing.T) {
	dir := t.TempDir()
	const rows, cols, bands = 3, 4, 2
	value := func(r, c, b int) float64 { return float64(100*r + 10*c + b) }
	var cube, gt []float64 // column-major: row fastest, then column, then band
	for b := 0; b < bands; b++ {
		for c := 0; c < cols; c++ {
			for r := 0; r < rows; r++ {
				cube = append(cube, value(r, c, b))
			}
		}
	}
	for c := 0; c < cols; c++ {
		for r := 0; r < rows; r++ {
			gt = append(gt, float64((r+c)%3))
		}
	}
	mat := filepath.Join(dir, "scene.mat")
	data := matwrite.Encode(false, true,
		matwrite.Var{Name: "cube", Class: matwrite.MxDOUBLE, Dims: []int{rows, cols, bands}, Type: matwrite.MiUINT16, Data: cube},
		matwrite.Var{Name: "gt", Class: matwrite.MxDOUBLE, Dims: []int{rows, cols}, Type: matwrite.MiUINT8, Data: gt})
	if err := os.WriteFile(mat, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cubeOut, labelsOut := filepath.Join(dir, "scene.tif"), filepath.Join(dir, "labels.tif")
	res, err := MAT(context.Background(), Request{
		Cube: ParseSource(mat), CubeOut: cubeOut, Labels: ParseSource(mat + ":gt"), LabelsOut: labelsOut, Local: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cube == nil || res.Cube.What != mat+":cube" || res.Cube.DataType != geo.Int16 || res.Labels == nil || res.Labels.DataType != geo.Byte {
		t.Fatalf("result %+v, cube %+v, labels %+v", res, res.Cube, res.Labels)
	}
	for _, tc := range []struct {
		path  string
		bands int
		want  func(r, c, b int) float64
	}{
		{cubeOut, bands, value},
		{labelsOut, 1, func(r, c, _ int) float64 { return float64((r + c) % 3) }},
	} {
		sc, err := geo.Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		info := sc.Info()
		blk, err := sc.ReadWindow(context.Background(), geo.Window{Cols: info.Cols, Rows: info.Rows})
		sc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if info.Rows != rows || info.Cols != cols || info.Bands != tc.bands || info.Metadata["PNEC_GRID"] != "local" {
			t.Fatalf("%s: %dx%dx%d, metadata %v", tc.path, info.Rows, info.Cols, info.Bands, info.Metadata)
		}
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				for b := 0; b < tc.bands; b++ {
					if got := blk.Data[(r*cols+c)*tc.bands+b]; float64(got) != tc.want(r, c, b) {
						t.Fatalf("%s: pixel (row %d, col %d) band %d = %v, want %v", tc.path, r, c, b, got, tc.want(r, c, b))
					}
				}
			}
		}
	}
}

// TestReadCubeUnmixingLayouts: a file of the common
// unmixing-benchmark layout (Y bands x pixels, scalars lines and cols,
// beside a 3-D abundance array and the endmembers) was read as the
// 3-band abundance array, and :Y as a 156 x 9025 raster: now several
// arrays that could be the cube are refused naming them, :Y is read as
// the lines x cols image, and a file with Y and nRow/nCol alone is read as
// before.
func TestReadCubeUnmixingLayouts(t *testing.T) {
	const rows, cols, bands, ends = 5, 4, 6, 3
	y := make([]float64, bands*rows*cols) // column-major bands x pixels, pixel p = r + rows*c
	for p := 0; p < rows*cols; p++ {
		for b := 0; b < bands; b++ {
			y[p*bands+b] = float64(100*p + b)
		}
	}
	scalar := func(name string, v float64) matwrite.Var {
		return matwrite.Var{Name: name, Class: matwrite.MxDOUBLE, Dims: []int{1, 1}, Type: matwrite.MiDOUBLE, Data: []float64{v}}
	}
	yVar := matwrite.Var{Name: "Y", Class: matwrite.MxDOUBLE, Dims: []int{bands, rows * cols}, Type: matwrite.MiDOUBLE, Data: y}
	abund := matwrite.Var{Name: "A", Class: matwrite.MxDOUBLE, Dims: []int{rows, cols, ends}, Type: matwrite.MiDOUBLE, Data: make([]float64, rows*cols*ends)}
	endm := matwrite.Var{Name: "M", Class: matwrite.MxDOUBLE, Dims: []int{bands, ends}, Type: matwrite.MiDOUBLE, Data: make([]float64, bands*ends)}
	dir := t.TempDir()
	write := func(name string, vars ...matwrite.Var) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, matwrite.Encode(false, false, vars...), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bench := write("bench.mat", yVar, scalar("lines", rows), scalar("cols", cols), abund, endm)
	if _, err := ReadCube(context.Background(), Source{File: bench}); err == nil ||
		!strings.Contains(err.Error(), "several arrays could be the cube") || !strings.Contains(err.Error(), "Y (bands x pixels with lines and cols)") || !strings.Contains(err.Error(), "A (5x4x3)") {
		t.Errorf("no variable named: %v, want a refusal naming Y and A", err)
	}
	for _, f := range []string{bench, write("plain.mat", yVar, scalar("nRow", rows), scalar("nCol", cols))} {
		src := Source{File: f, Var: "Y"}
		if f != bench {
			src.Var = "" // the only candidate
		}
		img, err := ReadCube(context.Background(), src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if img.Rows != rows || img.Cols != cols || img.Bands != bands {
			t.Fatalf("%s: read %dx%dx%d, want %dx%dx%d", src, img.Rows, img.Cols, img.Bands, rows, cols, bands)
		}
		// Pixel (r=2, c=3) is p = 2 + 5*3 = 17; band 4 holds 1704.
		if got := img.Pixels[(2*cols+3)*bands+4]; got != 1704 {
			t.Errorf("%s: pixel (2,3) band 4 = %v, want 1704", src, got)
		}
	}
}
