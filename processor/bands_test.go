package processor

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/spectral"
)

// spectralModel loads the fixture model that records its wavelengths,
// widths and reflectance 0-10000.
func spectralModel(t *testing.T) *model.Model {
	t.Helper()
	p, err := fixture.SpectralModelPath()
	if err != nil {
		t.Fatal(err)
	}
	m := fixture.LoadModelFile(t, p)
	return m
}

// agreement is the share of the product's classified pixels whose class is
// the fixture's.
func agreement(t *testing.T, product string) float64 {
	t.Helper()
	s, err := geo.Open(product)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetBandPlan(&spectral.Plan{Read: []int{0}, Out: 1}); err != nil {
		t.Fatal(err)
	}
	blk, err := s.ReadWindow(context.Background(), geo.Window{Cols: fixture.Cols, Rows: fixture.Rows})
	if err != nil {
		t.Fatal(err)
	}
	_, labels := fixture.SceneData(1)
	same, n := 0, 0
	for i, v := range blk.Data {
		if !blk.Valid[i] {
			continue
		}
		n++
		if int32(v) == labels[i] {
			same++
		}
	}
	return float64(same) / float64(max(n, 1))
}

// TestClassifyBandSets: a scene with the model's bands is classified as it
// is; one whose bands lie elsewhere is refused naming both ranges, or
// resampled when asked; a model band the scene cannot cover is refused;
// a scene without wavelengths passes on its band count with a warning.
func TestClassifyBandSets(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the fixture model: skipped with -short")
	}
	m := spectralModel(t)
	dir := t.TempDir()
	var fine, fineW, vnir, vnirW []float64
	for c := 480.0; c <= 880; c += 10 { // 41 bands, 10 nm apart, none on the model's centres
		fine, fineW = append(fine, c+3), append(fineW, 12)
	}
	for c := 480.0; c <= 760; c += 10 {
		vnir, vnirW = append(vnir, c), append(vnirW, 12)
	}
	tests := []struct {
		name     string
		centres  []float64
		widths   []float64
		bands    int
		resample bool
		err      error
		inErr    []string
		warn     string
		plan     string
	}{
		{name: "the model's bands", centres: fixture.WavelengthsNM, widths: fixture.FWHMNM, plan: "all 8 scene bands"},
		{name: "finer bands elsewhere, refused", centres: fine, widths: fineW, err: spectral.ErrBandsDiffer,
			inErr: []string{"scene 41 bands, 483-883 nm, FWHM 12 nm", "model 8 bands, 500-850 nm, FWHM 50 nm", "largest centre difference 3.00 nm"}},
		{name: "finer bands elsewhere, resampled", centres: fine, widths: fineW, resample: true, plan: "8 bands resampled from"},
		{name: "a VNIR scene for a model reaching 850 nm", centres: vnir, widths: vnirW, resample: true, err: spectral.ErrNotCovered,
			inErr: []string{"model band 7 (800 nm) lies outside the scene's good bands (480-760 nm)"}},
		{name: "no wavelengths, the model's count", bands: 8, warn: "the scene declares no band wavelengths", plan: "all 8 scene bands"},
		{name: "no wavelengths, another count", bands: 9, err: model.ErrBandCount, inErr: []string{"9 bands, the model takes 8"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scene := filepath.Join(dir, "scene"+string(rune('a'+i))+".tif")
			if err := fixture.WriteSpectralScene(scene, 3, tt.centres, tt.widths, tt.bands); err != nil {
				t.Fatal(err)
			}
			c, err := NewClassifier(m, Options{ResampleBands: tt.resample})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			out := filepath.Join(dir, "product"+string(rune('a'+i))+".tif")
			res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), scene) {
					t.Fatalf("got %v, want %v naming the scene", err, tt.err)
				}
				for _, s := range tt.inErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Bands, tt.plan) {
				t.Errorf("got bands %q, want %q", res.Bands, tt.plan)
			}
			if got := strings.Join(res.Warnings, "; "); (tt.warn == "") != (got == "") || !strings.Contains(got, tt.warn) {
				t.Errorf("got warnings %q, want %q", got, tt.warn)
			}
			// The model was trained on this layout: a product made from the
			// model's bands, or from resampled ones, mostly agrees with it.
			if a := agreement(t, out); a < 0.9 {
				t.Errorf("%.1f%% of the pixels have the fixture's class, want at least 90%%", 100*a)
			}
		})
	}
}

// TestClassifyRadiometry: a scene declaring reflectance 0-1 is converted to
// the model's 0-10000; a radiance scene is refused naming both.
func TestClassifyRadiometry(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the fixture model: skipped with -short")
	}
	m := spectralModel(t)
	dir := t.TempDir()
	scene := filepath.Join(dir, "scaled.tif")
	// The fixture's values divided by 10000 (reflectance 0-1), declared as such.
	if err := fixture.WriteSpectralScene(scene, 3, fixture.WavelengthsNM, fixture.FWHMNM, 0); err != nil {
		t.Fatal(err)
	}
	scaled := filepath.Join(dir, "refl01.tif")
	if err := scaleScene(scene, scaled, 1e-4); err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(m, Options{Radiometry: spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := filepath.Join(dir, "product.tif")
	res, err := c.Run(context.Background(), Request{Scene: scaled, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Bands, "x10000") || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "converted") {
		t.Errorf("got bands %q warnings %q, want a x10000 conversion said", res.Bands, res.Warnings)
	}
	if a := agreement(t, out); a < 0.9 {
		t.Errorf("converted scene: %.1f%% of the pixels have the fixture's class, want at least 90%%", 100*a)
	}
	rc, err := NewClassifier(m, Options{Radiometry: spectral.Radiometry{Quantity: spectral.QuantityRadiance}})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, err = rc.Run(context.Background(), Request{Scene: scene, Out: filepath.Join(dir, "radiance.tif")})
	if !errors.Is(err, spectral.ErrRadiometry) || !strings.Contains(err.Error(), "the scene holds radiance, the model was trained on reflectance 0-10000") {
		t.Errorf("got %v, want ErrRadiometry naming both", err)
	}
}

// scaleScene writes src's pixels times f to dst, keeping its bands' metadata.
func scaleScene(src, dst string, f float32) error {
	s, err := geo.Open(src)
	if err != nil {
		return err
	}
	defer s.Close()
	in := s.Info()
	blk, err := s.ReadWindow(context.Background(), geo.Window{Cols: in.Cols, Rows: in.Rows})
	if err != nil {
		return err
	}
	for i := range blk.Data {
		blk.Data[i] *= f
	}
	nd := fixture.NoData
	w, err := geo.CreateGeoTIFF(dst, geo.RasterSpec{Cols: in.Cols, Rows: in.Rows, Bands: in.Bands, DataType: geo.Float32, GeoRef: in.GeoRef,
		NoData: &nd, WavelengthsNM: in.WavelengthsNM, FWHMNM: in.FWHMNM})
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.WriteWindow(geo.Window{Cols: in.Cols, Rows: in.Rows}, blk.Data); err != nil {
		return err
	}
	return w.Commit()
}

// TestClassifyQualityMasks: pixels a quality mask raster flags are no-data
// in the product (and the product says which quality masks it applied);
// with an area of interest too, only pixels inside it and not flagged are
// classified; a product may not replace the quality mask; product quality
// masks of a plain GeoTIFF are refused.
func TestClassifyQualityMasks(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the fixture model: skipped with -short")
	}
	m := spectralModel(t)
	dir := t.TempDir()
	scene := filepath.Join(dir, "scene.tif")
	if err := fixture.WriteSpectralScene(scene, 3, fixture.WavelengthsNM, fixture.FWHMNM, 0); err != nil {
		t.Fatal(err)
	}
	const aoiCols = 25 // the area of interest: columns 0..24
	mask := make([]float32, fixture.Rows*fixture.Cols)
	aoi := make([]float32, fixture.Rows*fixture.Cols)
	flagged, flaggedInside := 0, 0
	for r := range fixture.Rows {
		for c := range aoiCols {
			aoi[r*fixture.Cols+c] = 1
		}
	}
	for r := 5; r < 12; r++ {
		for c := 20; c < 31; c++ {
			mask[r*fixture.Cols+c] = 3 // a cloud class
			flagged++
			if c < aoiCols {
				flaggedInside++
			}
		}
	}
	maskPath := filepath.Join(dir, "clouds.tif")
	if err := fixture.WriteRaster(maskPath, fixture.Rows, fixture.Cols, 1, mask); err != nil {
		t.Fatal(err)
	}
	aoiPath := filepath.Join(dir, "aoi.tif")
	if err := fixture.WriteRaster(aoiPath, fixture.Rows, fixture.Cols, 1, aoi); err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(m, Options{QualityMasks: []QualityMask{{Path: maskPath}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := filepath.Join(dir, "masked.tif")
	res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(fixture.Rows*fixture.Cols - flagged); res.ValidPixels != want || res.QualityMasks != maskPath {
		t.Errorf("got %d valid pixels, quality masks %q; want %d and %q", res.ValidPixels, res.QualityMasks, want, maskPath)
	}
	ps, err := geo.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.Info().Metadata["PNEC_QUALITY_MASKS"]; got != maskPath {
		t.Errorf("product metadata PNEC_QUALITY_MASKS %q, want %q", got, maskPath)
	}
	ps.Close()
	res, err = c.Run(context.Background(), Request{Scene: scene, Mask: aoiPath, Out: filepath.Join(dir, "aoi-masked.tif")})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(fixture.Rows*aoiCols - flaggedInside); res.ValidPixels != want || res.QualityMasks != maskPath || res.Mask != aoiPath {
		t.Errorf("with the area of interest: got %d valid pixels, quality masks %q, mask %q; want %d, %q and %q",
			res.ValidPixels, res.QualityMasks, res.Mask, want, maskPath, aoiPath)
	}
	if _, err := c.Run(context.Background(), Request{Scene: scene, Out: maskPath}); !errors.Is(err, ErrOutputIsInput) {
		t.Errorf("a product over its quality mask: got %v, want ErrOutputIsInput", err)
	}
	pc, err := NewClassifier(m, Options{ProductQualityMasks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.Run(context.Background(), Request{Scene: scene, Out: filepath.Join(dir, "p.tif")}); !errors.Is(err, geo.ErrNoProductQualityMasks) {
		t.Errorf("product quality masks of a GeoTIFF: got %v, want geo.ErrNoProductQualityMasks", err)
	}
}
