package geo

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCreateGeoTIFFRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.tif")
	const cols, rows, bands = 37, 21, 3
	nd := -999.0
	wkt := utm31(t)
	spec := RasterSpec{
		Cols: cols, Rows: rows, Bands: bands, DataType: Int16,
		GeoRef:        GeoRef{GeoTransform: testGT, WKT: wkt},
		NoData:        &nd,
		BandNames:     []string{"b1", "b2", "b3"},
		WavelengthsNM: []float64{450.5, 550, 2200},
		Metadata:      map[string]string{"SOURCE": "test"},
	}
	w, err := CreateGeoTIFF(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Two windows: the top 10 rows, then the rest.
	for _, win := range []Window{{Cols: cols, Rows: 10}, {Row: 10, Cols: cols, Rows: rows - 10}} {
		data := make([]float32, win.Cols*win.Rows*bands)
		for r := 0; r < win.Rows; r++ {
			for c := 0; c < win.Cols; c++ {
				for b := 0; b < bands; b++ {
					data[(r*win.Cols+c)*bands+b] = float32(pixelValue(win.Row+r, win.Col+c, b))
				}
			}
		}
		data[0] = float32(nd) // pixel (win.Row, 0) band 0 is nodata
		if err := w.WriteWindow(win, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteWindow(Window{Cols: 2, Rows: 2}, make([]float32, 5)); !errors.Is(err, ErrSize) {
		t.Errorf("short buffer: got %v, want ErrSize", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("%s exists before Commit", path)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"out.tif"}) {
		t.Errorf("directory after Commit: got %v, want [out.tif]", got)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	if in.GeoTransform != testGT || in.EPSG != 32631 || in.DataType != "Int16" {
		t.Errorf("georef: got GT %v EPSG %d type %s", in.GeoTransform, in.EPSG, in.DataType)
	}
	if !slices.Equal(in.WavelengthsNM, spec.WavelengthsNM) {
		t.Errorf("wavelengths: got %v, want %v", in.WavelengthsNM, spec.WavelengthsNM)
	}
	if !slices.Equal(in.BandNames, spec.BandNames) {
		t.Errorf("band names: got %v, want %v", in.BandNames, spec.BandNames)
	}
	if !in.HasNoData[2] || in.NoData[2] != nd {
		t.Errorf("nodata: got %v %v", in.NoData, in.HasNoData)
	}
	if in.Metadata["SOURCE"] != "test" {
		t.Errorf("metadata: got %v", in.Metadata)
	}
	blk, err := s.ReadWindow(context.Background(), Window{Cols: cols, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			p := r*cols + c
			if wantValid := !(c == 0 && (r == 0 || r == 10)); blk.Valid[p] != wantValid {
				t.Fatalf("valid (%d,%d): got %v, want %v", r, c, blk.Valid[p], wantValid)
			}
			if !blk.Valid[p] {
				continue
			}
			for b := 0; b < bands; b++ {
				if got, want := blk.Data[p*bands+b], float32(pixelValue(r, c, b)); got != want {
					t.Fatalf("(%d,%d,%d): got %v, want %v", r, c, b, got, want)
				}
			}
		}
	}
}

func TestCreateGeoTIFFLocalGridAndVSIMem(t *testing.T) {
	for _, path := range []string{filepath.Join(t.TempDir(), "local.tif"), "/vsimem/geo-test/local.tif"} {
		t.Run(path, func(t *testing.T) {
			w, err := CreateGeoTIFF(path, RasterSpec{Cols: 3, Rows: 2, Bands: 1, DataType: Float32})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WriteWindow(Window{Cols: 3, Rows: 2}, []float32{1, 2, 3, 4, 5, float32(math.NaN())}); err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Errorf("Close after Commit: %v", err)
			}
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			in := s.Info()
			if in.WKT != "" || in.EPSG != 0 || in.FootprintWGS84 != nil || in.HasGeoTransform {
				t.Errorf("local grid: got WKT %q EPSG %d footprint %v GT %v", in.WKT, in.EPSG, in.FootprintWGS84, in.HasGeoTransform)
			}
			f, err := s.ValidFraction(context.Background())
			if err != nil || f != 5.0/6 {
				t.Errorf("ValidFraction: got %v, %v, want 5/6", f, err)
			}
		})
	}
	vsiUnlink("/vsimem/geo-test/local.tif")
}

func TestCreateGeoTIFFAbandoned(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.tif")
	w, err := CreateGeoTIFF(path, RasterSpec{Cols: 4, Rows: 4, Bands: 2, DataType: Byte})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteWindow(Window{Cols: 4, Rows: 1}, make([]float32, 8)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("after Close without Commit: got files %v, want none", got)
	}
	if err := w.Commit(); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close: got %v, want ErrClosed", err)
	}
}

func TestSetConfig(t *testing.T) {
	if err := SetConfig([]string{"PNEC_TEST_OPTION=42", "GDAL_CACHEMAX=64"}); err != nil {
		t.Fatal(err)
	}
	if got := ConfigValue("PNEC_TEST_OPTION"); got != "42" {
		t.Errorf("got %q, want 42", got)
	}
	for _, bad := range []string{"NOEQUALS", "=1", " =x", "A B=1"} {
		if err := SetConfig([]string{"PNEC_TEST_OPTION=7", bad}); err == nil {
			t.Errorf("%q: got nil error", bad)
		}
	}
	if got := ConfigValue("PNEC_TEST_OPTION"); got != "42" {
		t.Errorf("a rejected list applied options: got %q, want 42", got)
	}
	if err := SetConfig([]string{"PNEC_TEST_OPTION="}); err != nil || ConfigValue("PNEC_TEST_OPTION") != "" {
		t.Errorf("empty value did not unset: %v %q", err, ConfigValue("PNEC_TEST_OPTION"))
	}
}

// TestCreateGeoTIFFBlockSize: tiles are 256 x 256, or the raster's side
// rounded up to 16 where that is smaller (a tile larger than the raster is
// decoded whole on every read); a tile size given by the caller wins.
func TestCreateGeoTIFFBlockSize(t *testing.T) {
	for _, tc := range []struct {
		rows, cols         int
		opts               []string
		wantRows, wantCols int
	}{
		{83, 86, nil, 96, 96},
		{20, 300, nil, 32, 256},
		{1000, 1000, nil, 256, 256},
		{256, 257, nil, 256, 256},
		{1000, 1000, []string{"BLOCKXSIZE=512"}, 256, 512},
		{83, 86, []string{"BLOCKYSIZE=128"}, 128, 96},
	} {
		path := filepath.Join(t.TempDir(), "s.tif")
		w, err := CreateGeoTIFF(path, RasterSpec{Cols: tc.cols, Rows: tc.rows, Bands: 2, DataType: Int16, CreationOptions: tc.opts})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		in := s.Info()
		s.Close()
		if in.BlockRows != tc.wantRows || in.BlockCols != tc.wantCols {
			t.Errorf("%dx%d raster, options %v: blocks %dx%d (rows x cols), want %dx%d", tc.rows, tc.cols, tc.opts, in.BlockRows, in.BlockCols, tc.wantRows, tc.wantCols)
		}
	}
}
