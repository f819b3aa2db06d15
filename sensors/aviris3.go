package sensors

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/pnec/pnec/geo"
)

// AVIRIS-3 (JPL): L2A reflectance as ENVI cubes (the distribution
// document's AV3YYYYMMDDtHHNNSS_..._RFL_ORT with its .hdr, which GDAL's
// ENVI driver reads: this reader names the product and its radiometry) and
// as orthorectified NetCDF (ORNL DAAC's *_RFL_ORT.nc, which GDAL cannot
// read as one raster: this reader builds its cube). docs/sensors.md says
// what is verified of each. The fixture is internal/fixture's
// WriteAVIRIS3NC; the nominal band table, for --bands-common-with AVIRIS-3,
// is spectral.Sensors'.

// ProductAVIRIS3 is the product name (geo.Info.Product) of AVIRIS-3's
// deliveries.
const ProductAVIRIS3 = "AVIRIS-3 L2A"

func init() { Register(aviris3{}) }

var _ Sensor = aviris3{}

type aviris3 struct{}

// aviris3Name is an AVIRIS-3 reflectance file's name.
var aviris3Name = regexp.MustCompile(`(?i)^AV3\d{8}t\d{6}.*RFL`)

func (aviris3) Name() string { return "AVIRIS-3" }

// Companion: an AVIRIS-3 delivery is one file (and an ENVI header).
func (aviris3) Companion(string) bool { return false }

// Describe recognises an ENVI reflectance cube by its name: GDAL read its
// band set, no-data and acquisition time from the header; the values are
// reflectance 0-1 unless the header says otherwise.
func (aviris3) Describe(in *geo.Info) ([]geo.QualityMaskSource, bool, error) {
	if in.Driver != "ENVI" || !aviris3Name.MatchString(path.Base(in.Name)) {
		return nil, false, nil
	}
	in.Product = ProductAVIRIS3
	if !in.Radiometry.Known() {
		in.Radiometry = reflectance01
	}
	return nil, true, nil
}

// Open recognises the orthorectified NetCDF by its extension and its
// reflectance/reflectance array, and reads it.
func (aviris3) Open(name string) (*geo.Scene, bool, error) {
	if !strings.HasSuffix(strings.ToLower(name), ".nc") {
		return nil, false, nil
	}
	f, err := geo.OpenMD(name)
	if err != nil {
		return nil, false, nil // GDAL's own open reports what is wrong
	}
	if !f.Has("/reflectance/reflectance") {
		f.Close()
		return nil, false, nil
	}
	s, err := openAVIRIS3NC(name, f)
	if err != nil {
		return nil, true, fmt.Errorf("open %s: %w", name, err)
	}
	return s, true, nil
}

// openAVIRIS3NC reads AVIRIS-3's (and AVIRIS-5's) orthorectified L2A
// reflectance NetCDF: the group reflectance holds reflectance (wavelength,
// northing, easting) Float32 0-1 with a _FillValue, wavelength and fwhm
// (nm); the root's grid mapping variable transverse_mercator holds the CRS
// (crs_wkt or spatial_ref) and GDAL's GeoTransform, and the
// easting/northing coordinates are pixel centres. It takes f over.
func openAVIRIS3NC(name string, f *geo.MDFile) (*geo.Scene, error) {
	arr, err := f.Array("/reflectance/reflectance")
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	dims := arr.Dims()
	if len(dims) != 3 {
		arr.Close()
		return nil, errors.Join(fmt.Errorf("reflectance has %d dimensions, want (wavelength, northing, easting)", len(dims)), f.Close())
	}
	nb := dims[0]
	in := geo.Info{Name: name, Driver: "netCDF", Bands: nb, Rows: dims[1], Cols: dims[2], Product: ProductAVIRIS3, Radiometry: reflectance01}
	if err := placeGrid(f, &in); err != nil {
		arr.Close()
		return nil, errors.Join(fmt.Errorf("%s: %w", name, err), f.Close())
	}
	if err := readBandTable(f, &in); err != nil {
		arr.Close()
		return nil, errors.Join(err, f.Close())
	}
	nodata, ok := arr.NoData()
	if !ok {
		nodata = math.NaN()
	}
	all := allBands(nb)
	return geo.NewCubeScene(geo.Cube{Info: in, File: f,
		Arrays: []geo.CubeArray{{Array: arr, BandAxis: 0, RowAxis: 1, ColAxis: 2, Index: all, SceneBands: all}},
		NoData: slices.Repeat([]float64{nodata}, nb), Scale: slices.Repeat([]float64{1}, nb), Offset: make([]float64, nb)})
}

// placeGrid sets the CRS and geotransform: the grid mapping variable's
// crs_wkt (or spatial_ref) and GeoTransform, else the easting/northing
// coordinates (pixel centres, so the grid's corner is half a pixel out),
// which must then be a regular grid (regularStep): irregular or unordered
// coordinates would be taken from their first two values (a -37 m pixel)
// and are refused.
func placeGrid(f *geo.MDFile, in *geo.Info) error {
	for _, tm := range []string{"/transverse_mercator", "/crs", "/spatial_ref"} {
		a, err := f.Array(tm)
		if err != nil {
			continue
		}
		for _, key := range []string{"crs_wkt", "spatial_ref"} {
			if v, ok := a.AttrString(key); ok && v != "" && in.WKT == "" {
				in.WKT = v
			}
		}
		if v, ok := a.AttrString("GeoTransform"); ok && v != "" {
			if gt, err := geo.ParseNumberList(v); err == nil && len(gt) == 6 {
				copy(in.GeoTransform[:], gt)
				in.HasGeoTransform = true
			}
		}
		a.Close()
		break
	}
	if in.HasGeoTransform {
		return nil
	}
	e, errE := f.Vector("/easting")
	n, errN := f.Vector("/northing")
	if errE == nil && errN == nil && len(e) == in.Cols && len(n) == in.Rows && len(e) > 1 && len(n) > 1 {
		px, err := regularStep("easting", e)
		if err != nil {
			return err
		}
		py, err := regularStep("northing", n)
		if err != nil {
			return err
		}
		in.GeoTransform = [6]float64{e[0] - px/2, px, 0, n[0] - py/2, 0, py}
		in.HasGeoTransform = true
	}
	return nil
}

// regularStep is the step of the coordinate values v when they form a
// regular grid: every step the first one within a thousandth of it, plus
// the rounding of the values' type (float32 coordinates of a UTM northing
// are 0.25 m apart), as GDAL's netCDF driver checks the spacing. A zero step, or one that differs (unordered
// or irregular values), is an error naming the coordinate and the place.
func regularStep(name string, v []float64) (float64, error) {
	step := v[1] - v[0]
	if step == 0 || math.IsNaN(step) || math.IsInf(step, 0) {
		return 0, fmt.Errorf("%s coordinates %g and %g: not a grid (no step between its first two values)", name, v[0], v[1])
	}
	biggest, single := 0.0, true
	for _, x := range v {
		biggest = max(biggest, math.Abs(x))
		single = single && float64(float32(x)) == x
	}
	ulp := biggest * 0x1p-52 // the spacing of the values' type near the largest
	if single {
		ulp = biggest * 0x1p-23 // coordinates stored as float32
	}
	tol := 1e-3*math.Abs(step) + 2*ulp
	for i := 2; i < len(v); i++ {
		if d := v[i] - v[i-1]; !(math.Abs(d-step) <= tol) {
			return 0, fmt.Errorf("%s coordinates are not a regular grid: step %g between values %d and %d, %g between the first two; pnec does not resample irregular grids",
				name, d, i-1, i, step)
		}
	}
	return step, nil
}

// readBandTable sets the band set from the reflectance group's wavelength,
// fwhm and (when present) good_wavelengths, refusing invalid values.
func readBandTable(f *geo.MDFile, in *geo.Info) error {
	perBand := func(name string, check func([]float64, string) error) ([]float64, error) {
		v, err := f.Vector("/reflectance/" + name)
		if errors.Is(err, geo.ErrNoArray) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if len(v) != in.Bands {
			return nil, fmt.Errorf("%w: reflectance/%s has %d values for %d bands", geo.ErrBandMetadata, name, len(v), in.Bands)
		}
		if check != nil {
			if err := check(v, "reflectance/"+name); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	wl, err := perBand("wavelength", geo.CheckCentres)
	if err != nil {
		return err
	}
	fw, err := perBand("fwhm", geo.CheckWidths)
	if err != nil {
		return err
	}
	good, err := perBand("good_wavelengths", nil)
	if err != nil {
		return err
	}
	if wl != nil {
		in.WavelengthsNM, in.WavelengthUnits, in.SpectralSource = wl, "nm", "AVIRIS-3 reflectance group"
	}
	in.FWHMNM = fw
	in.BadBands = geo.BadBandsOf(good)
	return nil
}
