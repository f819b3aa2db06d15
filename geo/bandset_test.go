package geo

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/airbusgeo/godal"

	"github.com/pnec/pnec/spectral"
)

// writeENVI writes a cols x rows x bands Float32 BSQ ENVI file with
// pixelValue (band 1 holds the nodata value -9999 everywhere when
// badFirst) and the header lines extra; it returns the image path.
func writeENVI(t testing.TB, dir string, cols, rows, bands int, badFirst bool, extra string) string {
	t.Helper()
	raw := make([]byte, 0, cols*rows*bands*4)
	for b := range bands {
		for r := range rows {
			for c := range cols {
				v := float32(pixelValue(r, c, b))
				if badFirst && b == 0 {
					v = -9999
				}
				u := math.Float32bits(v)
				raw = append(raw, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
			}
		}
	}
	img := filepath.Join(dir, "cube.img")
	if err := os.WriteFile(img, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	hdr := "ENVI\nsamples = " + itoa(cols) + "\nlines = " + itoa(rows) + "\nbands = " + itoa(bands) +
		"\nheader offset = 0\nfile type = ENVI Standard\ndata type = 4\ninterleave = bsq\nbyte order = 0\n" + extra
	if err := os.WriteFile(filepath.Join(dir, "cube.hdr"), []byte(hdr), 0o644); err != nil {
		t.Fatal(err)
	}
	return img
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestOpenENVIBandSet: an ENVI header's wavelengths, widths, bad band list,
// gains and reflectance scale factor reach Info, and its rotated map info
// stays in the geotransform.
func TestOpenENVIBandSet(t *testing.T) {
	dir := t.TempDir()
	img := writeENVI(t, dir, 5, 4, 3, false,
		"map info = { UTM , 1.000 , 1.000 , 724522.127 , 4074620.759 , 5.4 , 5.4 , 11 , North , WGS-84 , units=Meters , rotation=75.0 }\n"+
			"wavelength units = Micrometers\nwavelength = { 0.4005, 0.4102, 0.42 }\nfwhm = { 0.0051, 0.0052, 0.0053 }\n"+
			"bbl = { 1, 0, 1 }\ndata ignore value = -9999\ndata gain values = {0.0001, 0.0001, 0.0001}\n"+
			"data offset values = {0, 0, 0}\nreflectance scale factor = 10000\n")
	s, err := Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	near := func(got, want []float64) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-9 {
				return false
			}
		}
		return true
	}
	if !near(in.WavelengthsNM, []float64{400.5, 410.2, 420}) || !near(in.FWHMNM, []float64{5.1, 5.2, 5.3}) {
		t.Errorf("got centres %v widths %v nm, want 400.5, 410.2, 420 and 5.1, 5.2, 5.3", in.WavelengthsNM, in.FWHMNM)
	}
	if !slices.Equal(in.BadBands, []bool{false, true, false}) {
		t.Errorf("got bad bands %v, want band 2", in.BadBands)
	}
	if in.Radiometry != (spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 1}) {
		t.Errorf("got radiometry %+v, want reflectance 0-1 (10000 x gain 1e-4)", in.Radiometry)
	}
	if in.SpectralSource == "" || in.WavelengthUnits != "Micrometers" {
		t.Errorf("got source %q units %q", in.SpectralSource, in.WavelengthUnits)
	}
	gt := in.GeoTransform
	// 5.4 m pixels turned 75 degrees: GDAL keeps the rotation terms.
	if math.Abs(math.Hypot(gt[1], gt[4])-5.4) > 1e-9 || math.Abs(gt[2]) < 1 || math.Abs(gt[4]) < 1 {
		t.Errorf("got geotransform %v, want 5.4 m pixels rotated (non-zero GT[2], GT[4])", gt)
	}
	bs := in.BandSet()
	if bs.BadCount() != 1 || !bs.HasCentres() {
		t.Errorf("got band set %s, want 3 bands with centres, 1 bad", bs.Describe())
	}
}

// TestSetBandPlan: a plan reads only its bands (a bad band full of nodata
// no longer invalidates every pixel), a matrix makes the output bands, and
// the valid fraction skips bands declared bad.
func TestSetBandPlan(t *testing.T) {
	dir := t.TempDir()
	img := writeENVI(t, dir, 6, 5, 4, true, "wavelength = {400, 410, 420, 430}\nbbl = {0, 1, 1, 1}\ndata ignore value = -9999\n")
	s, err := Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	w := Window{Col: 1, Row: 1, Cols: 4, Rows: 3}
	blk, err := s.ReadWindow(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(blk.Valid, true) || blk.Bands != 4 {
		t.Fatalf("all bands: got %d bands, valid %v; want 4 bands, every pixel invalid (band 1 is nodata)", blk.Bands, blk.Valid)
	}
	if f, err := s.ValidFraction(ctx); err != nil || f != 1 {
		t.Errorf("valid fraction %v (%v), want 1: the nodata band is declared bad", f, err)
	}
	if err := s.SetBandPlan(&spectral.Plan{Read: []int{1, 3}, Out: 2}); err != nil {
		t.Fatal(err)
	}
	blk, err = s.ReadWindow(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if blk.Bands != 2 || s.Bands() != 2 || slices.Contains(blk.Valid, false) {
		t.Fatalf("selection: got %d bands, valid %v; want 2 bands, all valid", blk.Bands, blk.Valid)
	}
	for p := range w.Cols * w.Rows {
		r, c := w.Row+p/w.Cols, w.Col+p%w.Cols
		if blk.Data[2*p] != float32(pixelValue(r, c, 1)) || blk.Data[2*p+1] != float32(pixelValue(r, c, 3)) {
			t.Fatalf("pixel (%d,%d): got %v, want bands 2 and 4", r, c, blk.Data[2*p:2*p+2])
		}
	}
	// Model band = (band 2 + band 3)/2 and band 4, times 2: into a wider buffer.
	plan := &spectral.Plan{Read: []int{1, 2, 3}, Weights: []float32{0.5, 0.5, 0, 0, 0, 1}, Out: 2, Gain: 2}
	if err := s.SetBandPlan(plan); err != nil {
		t.Fatal(err)
	}
	const rowPixels = 7
	data, valid := make([]float32, rowPixels*w.Rows*2), make([]bool, rowPixels*w.Rows)
	if err := s.ReadWindowAt(ctx, w, data, valid, rowPixels); err != nil {
		t.Fatal(err)
	}
	for r := range w.Rows {
		for c := range w.Cols {
			o := r*rowPixels + c
			sr, sc := w.Row+r, w.Col+c
			want := []float32{float32(pixelValue(sr, sc, 1) + pixelValue(sr, sc, 2)), float32(2 * pixelValue(sr, sc, 3))}
			if !valid[o] || data[2*o] != want[0] || data[2*o+1] != want[1] {
				t.Fatalf("pixel (%d,%d): got %v (valid %v), want %v", sr, sc, data[2*o:2*o+2], valid[o], want)
			}
		}
	}
	for _, bad := range []*spectral.Plan{
		{Read: []int{4}, Out: 1},
		{Read: []int{0, 1}, Out: 1},
		{Read: []int{0, 1}, Weights: []float32{1}, Out: 1},
	} {
		if err := s.SetBandPlan(bad); err == nil {
			t.Errorf("plan %+v accepted", bad)
		}
	}
	if err := s.SetBandPlan(nil); err != nil || s.Bands() != 4 {
		t.Errorf("reset: %v, %d bands", err, s.Bands())
	}
}

// TestBandPlanNativeTypes: a selection of Int16 bands reads through the
// native-type path and gets each band's own scale.
func TestBandPlanNativeTypes(t *testing.T) {
	path := writeScene(t, t.TempDir(), godal.Int16, 20, 10, 5, func(ds *godal.Dataset) {
		for i, b := range ds.Bands() {
			if err := b.SetScaleOffset(float64(i+1), 0); err != nil {
				t.Fatal(err)
			}
		}
	})
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetBandPlan(&spectral.Plan{Read: []int{4, 0}, Out: 2}); err != nil {
		t.Fatal(err)
	}
	blk, err := s.ReadWindow(context.Background(), Window{Col: 3, Row: 2, Cols: 5, Rows: 4})
	if err != nil {
		t.Fatal(err)
	}
	for p := range 20 {
		r, c := 2+p/5, 3+p%5
		if blk.Data[2*p] != float32(5*pixelValue(r, c, 4)) || blk.Data[2*p+1] != float32(pixelValue(r, c, 0)) {
			t.Fatalf("pixel (%d,%d): got %v, want band 5 x5 and band 1 x1", r, c, blk.Data[2*p:2*p+2])
		}
	}
}

// TestBandPlanStripChunks: a plan's read through a scratch of a few rows
// at a time gives what one through a whole-strip scratch does.
func TestBandPlanStripChunks(t *testing.T) {
	img := writeENVI(t, t.TempDir(), 9, 23, 4, false, "wavelength = {400, 410, 420, 430}\n")
	s, err := Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := &spectral.Plan{Read: []int{0, 2, 3}, Weights: []float32{0.25, 0.75, 0, 0, 0, 1}, Out: 2, Gain: 0.5}
	if err := s.SetBandPlan(plan); err != nil {
		t.Fatal(err)
	}
	w := Window{Col: 1, Row: 2, Cols: 7, Rows: 19}
	whole, err := s.ReadWindow(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	defer func(v int) { transformScratchBytes = v }(transformScratchBytes)
	transformScratchBytes = 2 * 7 * 3 * 4 // two rows of 7 pixels, 3 read bands
	chunked, err := s.ReadWindow(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(whole.Data, chunked.Data) || !slices.Equal(whole.Valid, chunked.Valid) {
		t.Error("a read in 2-row chunks differs from the whole strip's")
	}
	if want := float32(0.5 * (0.25*pixelValue(5, 3, 0) + 0.75*pixelValue(5, 3, 2))); chunked.Data[(3*7+2)*2] != want {
		t.Errorf("pixel (5,3): got %v, want %v", chunked.Data[(3*7+2)*2], want)
	}
}
