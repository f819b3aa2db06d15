package sensors

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/spectral"
)

// Planet Tanager: ortho products as HDF-EOS5 (grid HYP: surface
// reflectance or TOA radiance), which GDAL cannot read as one raster: this
// reader builds its cube through geo's multidimensional API. docs/sensors.md
// says what is verified; the fixture is internal/fixture's WriteTanager.

// ProductTanagerSR is the product name (geo.Info.Product) of Tanager's
// ortho surface reflectance; its TOA radiance is "Tanager ortho radiance".
const ProductTanagerSR = "Tanager ortho surface reflectance"

func init() { Register(tanager{}) }

type tanager struct{}

var _ Sensor = tanager{}

const tanagerFields = "/HDFEOS/GRIDS/HYP/Data Fields"

func (tanager) Name() string { return "Tanager" }

// Companion: a Tanager delivery is one file.
func (tanager) Companion(string) bool { return false }

// Describe: a Tanager delivery is no raster GDAL opens as it is.
func (tanager) Describe(*geo.Info) ([]geo.QualityMaskSource, bool, error) { return nil, false, nil }

// Open recognises an HDF5 file by its extension and its grid's
// surface_reflectance or toa_radiance, and reads it.
func (tanager) Open(name string) (*geo.Scene, bool, error) {
	if !isHDF5Name(name) {
		return nil, false, nil
	}
	f, err := geo.OpenMD(name)
	if err != nil {
		return nil, false, nil // GDAL's own open reports what is wrong
	}
	if !f.Has(tanagerFields+"/surface_reflectance") && !f.Has(tanagerFields+"/toa_radiance") {
		f.Close()
		return nil, false, nil
	}
	s, err := openTanager(name, f)
	if err != nil {
		return nil, true, fmt.Errorf("open %s: %w", name, err)
	}
	return s, true, nil
}

// openTanager reads a Planet Tanager ortho product (HDF-EOS5 grid HYP):
// surface_reflectance (or toa_radiance) Float32 (bands, rows, cols), its
// attributes wavelengths, fwhm, wavelengths_units and good_wavelengths,
// the grid's UTM placement from HDFEOS INFORMATION/StructMetadata.0, the
// pixels nodata_pixels flags as no-data, and beta_cloud_mask and
// beta_cirrus_mask as the product's masks. It takes f over.
func openTanager(name string, f *geo.MDFile) (*geo.Scene, error) {
	varName, rad := "surface_reflectance", reflectance01
	arr, err := f.Array(tanagerFields + "/" + varName)
	if errors.Is(err, geo.ErrNoArray) {
		varName, rad = "toa_radiance", spectral.Radiometry{Quantity: spectral.QuantityRadiance}
		arr, err = f.Array(tanagerFields + "/" + varName)
	}
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	in, err := describeTanager(name, f, arr, varName, rad)
	if err != nil {
		arr.Close()
		return nil, errors.Join(err, f.Close())
	}
	nb := in.Bands
	nodata := -9999.0
	if v, ok := arr.NoData(); ok {
		nodata = v
	}
	all := allBands(nb)
	layer := func(ds string) func() (*geo.Scene, error) {
		return func() (*geo.Scene, error) { return openTanagerLayer(name, in, ds) }
	}
	var invalid, masks []geo.QualityMaskSource
	if f.Has(tanagerFields + "/nodata_pixels") {
		invalid = append(invalid, geo.QualityMaskSource{Label: "Tanager nodata_pixels", Open: layer("nodata_pixels")})
	}
	for _, m := range []struct{ ds, label string }{{"beta_cloud_mask", "Tanager cloud mask"}, {"beta_cirrus_mask", "Tanager cirrus mask"}} {
		if f.Has(tanagerFields + "/" + m.ds) {
			masks = append(masks, geo.QualityMaskSource{Label: m.label, Open: layer(m.ds)})
		}
	}
	return geo.NewCubeScene(geo.Cube{Info: in, File: f,
		Arrays: []geo.CubeArray{{Array: arr, BandAxis: 0, RowAxis: 1, ColAxis: 2, Index: all, SceneBands: all}},
		NoData: constSlice(nb, nodata), Scale: constSlice(nb, 1), Offset: make([]float64, nb),
		QualityMasks: masks, Invalid: invalid})
}

// describeTanager is the Info of varName, arr, of f: size, product,
// radiometry rad, band set, grid and acquisition time.
func describeTanager(name string, f *geo.MDFile, arr *geo.MDArray, varName string, rad spectral.Radiometry) (geo.Info, error) {
	dims := arr.Dims()
	if len(dims) != 3 {
		return geo.Info{}, fmt.Errorf("%s has %d dimensions, want (bands, rows, cols)", varName, len(dims))
	}
	in := geo.Info{Name: name, Driver: "HDF5", Rows: dims[1], Cols: dims[2], Bands: dims[0], Product: ProductTanagerSR, DataType: "Float32", Radiometry: rad}
	if varName != "surface_reflectance" {
		in.Product = "Tanager ortho radiance"
		if u, ok := arr.Attr("units"); ok {
			in.Radiometry.Units = u.Text()
		}
	}
	if err := tanagerBandSet(&in, arr, varName); err != nil {
		return in, err
	}
	if err := placeTanagerGrid(&in, f, varName); err != nil {
		return in, err
	}
	t, err := tanagerStartTime(f)
	if err != nil {
		return in, err
	}
	if t != "" {
		in.Metadata = map[string]string{"ACQUISITIONDATETIME": t}
	}
	return in, nil
}

// tanagerBandSet sets in's centres, widths and bad bands from varName's
// attributes wavelengths, fwhm (in wavelengths_units, nm when absent) and
// good_wavelengths, each with one value per band or absent.
func tanagerBandSet(in *geo.Info, arr *geo.MDArray, varName string) error {
	nb := in.Bands
	unit := "nm"
	if u, ok := arr.Attr("wavelengths_units"); ok && u.Text() != "" {
		unit = u.Text()
	}
	perBand := func(name string) ([]float64, error) {
		a, ok := arr.Attr(name)
		if !ok {
			return nil, nil
		}
		if len(a.Floats()) != nb {
			return nil, fmt.Errorf("%w: %s's attribute %s has %d values for %d bands", geo.ErrBandMetadata, varName, name, len(a.Floats()), nb)
		}
		return a.Floats(), nil
	}
	wl, err := perBand("wavelengths")
	if err == nil {
		err = geo.CheckCentres(wl, varName+"'s wavelengths")
	}
	fw, err2 := perBand("fwhm")
	if err == nil && err2 == nil {
		err = geo.CheckWidths(fw, varName+"'s fwhm")
	}
	gw, err3 := perBand("good_wavelengths")
	if err = errors.Join(err, err2, err3); err != nil {
		return err
	}
	if wl != nil {
		in.WavelengthsNM, in.WavelengthUnits, in.SpectralSource = geo.ToNM(wl, unit), unit, "Tanager dataset attributes"
	}
	if fw != nil {
		in.FWHMNM = geo.WidthsNM(fw, unit, in.WavelengthsNM)
	}
	in.BadBands = geo.BadBandsOf(gw)
	return nil
}

// placeTanagerGrid sets in's CRS and geotransform from StructMetadata.0's
// grid HYP, which must match varName's size, and the grid's epsg_code.
func placeTanagerGrid(in *geo.Info, f *geo.MDFile, varName string) error {
	sm, err := f.Array("/HDFEOS INFORMATION/StructMetadata.0")
	if err != nil {
		return fmt.Errorf("no HDFEOS INFORMATION/StructMetadata.0 to place the grid: %w", err)
	}
	odl, err := sm.ReadString()
	sm.Close()
	if err != nil {
		return err
	}
	g, err := geo.ParseHDFEOSGrid(odl, "HYP")
	if err != nil {
		return err
	}
	if g.XDim != in.Cols || g.YDim != in.Rows {
		return fmt.Errorf("StructMetadata grid HYP is %dx%d, %s %dx%d", g.XDim, g.YDim, varName, in.Cols, in.Rows)
	}
	// The grid's epsg_code attribute (Planet's ortho products carry one)
	// names the CRS outright; StructMetadata's ZoneCode is the fallback.
	epsg := g.EPSG
	if v, ok := f.GroupAttr("/HDFEOS/GRIDS/HYP", "epsg_code"); ok {
		if code, ok := v.Float(); ok && code > 1024 && code == math.Trunc(code) {
			epsg = int(code)
		}
	}
	if in.WKT, err = geo.WKTOfEPSG(epsg); err != nil {
		return err
	}
	in.GeoTransform, in.HasGeoTransform = g.GeoTransform(), true
	return nil
}

// maxTimeValues bounds the per-pixel time array tanagerStartTime reads
// (8 bytes each).
const maxTimeValues = 64 << 20

// tanagerStartTime is the earliest of an ortho product's per-pixel
// acquisition times (Data Fields/time: seconds since 1970 UTC, per
// Planet's Tanager product specification), as RFC 3339; "" when the file
// has no such field or no valid time in it.
func tanagerStartTime(f *geo.MDFile) (string, error) {
	a, err := f.Array(tanagerFields + "/time")
	if errors.Is(err, geo.ErrNoArray) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer a.Close()
	dims := a.Dims()
	if len(dims) != 2 || dims[0]*dims[1] == 0 || dims[0]*dims[1] > maxTimeValues {
		return "", nil
	}
	buf, err := a.Float64s()
	if err != nil {
		return "", err
	}
	fill, hasFill := a.NoData()
	first := math.Inf(1)
	for _, v := range buf {
		// Fill values and no-data pixels: 0 or negative, or NaN.
		if v > 0 && v < first && !(hasFill && v == fill) {
			first = v
		}
	}
	if math.IsInf(first, 1) {
		return "", nil
	}
	sec, frac := math.Modf(first)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format(time.RFC3339Nano), nil
}

// openTanagerLayer opens a 2-D layer of a Tanager file on its grid (a
// mask) as a one-band scene.
func openTanagerLayer(name string, grid geo.Info, ds string) (*geo.Scene, error) {
	f, err := geo.OpenMD(name)
	if err != nil {
		return nil, err
	}
	arr, err := f.Array(tanagerFields + "/" + ds)
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if dims := arr.Dims(); len(dims) != 2 || dims[0] != grid.Rows || dims[1] != grid.Cols {
		arr.Close()
		return nil, errors.Join(fmt.Errorf("%s is %v, not the %dx%d grid", ds, dims, grid.Rows, grid.Cols), f.Close())
	}
	in := geo.Info{Name: name + ":" + ds, Driver: "HDF5", Rows: grid.Rows, Cols: grid.Cols, Bands: 1, GeoRef: grid.GeoRef, HasGeoTransform: grid.HasGeoTransform}
	return geo.NewCubeScene(geo.Cube{Info: in, File: f,
		Arrays: []geo.CubeArray{{Array: arr, BandAxis: -1, RowAxis: 0, ColAxis: 1, Index: []int{0}, SceneBands: []int{0}}},
		NoData: []float64{math.NaN()}, Scale: []float64{1}, Offset: []float64{0}})
}
