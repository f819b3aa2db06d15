package sensors

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"

	"github.com/pnec/pnec/geo"
)

// EMIT (NASA JPL, on the ISS): L2A products as NetCDF-4 (LP DAAC): the
// cube in sensor geometry, (downtrack, crosstrack, bands), and a geometry
// lookup table (location/glt_x, glt_y) that says, for each pixel of the
// orthorectified grid (EPSG:4326, the geotransform and spatial_ref global
// attributes), which sensor pixel it sees; geo applies it
// (geo.Cube.Lookup). The reflectance (EMIT_L2A_RFL_...) and the mask
// (EMIT_L2A_MASK_...) files are both scenes; the mask file is the
// reflectance's quality mask. docs/sensors.md says what is verified; the
// fixture is internal/fixture's WriteEMIT.

// Product names (geo.Info.Product) of EMIT's L2A reflectance and mask
// files.
const (
	ProductEMITL2A  = "EMIT L2A RFL"
	ProductEMITMask = "EMIT L2A MASK"
)

func init() { Register(emit{}) }

type emit struct{}

var _ Sensor = emit{}

// emitCompanion is an EMIT file that belongs to a reflectance file's
// scene: the mask and the uncertainty.
var emitCompanion = regexp.MustCompile(`(?i)^EMIT_L2A_(MASK|RFLUNCERT)_`)

// emitMaskBands are the bands of EMIT's L2A mask file.
var emitMaskBands = []string{"Cloud flag", "Cirrus flag", "Water flag", "Spacecraft Flag", "Dilated Cloud Flag", "AOD550", "H2O (g cm-2)", "Aggregate Flag"}

// emitMaskFlags are the mask bands --mask product applies (0-based): the
// cloud, cirrus, spacecraft and dilated cloud flags, where the surface is
// not seen. Not the water flag (water is land cover), the aggregate flag
// (which includes it) or the AOD and water vapour values.
var emitMaskFlags = []int{0, 1, 3, 4}

func (emit) Name() string { return "EMIT" }

func (emit) Companion(base string) bool { return emitCompanion.MatchString(base) }

// Describe: an EMIT delivery is no raster GDAL 3.6 opens on its grid.
func (emit) Describe(*geo.Info) ([]geo.QualityMaskSource, bool, error) { return nil, false, nil }

// Open recognises a NetCDF file by its extension, its lookup table and its
// reflectance or mask variable, and reads it.
func (emit) Open(name string) (*geo.Scene, bool, error) {
	if !strings.HasSuffix(strings.ToLower(name), ".nc") {
		return nil, false, nil
	}
	f, err := geo.OpenMD(name)
	if err != nil {
		return nil, false, nil // GDAL's own open reports what is wrong
	}
	if !f.Has("/location/glt_x") || (!f.Has("/reflectance") && !f.Has("/mask")) {
		f.Close()
		return nil, false, nil
	}
	s, err := openEMIT(name, f)
	if err != nil {
		return nil, true, fmt.Errorf("open %s: %w", name, err)
	}
	return s, true, nil
}

// openEMIT reads an EMIT L2A RFL (or MASK) file's band set, georeference
// and GLT, and makes a scene on the ortho grid. It takes f over.
func openEMIT(name string, f *geo.MDFile) (*geo.Scene, error) {
	varName, product := "/reflectance", ProductEMITL2A
	if !f.Has(varName) {
		varName, product = "/mask", ProductEMITMask
	}
	arr, err := f.Array(varName)
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	dims := arr.Dims()
	if len(dims) != 3 {
		arr.Close()
		return nil, errors.Join(fmt.Errorf("%s has %d dimensions, want (downtrack, crosstrack, bands)", varName, len(dims)), f.Close())
	}
	nb := dims[2]
	gx, err := f.Array("/location/glt_x")
	if err != nil {
		arr.Close()
		return nil, errors.Join(err, f.Close())
	}
	gy, err := f.Array("/location/glt_y")
	if err != nil {
		arr.Close()
		gx.Close()
		return nil, errors.Join(err, f.Close())
	}
	fail := func(err error) (*geo.Scene, error) {
		arr.Close()
		gx.Close()
		gy.Close()
		return nil, errors.Join(err, f.Close())
	}
	ox, oy := gx.Dims(), gy.Dims()
	if len(ox) != 2 || len(oy) != 2 || ox[0] != oy[0] || ox[1] != oy[1] {
		return fail(errors.New("glt_x and glt_y are not one (ortho_y, ortho_x) grid"))
	}
	in := geo.Info{Name: name, Driver: "netCDF", Rows: ox[0], Cols: ox[1], Bands: nb, Product: product, DataType: "Float32"}
	gt, ok := f.GroupAttr("/", "geotransform")
	if v := gt.Floats(); ok && len(v) == 6 {
		copy(in.GeoTransform[:], v)
		in.HasGeoTransform = true
	}
	if srs, ok := f.GroupAttr("/", "spatial_ref"); ok {
		in.WKT = srs.Text()
	}
	if t, ok := f.GroupAttr("/", "time_coverage_start"); ok && t.Text() != "" {
		in.Metadata = map[string]string{"ACQUISITIONDATETIME": t.Text()}
	}
	if product == ProductEMITL2A {
		if err := emitBandSet(f, &in, nb); err != nil {
			return fail(err)
		}
		in.Radiometry = reflectance01
	} else if nb == len(emitMaskBands) {
		in.BandNames = append([]string(nil), emitMaskBands...)
	}
	nodata, ok := arr.NoData()
	if !ok {
		nodata = math.NaN()
	}
	all := allBands(nb)
	var masks []geo.QualityMaskSource
	if product == ProductEMITL2A {
		masks = emitMask(name)
	}
	return geo.NewCubeScene(geo.Cube{Info: in, File: f,
		Arrays: []geo.CubeArray{{Array: arr, BandAxis: 2, RowAxis: 0, ColAxis: 1, Index: all, SceneBands: all}},
		Lookup: &geo.GeometryLookup{X: gx, Y: gy},
		NoData: constSlice(nb, nodata), Scale: constSlice(nb, 1), Offset: make([]float64, nb), QualityMasks: masks})
}

// emitMask is the quality mask of the reflectance file name: the L2A mask
// file of the same acquisition, beside it.
func emitMask(name string) []geo.QualityMaskSource {
	base := path.Base(name)
	i := strings.Index(base, "_L2A_RFL_")
	if i < 0 {
		return nil
	}
	mf := path.Join(path.Dir(name), base[:i]+"_L2A_MASK_"+base[i+len("_L2A_RFL_"):])
	// Given whether or not the file is there: without it, --quality-mask
	// product says which file is missing rather than that the product has
	// no masks.
	return []geo.QualityMaskSource{{Label: "EMIT L2A mask (cloud, cirrus, spacecraft, dilated cloud flags)",
		Bands: emitMaskFlags, Open: func() (*geo.Scene, error) {
			if !geo.Exists(mf) {
				return nil, fmt.Errorf("%s is not beside the reflectance file: the product's quality masks are in this L2A mask file of the same acquisition (LP DAAC delivers it with the reflectance in the EMITL2ARFL granule)", path.Base(mf))
			}
			return geo.Open(mf)
		}}}
}

// emitBandSet reads sensor_band_parameters: wavelengths and fwhm (nm) and
// good_wavelengths (0 = bad).
func emitBandSet(f *geo.MDFile, in *geo.Info, nb int) error {
	read := func(name string) ([]float64, error) {
		v, err := f.Vector("/sensor_band_parameters/" + name)
		if err != nil {
			return nil, err
		}
		if len(v) != nb {
			return nil, fmt.Errorf("sensor_band_parameters/%s has %d values for %d bands", name, len(v), nb)
		}
		return v, nil
	}
	wl, err := read("wavelengths")
	if err != nil {
		return err
	}
	if err := geo.CheckCentres(wl, "sensor_band_parameters/wavelengths"); err != nil {
		return err
	}
	in.WavelengthsNM, in.WavelengthUnits, in.SpectralSource = wl, "nm", "EMIT sensor_band_parameters"
	if fw, err := read("fwhm"); err == nil {
		if err := geo.CheckWidths(fw, "sensor_band_parameters/fwhm"); err != nil {
			return err
		}
		in.FWHMNM = fw
	} else if !errors.Is(err, geo.ErrNoArray) {
		return err
	}
	good, err := read("good_wavelengths")
	if err != nil && !errors.Is(err, geo.ErrNoArray) {
		return err
	}
	for i, g := range good {
		if g == 0 {
			if in.BadBands == nil {
				in.BadBands = make([]bool, nb)
			}
			in.BadBands[i] = true
		}
	}
	return nil
}
