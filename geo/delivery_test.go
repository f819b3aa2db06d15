package geo_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/sensors"
	"github.com/pnec/pnec/spectral"
)

// checkDelivery checks the Info pnec reads of a sensor fixture: product,
// band set, radiometry, georeference and size.
func checkDelivery(t *testing.T, in geo.Info, d fixture.Delivery, product string) {
	t.Helper()
	if in.Product != product || in.Cols != fixture.Cols || in.Rows != fixture.Rows || in.Bands != len(d.CentresNM) {
		t.Errorf("got %s %dx%dx%d, want %s %dx%dx%d", in.Product, in.Cols, in.Rows, in.Bands, product, fixture.Cols, fixture.Rows, len(d.CentresNM))
	}
	near := func(a, b []float64, tol float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > tol {
				return false
			}
		}
		return true
	}
	if !near(in.WavelengthsNM, d.CentresNM, 1e-3) || !near(in.FWHMNM, d.FWHMNM, 1e-3) {
		t.Errorf("band set: got centres %v..., widths %v...", in.WavelengthsNM[:min(3, len(in.WavelengthsNM))], in.FWHMNM[:min(3, len(in.FWHMNM))])
	}
	wantBad := d.Bad
	if !slices.Contains(wantBad, true) {
		wantBad = nil
	}
	if !slices.Equal(in.BadBands, wantBad) {
		t.Errorf("bad bands: got %d, want %d", in.BandSet().BadCount(), spectral.BandSet{Bands: len(d.Bad), Bad: d.Bad}.BadCount())
	}
	if in.Radiometry != (spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 1}) {
		t.Errorf("radiometry: got %+v, want reflectance 0-1", in.Radiometry)
	}
	if in.GeoTransform != d.GeoRef.GeoTransform || in.EPSG != d.GeoRef.EPSG {
		t.Errorf("georeference: got %v EPSG:%d, want %v EPSG:%d", in.GeoTransform, in.EPSG, d.GeoRef.GeoTransform, d.GeoRef.EPSG)
	}
}

// checkReflectance reads the whole delivery and checks each valid pixel's
// good bands against the fixture's spectra (noise sigma 40/10000).
func checkReflectance(t *testing.T, s *geo.Scene, d fixture.Delivery) {
	t.Helper()
	good := s.Info().BandSet().Good()
	if err := s.SetBandPlan(&spectral.Plan{Read: good, Out: len(good)}); err != nil {
		t.Fatal(err)
	}
	blk, err := s.ReadWindow(context.Background(), geo.Window{Cols: fixture.Cols, Rows: fixture.Rows})
	if err != nil {
		t.Fatal(err)
	}
	valid := 0
	for p, ok := range blk.Valid {
		if !ok {
			continue
		}
		valid++
		for k, b := range good {
			want := fixture.Reflectance(int(d.Classes[p]), d.CentresNM[b], 0)
			if got := float64(blk.Data[p*len(good)+k]); math.Abs(got-want) > 0.025 {
				t.Fatalf("pixel %d band %d (%g nm): got %.4f, want %.4f +- noise", p, b+1, d.CentresNM[b], got, want)
			}
		}
	}
	if valid == 0 {
		t.Fatal("no valid pixel")
	}
	if err := s.SetBandPlan(nil); err != nil {
		t.Fatal(err)
	}
}

func TestOpenEnMAP(t *testing.T) {
	dir := t.TempDir()
	folder, err := fixture.WriteEnMAP(filepath.Join(dir, "a"), fixture.EnMAPOptions{Seed: 1, Cloud: true, Defects: true})
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := fixture.WriteEnMAP(filepath.Join(dir, "b"), fixture.EnMAPOptions{Seed: 2, ShiftCols: 40, Zip: true})
	if err != nil {
		t.Fatal(err)
	}
	bsq, err := fixture.WriteEnMAP(filepath.Join(dir, "c"), fixture.EnMAPOptions{Seed: 3, BSQ: true})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(folder.Path, "*-METADATA.XML"))
	for _, tc := range []struct {
		name string
		d    fixture.Delivery
		path string
	}{
		{"folder", folder, folder.Path},
		{"METADATA.XML", folder, names[0]},
		{"ZIP", zipped, zipped.Path},
		{"BSQ", bsq, bsq.Path},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := geo.Open(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			in := s.Info()
			checkDelivery(t, in, tc.d, sensors.ProductEnMAPL2A)
			if math.Abs(in.Scale[0]-1e-4) > 1e-10 || in.Metadata["ACQUISITIONDATETIME"] != "2023-06-01T08:30:00.000000Z" {
				t.Errorf("got scale %g, acquisition %q", in.Scale[0], in.Metadata["ACQUISITIONDATETIME"])
			}
			if !strings.Contains(in.BadBandSource, "bandStatistics") {
				t.Errorf("bad bands from %q, want METADATA.XML's bandStatistics", in.BadBandSource)
			}
			// The no-data-filled water-vapour bands make no pixel invalid;
			// the background around the footprint is no-data.
			all := 1 - float64(tc.d.NoData)/float64(fixture.Rows*fixture.Cols)
			if f, err := s.ValidFraction(context.Background()); err != nil || f != all {
				t.Errorf("valid fraction %v (%v), want %v (%d pixels outside the footprint)", f, err, all, tc.d.NoData)
			}
			checkReflectance(t, s, tc.d)
			if tc.name == "BSQ" {
				if in.Driver != "ENVI" {
					t.Errorf("BSQ delivery read by %s, want ENVI", in.Driver)
				}
				return
			}
			if got := s.ProductQualityMasks(); len(got) != 4 {
				t.Errorf("got product masks %q, want pixel, cloud, cirrus and cloud shadow", got)
			}
			if err := s.UseProductQualityMasks(); err != nil {
				t.Fatal(err)
			}
			want := all - float64(tc.d.Masked)/float64(fixture.Rows*fixture.Cols)
			if f, err := s.ValidFraction(context.Background()); err != nil || f != want {
				t.Errorf("with the product's masks: valid fraction %v (%v), want %v (%d masked)", f, err, want, tc.d.Masked)
			}
		})
	}
}

// validCount reads the whole scene through plan (nil: every good band)
// and counts its valid pixels.
func validCount(t *testing.T, s *geo.Scene, plan *spectral.Plan) int {
	t.Helper()
	if plan == nil {
		good := s.Info().BandSet().Good()
		plan = &spectral.Plan{Read: good, Out: len(good)}
	}
	if err := s.SetBandPlan(plan); err != nil {
		t.Fatal(err)
	}
	defer s.SetBandPlan(nil)
	blk, err := s.ReadWindow(context.Background(), geo.Window{Cols: fixture.Cols, Rows: fixture.Rows})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ok := range blk.Valid {
		if ok {
			n++
		}
	}
	return n
}

// TestEnMAPPixelMaskPerBand: EnMAP's QL_PIXELMASK has a plane per spectral
// band. A pixel defective in band 61 or 200 is masked when the read uses
// that band (after resampling: when the band feeds a model band), not
// when it does not; the planes of the bands filled with no-data, which
// flag every pixel, never mask anything.
func TestEnMAPPixelMaskPerBand(t *testing.T) {
	d, err := fixture.WriteEnMAP(t.TempDir(), fixture.EnMAPOptions{Seed: 4, Defects: true})
	s := openDelivery(t, d, err)
	footprint := fixture.Rows*fixture.Cols - d.NoData
	if err := s.UseProductQualityMasks(); err != nil {
		t.Fatal(err)
	}
	if n := validCount(t, s, nil); n != footprint-d.Masked {
		t.Errorf("every good band: %d valid pixels, want %d (%d defective in bands 61 and 200)", n, footprint-d.Masked, d.Masked)
	}
	if n := validCount(t, s, &spectral.Plan{Read: []int{10, 20, 30}, Out: 3}); n != footprint {
		t.Errorf("bands 11, 21, 31: %d valid pixels, want the %d of the footprint (their planes flag none)", n, footprint)
	}
	if n := validCount(t, s, &spectral.Plan{Read: []int{60}, Out: 1}); n >= footprint || n <= footprint-d.Masked {
		t.Errorf("band 61: %d valid pixels, want between %d and %d (its defects only)", n, footprint-d.Masked, footprint)
	}
	// A model band resampled from EnMAP's bands 195-205 reads band 200.
	model := spectral.BandSet{Bands: 1, CentresNM: []float64{d.CentresNM[199]}, FWHMNM: []float64{40}}
	plan, err := spectral.Resample(model, s.Info().BandSet())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(plan.Read, 199) {
		t.Fatalf("resampling plan reads %v, not band 200", plan.Read)
	}
	if n := validCount(t, s, &plan); n >= footprint {
		t.Errorf("a model band resampled from band 200's neighbourhood: %d valid pixels, want fewer than %d (band 200's defects)", n, footprint)
	}
	// The filled bands' planes flag every pixel: read them and nothing is masked by them.
	if n := validCount(t, s, &spectral.Plan{Read: []int{129, 10}, Out: 2}); n != 0 {
		t.Logf("bands 130 and 11: %d valid (band 130 is filled with no-data: every pixel invalid by its value)", n)
	}
}

// TestEnMAPBadBandsWithoutStatistics: an EnMAP product whose METADATA.XML
// has no bandStatistics gets its bad bands from the data (bands holding
// -32768 in every pixel of the footprint), says so, and its pixels are
// valid; a spectral image without a no-data tag has EnMAP's -32768 fill
// as no-data all the same.
func TestEnMAPBadBandsWithoutStatistics(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    fixture.EnMAPOptions
	}{
		{"no bandStatistics", fixture.EnMAPOptions{Seed: 5, NoBandStatistics: true}},
		{"no no-data tag", fixture.EnMAPOptions{Seed: 6, NoNoDataTag: true}},
		{"neither", fixture.EnMAPOptions{Seed: 7, NoBandStatistics: true, NoNoDataTag: true}},
		{"neither, BSQ", fixture.EnMAPOptions{Seed: 8, NoBandStatistics: true, NoNoDataTag: true, BSQ: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := fixture.WriteEnMAP(t.TempDir(), tc.o)
			s := openDelivery(t, d, err)
			in := s.Info()
			checkDelivery(t, in, d, sensors.ProductEnMAPL2A)
			wantSource := "bandStatistics"
			if tc.o.NoBandStatistics {
				wantSource = "the data"
			}
			if !strings.Contains(in.BadBandSource, wantSource) {
				t.Errorf("bad bands from %q, want %q", in.BadBandSource, wantSource)
			}
			if !in.HasNoData[0] || in.NoData[0] != -32768 {
				t.Errorf("no-data %v %g, want -32768", in.HasNoData[0], in.NoData[0])
			}
			want := 1 - float64(d.NoData)/float64(fixture.Rows*fixture.Cols)
			if f, err := s.ValidFraction(context.Background()); err != nil || f != want {
				t.Errorf("valid fraction %v (%v), want %v: the footprint, not 0%% or 100%%", f, err, want)
			}
			rep := geo.NewReport(in)
			var b strings.Builder
			if err := rep.WriteText(&b, ""); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "bad bands:      6: 130, 131, 132, 133, 134, 135 (left out of training and classification; from ") {
				t.Errorf("pnec info text:\n%s", b.String())
			}
		})
	}
}

func TestOpenDESIS(t *testing.T) {
	d, err := fixture.WriteDESIS(t.TempDir(), fixture.DESISOptions{Seed: 1})
	s := openDelivery(t, d, err)
	in := s.Info()
	checkDelivery(t, in, d, sensors.ProductDESISL2A)
	if in.Scale[7] != 1e-4 || !in.HasNoData[0] || in.NoData[0] != -32768 || in.SpectralSource != "ENVI header beside the GeoTIFF" {
		t.Errorf("got scale %g, nodata %v %g, source %q; want the header's gain, no-data and source", in.Scale[7], in.HasNoData[0], in.NoData[0], in.SpectralSource)
	}
	want := 1 - 2.0/float64(fixture.Rows*fixture.Cols)
	if f, err := s.ValidFraction(context.Background()); err != nil || f != want {
		t.Errorf("valid fraction %v (%v), want %v (the header's no-data corners)", f, err, want)
	}
	checkReflectance(t, s, d)
}

func TestOpenAVIRISNG(t *testing.T) {
	d, err := fixture.WriteAVIRISNG(t.TempDir(), fixture.AVIRISOptions{Seed: 1, RotateDeg: 30})
	s := openDelivery(t, d, err)
	in := s.Info()
	gt := in.GeoTransform
	for i := range gt {
		if math.Abs(gt[i]-d.GeoRef.GeoTransform[i]) > 1e-6 {
			t.Fatalf("geotransform %v, want the rotated %v", gt, d.GeoRef.GeoTransform)
		}
	}
	in.GeoTransform = d.GeoRef.GeoTransform // compared with a tolerance above
	checkDelivery(t, in, d, sensors.ProductAVIRISNG)
	if f, err := s.ValidFraction(context.Background()); err != nil || f != 1 {
		t.Errorf("valid fraction %v (%v), want 1 (the bad bands' -9999 makes no pixel invalid)", f, err)
	}
	checkReflectance(t, s, d)
}

// openDelivery opens the delivery a fixture writer returned with err
// (skipped as skipWithout says) and closes it when the test ends.
func openDelivery(t *testing.T, d fixture.Delivery, err error) *geo.Scene {
	t.Helper()
	fixture.SkipWithoutPython(t, err)
	s, err := geo.Open(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openRefused opens the delivery a fixture writer returned with err
// (skipped as skipWithout says), which must be refused, and returns why.
func openRefused(t *testing.T, d fixture.Delivery, err error) error {
	t.Helper()
	fixture.SkipWithoutPython(t, err)
	s, err := geo.Open(d.Path)
	if err == nil {
		s.Close()
		t.Fatal("opened; want the file refused")
	}
	return err
}

// TestOpenEMIT: an EMIT L2A file is read on its ortho grid through its
// geometry lookup table: each ortho pixel holds the spectrum of the sensor
// pixel the GLT names (checked against a direct lookup), pixels off the
// swath and the fill value are invalid, good_wavelengths marks bad bands,
// and the mask file beside it is the product's mask.
func TestOpenEMIT(t *testing.T) {
	d, err := fixture.WriteEMIT(t.TempDir(), fixture.EMITOptions{Seed: 1, Mask: true})
	s := openDelivery(t, d, err)
	in := s.Info()
	checkDelivery(t, in, d, sensors.ProductEMITL2A)
	if in.Metadata["ACQUISITIONDATETIME"] == "" {
		t.Error("no acquisition time")
	}
	want := 1 - float64(d.NoData)/float64(fixture.Rows*fixture.Cols)
	if f, err := s.ValidFraction(context.Background()); err != nil || math.Abs(f-want) > 1e-12 {
		t.Errorf("valid fraction %v (%v), want %v (%d pixels off the swath or filled)", f, err, want, d.NoData)
	}
	checkReflectance(t, s, d)
	// Decimated reads (pnec info's estimate on large scenes) sample the grid.
	if err := s.SetBandPlan(&spectral.Plan{Read: []int{10}, Out: 1}); err != nil {
		t.Fatal(err)
	}
	full, err := s.ReadWindow(context.Background(), geo.Window{Cols: fixture.Cols, Rows: fixture.Rows})
	if err != nil {
		t.Fatal(err)
	}
	checkDecimated(t, s, full)
	if err := s.SetBandPlan(nil); err != nil {
		t.Fatal(err)
	}
	if got := s.ProductQualityMasks(); len(got) != 1 {
		t.Fatalf("got product masks %q, want the L2A mask file", got)
	}
	if err := s.UseProductQualityMasks(); err != nil {
		t.Fatal(err)
	}
	want = 1 - float64(d.NoData+d.Masked)/float64(fixture.Rows*fixture.Cols)
	if f, err := s.ValidFraction(context.Background()); err != nil || math.Abs(f-want) > 1e-12 {
		t.Errorf("with the mask file: valid fraction %v (%v), want %v (%d cloudy pixels)", f, err, want, d.Masked)
	}
}

// checkDecimated checks decimated reads (every 2nd pixel, and a 3-to-2
// nearest sampling) of a one-band plan against the full read.
func checkDecimated(t *testing.T, s *geo.Scene, full geo.Block) {
	t.Helper()
	for _, tc := range []struct {
		w          geo.Window
		cols, rows int
	}{
		{geo.Window{Col: 2, Row: 4, Cols: 36, Rows: 24}, 18, 12},
		{geo.Window{Col: 0, Row: 0, Cols: 39, Rows: 30}, 26, 20},
	} {
		data, valid, err := s.ReadDecimated(tc.w, tc.cols, tc.rows)
		if err != nil {
			t.Fatal(err)
		}
		for r := range tc.rows {
			for c := range tc.cols {
				sr := tc.w.Row + min(tc.w.Rows-1, int((float64(r)+0.5)*float64(tc.w.Rows)/float64(tc.rows)))
				sc := tc.w.Col + min(tc.w.Cols-1, int((float64(c)+0.5)*float64(tc.w.Cols)/float64(tc.cols)))
				i, j := r*tc.cols+c, sr*fixture.Cols+sc
				if valid[i] != full.Valid[j] || data[i] != full.Data[j] {
					t.Fatalf("decimated %v to %dx%d: pixel (%d,%d) = %v (%v), source (%d,%d) = %v (%v)",
						tc.w, tc.cols, tc.rows, r, c, data[i], valid[i], sr, sc, full.Data[j], full.Valid[j])
				}
			}
		}
	}
}

func TestOpenPRISMA(t *testing.T) {
	d, err := fixture.WritePRISMA(t.TempDir(), fixture.PRISMAOptions{Seed: 1})
	s := openDelivery(t, d, err)
	in := s.Info()
	checkDelivery(t, in, d, sensors.ProductPRISMAL2D)
	if in.Bands != 63+171 || math.Abs(in.Scale[0]-(1.15-0.012)/65535) > 1e-9 || math.Abs(in.Scale[in.Bands-1]-(0.85-0.005)/65535) > 1e-9 ||
		math.Abs(in.Offset[0]-0.012) > 1e-7 || math.Abs(in.Offset[in.Bands-1]-0.005) > 1e-7 {
		t.Errorf("got %d bands, scales %g and %g, offsets %g and %g; want 234, VNIR (1.15-0.012)/65535 +0.012, SWIR (0.85-0.005)/65535 +0.005",
			in.Bands, in.Scale[0], in.Scale[in.Bands-1], in.Offset[0], in.Offset[in.Bands-1])
	}
	want := 1 - float64(d.NoData)/float64(fixture.Rows*fixture.Cols)
	if f, err := s.ValidFraction(context.Background()); err != nil || f != want {
		t.Errorf("valid fraction %v (%v), want %v: only pixels 0 in every band are no-data", f, err, want)
	}
	checkReflectance(t, s, d)
	if err := s.SetBandPlan(&spectral.Plan{Read: []int{70}, Out: 1}); err != nil {
		t.Fatal(err)
	}
	full, err := s.ReadWindow(context.Background(), geo.Window{Cols: fixture.Cols, Rows: fixture.Rows})
	if err != nil {
		t.Fatal(err)
	}
	checkDecimated(t, s, full)
}

func TestOpenTanager(t *testing.T) {
	d, err := fixture.WriteTanager(t.TempDir(), fixture.TanagerOptions{Seed: 1, Cloud: true})
	s := openDelivery(t, d, err)
	in := s.Info()
	checkDelivery(t, in, d, sensors.ProductTanagerSR)
	if got := in.Metadata["ACQUISITIONDATETIME"]; got != fixture.TanagerAcquired {
		t.Errorf("acquisition time %q, want %s (the earliest per-pixel time)", got, fixture.TanagerAcquired)
	}
	want := 1 - float64(d.NoData)/float64(fixture.Rows*fixture.Cols)
	if f, err := s.ValidFraction(context.Background()); err != nil || f != want {
		t.Errorf("valid fraction %v (%v), want %v (nodata_pixels)", f, err, want)
	}
	checkReflectance(t, s, d)
	if err := s.UseProductQualityMasks(); err != nil {
		t.Fatal(err)
	}
	want = 1 - float64(d.NoData+d.Masked)/float64(fixture.Rows*fixture.Cols)
	if f, err := s.ValidFraction(context.Background()); err != nil || f != want {
		t.Errorf("with the cloud masks: valid fraction %v (%v), want %v", f, err, want)
	}
}

// TestOpenAVIRIS3NetCDF: package sensors reads AVIRIS-3 (geo's external
// tests import it, as every command does, so geo.Open reaches its reader
// through geo.ProductHooks).
func TestOpenAVIRIS3NetCDF(t *testing.T) {
	d, err := fixture.WriteAVIRIS3NC(t.TempDir(), fixture.AVIRIS3Options{Seed: 1})
	s := openDelivery(t, d, err)
	checkDelivery(t, s.Info(), d, sensors.ProductAVIRIS3)
	want := 1 - float64(d.NoData)/float64(fixture.Rows*fixture.Cols)
	if f, err := s.ValidFraction(context.Background()); err != nil || f != want {
		t.Errorf("valid fraction %v (%v), want %v (fill values)", f, err, want)
	}
	checkReflectance(t, s, d)
}

// TestGeoTIFFWithForeignHDR: a .hdr beside a GeoTIFF that is not an ENVI
// header (another program's) is ignored.
func TestGeoTIFFWithForeignHDR(t *testing.T) {
	dir := t.TempDir()
	p := fixture.Scene(t, filepath.Join(dir, "scene.tif"), 1)
	if err := os.WriteFile(filepath.Join(dir, "scene.hdr"), []byte("BYTEORDER I\nLAYOUT BIL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := geo.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if in := s.Info(); in.WavelengthsNM != nil || in.Product != "" {
		t.Errorf("got wavelengths %v, product %q from a foreign .hdr", in.WavelengthsNM, in.Product)
	}
}

// TestEMITMissingMaskNamed: --quality-mask product on an EMIT reflectance
// file without its L2A mask file beside it names the missing
// EMIT_L2A_MASK_... file (it used to say the product delivers no masks).
func TestEMITMissingMaskNamed(t *testing.T) {
	d, err := fixture.WriteEMIT(t.TempDir(), fixture.EMITOptions{Seed: 1})
	s := openDelivery(t, d, err)
	want := strings.Replace(filepath.Base(d.Path), "_L2A_RFL_", "_L2A_MASK_", 1)
	err = s.UseProductQualityMasks()
	if err == nil || !strings.Contains(err.Error(), want+" is not beside the reflectance file") || errors.Is(err, geo.ErrNoProductQualityMasks) {
		t.Errorf("got %v, want an error naming the missing %s", err, want)
	}
}

// TestEMITNaNWavelengthRefused: one NaN among EMIT's wavelengths is an
// error naming the band, not a scene "without wavelengths" classified
// unchecked.
func TestEMITNaNWavelengthRefused(t *testing.T) {
	d, err := fixture.WriteEMIT(t.TempDir(), fixture.EMITOptions{Seed: 1, NaNWavelength: 17})
	err = openRefused(t, d, err)
	if !errors.Is(err, geo.ErrBandMetadata) || !strings.Contains(err.Error(), "band 17 the wavelength nan") {
		t.Errorf("got %v, want ErrBandMetadata naming band 17", err)
	}
}

// TestTanagerSouthernGrid: a Tanager ortho grid in UTM zone 32 south takes
// its CRS from the grid's epsg_code (EPSG:32732), not from StructMetadata's
// ZoneCode 32, which cannot say the hemisphere.
func TestTanagerSouthernGrid(t *testing.T) {
	d, err := fixture.WriteTanager(t.TempDir(), fixture.TanagerOptions{Seed: 2, South: true})
	s := openDelivery(t, d, err)
	if in := s.Info(); in.EPSG != 32732 {
		t.Errorf("EPSG:%d, want 32732 (the grid's epsg_code)", in.EPSG)
	}
}

// TestPRISMAInvalidScaleRefused: L2ScaleSwirMax not above L2ScaleSwirMin
// (every DN would read as one reflectance, or decreasing) is refused with
// one line naming both, not read.
func TestPRISMAInvalidScaleRefused(t *testing.T) {
	d, err := fixture.WritePRISMA(t.TempDir(), fixture.PRISMAOptions{Seed: 1, ScaleSwirMax: 0.005})
	err = openRefused(t, d, err)
	if !errors.Is(err, geo.ErrBandMetadata) || !strings.Contains(err.Error(), "L2ScaleSwirMin 0.005 and L2ScaleSwirMax 0.005") {
		t.Errorf("got %v", err)
	}
}
