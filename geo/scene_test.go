package geo

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
)

func TestReadWindowDataTypes(t *testing.T) {
	const cols, rows, bands = 40, 30, 3
	win := Window{Col: 5, Row: 17, Cols: 20, Rows: 9}
	for _, dt := range []godal.DataType{godal.Byte, godal.UInt16, godal.Int16, godal.UInt32, godal.Int32, godal.Float32, godal.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			dir := t.TempDir()
			// Byte cannot hold pixelValue beyond 255: wrap the expectation as GDAL clamps.
			want := func(r, c, b int) float32 {
				v := pixelValue(r, c, b)
				if dt == godal.Byte {
					v = math.Min(v, 255)
				}
				return float32(v)
			}
			nodataAt := [2]int{20, 10} // r, c inside the window
			path := writeScene(t, dir, dt, cols, rows, bands, func(ds *godal.Dataset) {
				b := ds.Bands()[1]
				nd := float64(want(nodataAt[0], nodataAt[1], 1))
				if err := b.SetNoData(nd); err != nil {
					t.Fatal(err)
				}
			})
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Info().DataType; got != dt.String() {
				t.Errorf("DataType: got %s, want %s", got, dt)
			}
			blk, err := s.ReadWindow(context.Background(), win)
			if err != nil {
				t.Fatal(err)
			}
			if blk.Window != win || blk.Bands != bands || len(blk.Data) != win.Cols*win.Rows*bands {
				t.Fatalf("block shape: got %v x%d (%d values)", blk.Window, blk.Bands, len(blk.Data))
			}
			for r := 0; r < win.Rows; r++ {
				for c := 0; c < win.Cols; c++ {
					sr, sc := win.Row+r, win.Col+c
					p := r*win.Cols + c
					// Every pixel whose band 1 equals the nodata value is invalid.
					wantValid := want(sr, sc, 1) != want(nodataAt[0], nodataAt[1], 1)
					if blk.Valid[p] != wantValid {
						t.Fatalf("valid at scene (%d,%d): got %v, want %v", sr, sc, blk.Valid[p], wantValid)
					}
					for b := 0; b < bands; b++ {
						w := want(sr, sc, b)
						if !wantValid {
							w = 0
						}
						if got := blk.Data[p*bands+b]; got != w {
							t.Fatalf("scene (%d,%d) band %d: got %v, want %v", sr, sc, b, got, w)
						}
					}
				}
			}
			if blk.Valid[(nodataAt[0]-win.Row)*win.Cols+nodataAt[1]-win.Col] {
				t.Error("the nodata pixel is valid")
			}
		})
	}
}

func TestReadWindowNaNMaskScaleOffset(t *testing.T) {
	const cols, rows, bands = 16, 12, 2
	dir := t.TempDir()
	path := writeScene(t, dir, godal.Float32, cols, rows, bands, func(ds *godal.Dataset) {
		// NaN at (1,1) band 0, +Inf at (2,2) band 1.
		if err := ds.Bands()[0].Write(1, 1, []float32{float32(math.NaN())}, 1, 1); err != nil {
			t.Fatal(err)
		}
		if err := ds.Bands()[1].Write(2, 2, []float32{float32(math.Inf(1))}, 1, 1); err != nil {
			t.Fatal(err)
		}
		if err := ds.Bands()[1].SetScaleOffset(0.5, 10); err != nil {
			t.Fatal(err)
		}
		// Dataset mask: column 5 invalid.
		m, err := ds.CreateMaskBand(gmfPerDataset)
		if err != nil {
			t.Fatal(err)
		}
		mask := make([]byte, cols*rows)
		for i := range mask {
			if i%cols != 5 {
				mask[i] = 255
			}
		}
		if err := m.Write(0, 0, mask, cols, rows); err != nil {
			t.Fatal(err)
		}
	})
	blk := readWhole(t, path, cols, rows)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			p := r*cols + c
			wantValid := !(r == 1 && c == 1) && !(r == 2 && c == 2) && c != 5
			if blk.Valid[p] != wantValid {
				t.Errorf("valid (%d,%d): got %v, want %v", r, c, blk.Valid[p], wantValid)
			}
			if !wantValid {
				continue
			}
			if got, want := blk.Data[p*bands], float32(pixelValue(r, c, 0)); got != want {
				t.Errorf("(%d,%d) band 0: got %v, want %v", r, c, got, want)
			}
			if got, want := blk.Data[p*bands+1], float32(pixelValue(r, c, 1)*0.5+10); got != want {
				t.Errorf("(%d,%d) band 1 scaled: got %v, want %v", r, c, got, want)
			}
		}
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	frac, err := s.ValidFraction(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(cols*rows-rows-2) / float64(cols*rows); math.Abs(frac-want) > 1e-12 {
		t.Errorf("ValidFraction: got %v, want %v", frac, want)
	}
}

func TestReadWindowOutside(t *testing.T) {
	path := writeScene(t, t.TempDir(), godal.Int16, 10, 8, 1, nil)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, w := range []Window{{Col: 5, Row: 0, Cols: 6, Rows: 1}, {Col: -1, Cols: 2, Rows: 2}, {Cols: 0, Rows: 3}, {Row: 7, Cols: 1, Rows: 2}} {
		if _, err := s.ReadWindow(context.Background(), w); !errors.Is(err, ErrWindow) {
			t.Errorf("window %v: got error %v, want ErrWindow", w, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ReadWindow(ctx, Window{Cols: 1, Rows: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
}

// countingReader serves one in-memory file to GDAL through a godal VSI
// handler and counts the bytes GDAL asks for.
type countingReader struct {
	data []byte
	read atomic.Int64
}

func (c *countingReader) Size(string) (int64, error) { return int64(len(c.data)), nil }
func (c *countingReader) ReadAt(key string, p []byte, off int64) (int, error) {
	if off >= int64(len(c.data)) {
		return 0, io.EOF
	}
	n := copy(p, c.data[off:])
	c.read.Add(int64(n))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestReadWindowReadsOnlyItsBlocks(t *testing.T) {
	// A 512x512x4 Int16 tiled scene (2 MiB); a 16x16 window lies in one 16x16 tile.
	path := writeScene(t, t.TempDir(), godal.Int16, 512, 512, 4, nil)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{data: data}
	if err := godal.RegisterVSIHandler("/vsipnectest/", cr, godal.VSIHandlerBufferSize(0)); err != nil {
		t.Fatal(err)
	}
	s, err := Open("/vsipnectest/scene.tif")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := cr.read.Load()
	blk, err := s.ReadWindow(context.Background(), Window{Col: 256, Row: 256, Cols: 16, Rows: 16})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := blk.Data[0], float32(pixelValue(256, 256, 0)); got != want {
		t.Errorf("first value: got %v, want %v", got, want)
	}
	readBytes := cr.read.Load() - before
	// One tile is 16*16*4*2 = 2 KiB uncompressed; allow the tile index and slack,
	// but far less than the 2 MiB file.
	if readBytes > 64<<10 || readBytes > int64(len(data))/16 {
		t.Errorf("reading a 16x16 window read %d bytes of a %d-byte file", readBytes, len(data))
	}
	t.Logf("16x16 window: %d bytes read of %d", readBytes, len(data))
}

func TestOpenComplexBand(t *testing.T) {
	dir := t.TempDir()
	src := writeScene(t, dir, godal.Float32, 4, 4, 1, nil)
	vrt := filepath.Join(dir, "scene.vrt")
	var b strings.Builder
	b.WriteString(`<VRTDataset rasterXSize="4" rasterYSize="4">`)
	for i, typ := range []string{"Float32", "Float32", "CFloat32"} {
		fmt.Fprintf(&b, `<VRTRasterBand dataType="%s" band="%d"><SimpleSource><SourceFilename relativeToVRT="0">%s</SourceFilename><SourceBand>1</SourceBand></SimpleSource></VRTRasterBand>`, typ, i+1, src)
	}
	b.WriteString(`</VRTDataset>`)
	if err := os.WriteFile(vrt, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(vrt)
	if !errors.Is(err, ErrDataType) {
		t.Fatalf("got %v, want ErrDataType", err)
	}
	want := vrt + ": band 3 has data type CFloat32; expected a real type"
	if err.Error() != want {
		t.Errorf("message: got %q, want %q", err, want)
	}
}

func TestOpenMissing(t *testing.T) {
	name := filepath.Join(t.TempDir(), "nope.tif")
	_, err := Open(name)
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("got %v, want an error naming %s", err, name)
	}
	var ge *GDALError
	if !errors.As(err, &ge) {
		t.Errorf("got %T, want a *GDALError inside", err)
	}
}

func TestOpenENVIWavelengths(t *testing.T) {
	dir := t.TempDir()
	const cols, rows, bands = 5, 4, 3
	raw := make([]byte, cols*rows*bands*2) // BSQ int16 little-endian
	for b := 0; b < bands; b++ {
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				v := int16(pixelValue(r, c, b))
				i := ((b*rows+r)*cols + c) * 2
				raw[i], raw[i+1] = byte(v), byte(v>>8)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cube.img"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	hdr := "ENVI\nsamples = 5\nlines = 4\nbands = 3\nheader offset = 0\nfile type = ENVI Standard\n" +
		"data type = 2\ninterleave = bsq\nbyte order = 0\nwavelength units = Micrometers\n" +
		"band names = {blue, green, red}\nwavelength = { 0.45, 0.55,\n 0.65}\nacquisition time = 2024-06-01T10:30:00Z\n"
	if err := os.WriteFile(filepath.Join(dir, "cube.hdr"), []byte(hdr), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "cube.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	if in.Driver != "ENVI" {
		t.Errorf("driver: got %s, want ENVI", in.Driver)
	}
	want := []float64{450, 550, 650}
	if len(in.WavelengthsNM) != 3 {
		t.Fatalf("wavelengths: got %v, want %v", in.WavelengthsNM, want)
	}
	for i := range want {
		if math.Abs(in.WavelengthsNM[i]-want[i]) > 1e-9 {
			t.Errorf("wavelength %d: got %v nm, want %v", i, in.WavelengthsNM[i], want[i])
		}
	}
	if !strings.HasPrefix(in.BandNames[2], "red") {
		t.Errorf("band names: got %q", in.BandNames)
	}
	// The header's acquisition time, for the products' STAC datetime.
	if got := in.Metadata[MetaENVIAcquisitionTime]; got != "2024-06-01T10:30:00Z" {
		t.Errorf("ENVI acquisition time: got %q", got)
	}
	blk, err := s.ReadWindow(context.Background(), Window{Col: 1, Row: 2, Cols: 2, Rows: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := blk.Data[1*bands+2], float32(pixelValue(2, 2, 2)); got != want {
		t.Errorf("ENVI pixel: got %v, want %v", got, want)
	}
}

func TestOpenVRTAndZip(t *testing.T) {
	dir := t.TempDir()
	src := writeScene(t, dir, godal.UInt16, 20, 10, 2, nil)
	vrt := filepath.Join(dir, "sub.vrt")
	// A VRT that shows band 2 of src, shifted: VRT pixel (c, r) is src (c+3, r+1).
	xml := fmt.Sprintf(`<VRTDataset rasterXSize="8" rasterYSize="5"><VRTRasterBand dataType="UInt16" band="1"><SimpleSource>`+
		`<SourceFilename relativeToVRT="0">%s</SourceFilename><SourceBand>2</SourceBand>`+
		`<SrcRect xOff="3" yOff="1" xSize="8" ySize="5"/><DstRect xOff="0" yOff="0" xSize="8" ySize="5"/></SimpleSource></VRTRasterBand></VRTDataset>`, src)
	if err := os.WriteFile(vrt, []byte(xml), 0o644); err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(dir, "scene.zip")
	zf, err := os.Create(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	w, err := zw.Create("inner/scene.tif")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zf.Close()

	tests := []struct {
		name     string
		ds       string
		win      Window
		wantBand int // band of src
		dr, dc   int // offset of the window in src
	}{
		{"vrt", vrt, Window{Col: 2, Row: 1, Cols: 3, Rows: 2}, 1, 1, 3},
		{"vsizip", "/vsizip/" + zipPath + "/inner/scene.tif", Window{Col: 4, Row: 3, Cols: 5, Rows: 4}, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.ds)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			blk, err := s.ReadWindow(context.Background(), tc.win)
			if err != nil {
				t.Fatal(err)
			}
			nb := blk.Bands
			for r := 0; r < tc.win.Rows; r++ {
				for c := 0; c < tc.win.Cols; c++ {
					got := blk.Data[(r*tc.win.Cols+c)*nb+0]
					want := float32(pixelValue(tc.win.Row+r+tc.dr, tc.win.Col+c+tc.dc, tc.wantBand))
					if got != want {
						t.Fatalf("(%d,%d): got %v, want %v", r, c, got, want)
					}
				}
			}
		})
	}
}

func TestInfoGeoref(t *testing.T) {
	path := writeScene(t, t.TempDir(), godal.Int16, 100, 50, 2, nil)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	if in.Cols != 100 || in.Rows != 50 || in.Bands != 2 {
		t.Errorf("size: got %dx%dx%d, want 100x50x2", in.Cols, in.Rows, in.Bands)
	}
	if in.EPSG != 32631 {
		t.Errorf("EPSG: got %d, want 32631", in.EPSG)
	}
	if in.GeoTransform != testGT || !in.HasGeoTransform {
		t.Errorf("geotransform: got %v (%v), want %v", in.GeoTransform, in.HasGeoTransform, testGT)
	}
	if len(in.FootprintWGS84) != 1 || len(in.FootprintWGS84[0]) < 5 {
		t.Fatalf("footprint: got %v", in.FootprintWGS84)
	}
	// UTM 31N x=570000 m, y=4830000 m is about 3.87 E, 43.62 N; the scene is 1 km x 500 m.
	b := in.FootprintWGS84.Bound()
	if b.Min[0] < 3.8 || b.Max[0] > 3.95 || b.Min[1] < 43.55 || b.Max[1] > 43.65 {
		t.Errorf("footprint bounds (x=lon, y=lat): got %v, want within lon 3.8..3.95, lat 43.55..43.65", b)
	}
	if w := b.Max[0] - b.Min[0]; math.Abs(w-1000.0/(111320*math.Cos(43.62*math.Pi/180))) > 1e-3 {
		t.Errorf("footprint width: got %v degrees, want about 1 km", w)
	}
}

func TestOpenSubdatasets(t *testing.T) {
	if _, ok := godal.RasterDriver("GPKG"); !ok {
		t.Skip("this GDAL has no GPKG driver")
	}
	dir := t.TempDir()
	src := writeScene(t, dir, godal.Byte, 6, 4, 1, nil)
	gpkg := filepath.Join(dir, "two.gpkg")
	ds, err := godal.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	// Two raster tables in one GeoPackage make it a container of subdatasets,
	// as HDF5 and netCDF files with several variables are.
	for i, opts := range [][]string{{"-co", "RASTER_TABLE=first"}, {"-co", "RASTER_TABLE=second", "-co", "APPEND_SUBDATASET=YES"}} {
		out, err := ds.Translate(gpkg, append([]string{"-of", "GPKG"}, opts...))
		if err != nil {
			t.Fatalf("write table %d: %v", i, err)
		}
		out.Close()
	}
	_, err = Open(gpkg)
	if !errors.Is(err, ErrNoBands) || !strings.Contains(err.Error(), "GPKG:"+gpkg+":second") {
		t.Fatalf("container: got %v, want ErrNoBands listing the subdatasets", err)
	}
	s, err := Open("GPKG:" + gpkg + ":second")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	blk, err := s.ReadWindow(context.Background(), Window{Col: 1, Row: 2, Cols: 2, Rows: 1})
	if err != nil {
		t.Fatal(err)
	}
	// GPKG rasters are RGBA: band 1 holds the source's band.
	if got, want := blk.Data[blk.Bands], float32(pixelValue(2, 2, 0)); got != want {
		t.Errorf("subdataset pixel: got %v, want %v", got, want)
	}
}

// TestReadWindowIntoReusesBuffers: integer bands without nodata (the fast
// path: read as their own type, every pixel valid, scale applied while
// reading) read into a recycled, dirty buffer give exactly what a fresh
// ReadWindow gives, and a buffer too short for the window is replaced.
func TestReadWindowIntoReusesBuffers(t *testing.T) {
	const cols, rows, bands = 40, 30, 5
	win := Window{Col: 3, Row: 11, Cols: 21, Rows: 17}
	for _, dt := range []godal.DataType{godal.Byte, godal.UInt16, godal.Int16, godal.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			path := writeScene(t, t.TempDir(), dt, cols, rows, bands, func(ds *godal.Dataset) {
				if err := ds.Bands()[2].SetScaleOffset(0.5, 10); err != nil {
					t.Fatal(err)
				}
			})
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			dirty := make([]float32, win.Cols*win.Rows*bands+100)
			for i := range dirty {
				dirty[i] = 7
			}
			dirtyValid := make([]bool, win.Cols*win.Rows)
			got, err := s.ReadWindowInto(ctx, win, dirty, dirtyValid)
			if err != nil {
				t.Fatal(err)
			}
			if &got.Data[0] != &dirty[0] || &got.Valid[0] != &dirtyValid[0] {
				t.Error("a buffer long enough was not reused")
			}
			if len(got.Data) != win.Cols*win.Rows*bands {
				t.Fatalf("got %d values, want %d", len(got.Data), win.Cols*win.Rows*bands)
			}
			for r := 0; r < win.Rows; r++ {
				for c := 0; c < win.Cols; c++ {
					p := r*win.Cols + c
					if !got.Valid[p] {
						t.Fatalf("pixel (%d,%d) invalid", r, c)
					}
					for b := 0; b < bands; b++ {
						v := pixelValue(win.Row+r, win.Col+c, b)
						if dt == godal.Byte {
							v = math.Min(v, 255)
						}
						if b == 2 {
							v = v*0.5 + 10
						}
						if g := got.Data[p*bands+b]; g != float32(v) {
							t.Fatalf("(%d,%d) band %d: got %v, want %v", r, c, b, g, v)
						}
					}
				}
			}
			short := make([]float32, 10)
			again, err := s.ReadWindowInto(ctx, win, short, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(again.Data, got.Data) || !slices.Equal(again.Valid, got.Valid) {
				t.Error("a read into new buffers differs from the read into recycled ones")
			}
		})
	}
}

// TestReadWindowAtAssemblesParts: a window read as two column ranges into
// one wider buffer (ReadWindowAt with a row width) equals the window read
// at once, for the integer fast path and for a Float32 scene with NaN,
// nodata, a dataset mask and a scale; the pixels outside the parts are
// left alone.
func TestReadWindowAtAssemblesParts(t *testing.T) {
	const cols, rows, bands = 37, 29, 6
	for _, tc := range []struct {
		name string
		dt   godal.DataType
		prep func(ds *godal.Dataset)
	}{
		{"Int16 fast path", godal.Int16, nil},
		{"Float32 NaN nodata mask scale", godal.Float32, func(ds *godal.Dataset) {
			if err := ds.Bands()[0].Write(4, 7, []float32{float32(math.NaN())}, 1, 1); err != nil {
				t.Fatal(err)
			}
			if err := ds.Bands()[3].SetNoData(pixelValue(9, 20, 3)); err != nil {
				t.Fatal(err)
			}
			if err := ds.Bands()[2].SetScaleOffset(0.25, -3); err != nil {
				t.Fatal(err)
			}
			m, err := ds.CreateMaskBand(gmfPerDataset)
			if err != nil {
				t.Fatal(err)
			}
			mask := make([]byte, cols*rows)
			for i := range mask {
				if i%cols != 12 {
					mask[i] = 255
				}
			}
			if err := m.Write(0, 0, mask, cols, rows); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeScene(t, t.TempDir(), tc.dt, cols, rows, bands, tc.prep)
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			win := Window{Col: 2, Row: 3, Cols: 31, Rows: 24}
			whole, err := s.ReadWindow(ctx, win)
			if err != nil {
				t.Fatal(err)
			}
			// A buffer 3 pixels wider than the window, the window at column 1.
			const wide, at = 34, 1
			data := make([]float32, win.Rows*wide*bands)
			valid := make([]bool, win.Rows*wide)
			for i := range data {
				data[i] = -99
			}
			split := 13
			left := Window{Col: win.Col, Row: win.Row, Cols: split, Rows: win.Rows}
			right := Window{Col: win.Col + split, Row: win.Row, Cols: win.Cols - split, Rows: win.Rows}
			if err := s.ReadWindowAt(ctx, right, data[(at+split)*bands:], valid[at+split:], wide); err != nil {
				t.Fatal(err)
			}
			if err := s.ReadWindowAt(ctx, left, data[at*bands:], valid[at:], wide); err != nil {
				t.Fatal(err)
			}
			invalid := 0
			for r := 0; r < win.Rows; r++ {
				for c := 0; c < wide; c++ {
					px := data[(r*wide+c)*bands : (r*wide+c+1)*bands]
					if c < at || c >= at+win.Cols {
						if px[0] != -99 || valid[r*wide+c] {
							t.Fatalf("pixel (%d,%d) outside the parts was written", r, c)
						}
						continue
					}
					i := r*win.Cols + c - at
					if valid[r*wide+c] != whole.Valid[i] || !slices.Equal(px, whole.Data[i*bands:(i+1)*bands]) {
						t.Fatalf("pixel (%d,%d): parts %v %v, whole %v %v", r, c, valid[r*wide+c], px, whole.Valid[i], whole.Data[i*bands:(i+1)*bands])
					}
					if !whole.Valid[i] {
						invalid++
					}
				}
			}
			if tc.prep != nil && invalid < win.Rows {
				t.Errorf("%d invalid pixels: the NaN, nodata and masked column did not all show", invalid)
			}
			if err := s.ReadWindowAt(ctx, win, data, valid[:10], wide); err == nil {
				t.Error("a buffer too small for the window was accepted")
			}
		})
	}
}

// TestOpenRefusesNonRegular: a FIFO (GDAL would block on it forever) and a
// character device are refused at once with ErrNotRegular.
func TestOpenRefusesNonRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.tif")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for name, want := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device"} {
		done := make(chan error, 1)
		go func() { _, err := Open(name); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
				t.Errorf("Open(%s) = %v, want ErrNotRegular naming it and %q", name, err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("Open(%s) still blocked after 30 s", name)
		}
	}
}

// TestReadWindowOutOfRangeValues: Float32 values near
// the type's maximum (3e38), or beyond MaxPixelMagnitude once scaled, are
// no-data like NaN and Inf: they were valid, and gave classes with a
// no-data reliability and a drift brightness ratio of 2.3e33.
func TestReadWindowOutOfRangeValues(t *testing.T) {
	const cols, rows, bands = 8, 6, 2
	path := writeScene(t, t.TempDir(), godal.Float32, cols, rows, bands, func(ds *godal.Dataset) {
		for _, w := range []struct {
			band, c, r int
			v          float32
		}{{0, 1, 1, 3e38}, {0, 2, 2, -3.4e38}, {1, 3, 3, 2e15}, {1, 4, 4, 1e14}} {
			if err := ds.Bands()[w.band].Write(w.c, w.r, []float32{w.v}, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := ds.Bands()[1].SetScaleOffset(100, 0); err != nil { // 1e14 -> 1e16 once scaled
			t.Fatal(err)
		}
	})
	blk := readWhole(t, path, cols, rows)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			p := r*cols + c
			want := !(r == c && r >= 1 && r <= 4)
			if blk.Valid[p] != want {
				t.Errorf("valid (%d,%d): got %v, want %v", r, c, blk.Valid[p], want)
			}
		}
	}
}
