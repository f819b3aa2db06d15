package geo

import (
	"errors"
	"fmt"
	"sync"
)

// What a sensor reader outside geo (package sensors) builds on. geo stays
// the one door to GDAL: a reader recognises its deliveries and describes
// them in plain data (Info, band lists, quality mask sources), and geo opens
// and reads the files. Open reaches the readers through one set of hooks
// (ProductHooks), which package sensors installs; geo itself knows no
// sensor (internal/archtest's TestGeoNamesNoSensor holds it to that).

// ProductHooks are the entry points of the sensor readers, all outside geo.
// Any of them may be nil (without package sensors loaded, Open reads plain
// rasters only).
type ProductHooks struct {
	// Open opens name when it is a delivery read through its own cube
	// (NewCubeScene) or one raster of a folder (OpenAs); ok false when no
	// reader recognises it (GDAL then opens it as a raster). Open tries it
	// first.
	Open func(name string) (s *Scene, ok bool, err error)
	// Describe completes in, what GDAL read of a raster as it is (Name,
	// Driver, size, the band set of the raster's own metadata), when it is
	// a delivery a reader recognises: the product's name, band set,
	// radiometry, gains (Scale, Offset), no-data (NoData, HasNoData) and
	// acquisition time (Metadata), and the quality masks the delivery
	// brings; ok false when none does. It runs after geo read an ENVI
	// header beside a local GeoTIFF (ReadENVIHeaderBeside).
	Describe func(in *Info) (masks []QualityMaskSource, ok bool, err error)
	// Companion reports whether a file name (no folder) is a file of a
	// delivery that belongs to another file's scene (a mask, a quicklook)
	// rather than a scene of its own (IsCompanion).
	Companion func(base string) bool
	// Delivery reports whether a folder or archive (not one raster file)
	// is a delivery Open reads as one scene (IsDelivery).
	Delivery func(path string) bool
}

var (
	productHooksMu sync.RWMutex
	productHooks   ProductHooks
)

// SetProductHooks installs the sensor readers' hooks (package sensors does,
// when it is loaded); a later call replaces them.
func SetProductHooks(h ProductHooks) {
	productHooksMu.Lock()
	defer productHooksMu.Unlock()
	productHooks = h
}

func hooks() ProductHooks {
	productHooksMu.RLock()
	defer productHooksMu.RUnlock()
	return productHooks
}

// describeDelivery lets the hooks complete a raster GDAL opened (see
// ProductHooks.Describe) and takes the gains and no-data they set into the
// scene's reads.
func (s *Scene) describeDelivery(in *Info) error {
	h := hooks()
	if h.Describe == nil || in.Product != "" {
		return nil
	}
	masks, ok, err := h.Describe(in)
	if err != nil || !ok {
		return err
	}
	return s.takeDescription(in, masks)
}

// takeDescription takes what a sensor's Describe set in in (gains,
// no-data) and the quality masks it returned into s's reads; a reader
// that changed the number of bands is an error.
func (s *Scene) takeDescription(in *Info, masks []QualityMaskSource) error {
	n := len(s.scale)
	if in.Bands != n || len(in.Scale) != n || len(in.Offset) != n || len(in.NoData) != n || len(in.HasNoData) != n {
		return fmt.Errorf("%s reader changed the number of bands (%d)", in.Product, n)
	}
	s.takeGains(in)
	for _, m := range masks {
		s.productQualityMasks = append(s.productQualityMasks, m.source())
	}
	return nil
}

// QualityMaskSource is a quality mask a delivery brings beside its cube,
// which UseProductQualityMasks applies: a raster on the scene's grid where
// non-zero flags a pixel.
type QualityMaskSource struct {
	Label string // for messages and PNEC_QUALITY_MASKS: the mask and the flags applied
	Bands []int  // the mask's bands that flag pixels, 0-based; nil: band 1
	// PerBand: the mask has a plane per scene band (a defective-pixel
	// mask per spectral band); a read applies the planes of the good bands
	// it reads.
	PerBand bool
	// Open opens the mask (Open of its file, or a cube of its own).
	Open func() (*Scene, error)
}

func (m QualityMaskSource) source() productQualityMask {
	return productQualityMask{label: m.Label, bands: m.Bands, perBand: m.PerBand, open: m.Open}
}

// MDFile is a file opened through GDAL's multidimensional API (netCDF,
// HDF5), for a sensor reader outside geo: its arrays by full name
// ("/group/array").
type MDFile struct{ f *mdFile }

// OpenMD opens path in GDAL's multidimensional mode.
func OpenMD(path string) (*MDFile, error) {
	f, err := openMD(path)
	if err != nil {
		return nil, err
	}
	return &MDFile{f: f}, nil
}

// ErrNoArray is returned (wrapped) by MDFile.Array for an array the file
// does not have.
var ErrNoArray = errNoArray

// Close closes the file (not needed once NewCubeScene took it over).
func (f *MDFile) Close() error { return f.f.close() }

// Has reports whether the file has the array full.
func (f *MDFile) Has(full string) bool { return f.f.has(full) }

// Array opens the array full; ErrNoArray when the file has none.
func (f *MDFile) Array(full string) (*MDArray, error) {
	a, err := f.f.array(full)
	if err != nil {
		return nil, err
	}
	return &MDArray{a: a}, nil
}

// Vector reads the whole 1-D array full (a band table, coordinates) as
// float64.
func (f *MDFile) Vector(full string) ([]float64, error) {
	a, err := f.f.array(full)
	if err != nil {
		return nil, err
	}
	defer a.close()
	if len(a.dims) != 1 {
		return nil, fmt.Errorf("%s has %d dimensions, want 1", full, len(a.dims))
	}
	return a.readAllF64()
}

// MDArray is an open array of an MDFile.
type MDArray struct{ a *mdArray }

// Dims are the array's dimension sizes, in its axis order.
func (a *MDArray) Dims() []int { return append([]int(nil), a.a.dims...) }

// NoData is the array's fill value (_FillValue), ok false when it has none.
func (a *MDArray) NoData() (v float64, ok bool) { return a.a.nodata, a.a.hasNoData }

// AttrString is the array's string attribute name ("" and false when it
// has none or a numeric one).
func (a *MDArray) AttrString(name string) (string, bool) {
	v, ok := a.a.attr(name)
	return v.str, ok && !v.num
}

// Attr is the array's attribute name (numbers or a string); false when it
// has none.
func (a *MDArray) Attr(name string) (MDAttr, bool) {
	v, ok := a.a.attr(name)
	return MDAttr{a: v}, ok
}

// ReadString reads a scalar string array (HDF-EOS5's StructMetadata.0).
func (a *MDArray) ReadString() (string, error) { return a.a.readString() }

// Float64s reads the whole array as float64, in its axis order (the caller
// bounds its size by Dims).
func (a *MDArray) Float64s() ([]float64, error) {
	n := 1
	for _, d := range a.a.dims {
		n *= d
	}
	if n == 0 {
		return nil, nil
	}
	buf := make([]float64, n)
	if err := a.a.readF64(make([]int, len(a.a.dims)), append([]int(nil), a.a.dims...), nil, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// Close releases the array (not needed once NewCubeScene took it over).
func (a *MDArray) Close() { a.a.close() }

// GroupAttr is the attribute name of the group full ("/" for the root);
// false when the group or the attribute is missing.
func (f *MDFile) GroupAttr(full, name string) (MDAttr, bool) {
	v, ok := f.f.groupAttr(full, name)
	return MDAttr{a: v}, ok
}

// MDAttr is an attribute's value: numbers, or a string.
type MDAttr struct{ a mdAttr }

// Floats are the attribute's numbers (nil for a string attribute).
func (a MDAttr) Floats() []float64 { return a.a.floats() }

// Float is its single number; false when it has none or several.
func (a MDAttr) Float() (float64, bool) { return a.a.float() }

// Text is its string ("" for a numeric attribute).
func (a MDAttr) Text() string { return a.a.str }

// CubeArray is one array of a cube scene: which of its axes hold bands,
// rows and columns, and which scene bands come from which of its bands.
type CubeArray struct {
	Array                      *MDArray
	BandAxis, RowAxis, ColAxis int // BandAxis -1: a 2-D array, one band
	// Index[k] is the array band that scene band SceneBands[k] reads.
	Index, SceneBands []int
}

// Cube describes a scene read through GDAL's multidimensional API: Info
// (size, band set, georeference, product, radiometry, acquisition time in
// Metadata), the arrays that serve its bands (each scene band exactly
// once), and per band the fill value (NaN: none), scale and offset
// applied when reading; QualityMasks are the masks the delivery brings.
type Cube struct {
	Info                  Info
	File                  *MDFile
	Arrays                []CubeArray
	NoData, Scale, Offset []float64
	// NoDataAll: a pixel is no-data only when every band read holds its
	// fill value (a delivery whose fill value is also a valid sample).
	NoDataAll    bool
	QualityMasks []QualityMaskSource
	// Invalid are masks of the delivery's own no-data pixels, applied at
	// once (as AddQualityMask) rather than on request.
	Invalid []QualityMaskSource
	// Lookup, when set, makes Arrays a cube in sensor geometry (their
	// RowAxis and ColAxis the sensor's rows and columns) read on the
	// orthorectified grid of Info's size through a geometry lookup table.
	Lookup *GeometryLookup
}

// GeometryLookup is a geometry lookup table: two 2-D arrays (ortho rows,
// ortho columns) of Int32 that give each pixel of the orthorectified grid
// the sensor column (X) and row (Y) it sees, 1-based, 0 or less where no
// sensor pixel falls (read as NaN, invalid).
type GeometryLookup struct{ X, Y *MDArray }

// NewCubeScene makes the scene c describes. It takes the file and arrays
// over: the scene closes them, and NewCubeScene closes them when it fails.
func NewCubeScene(c Cube) (*Scene, error) {
	parts := make([]mdPart, len(c.Arrays))
	for i, a := range c.Arrays {
		parts[i] = mdPart{arr: a.Array.a, bandAxis: a.BandAxis, rowAxis: a.RowAxis, colAxis: a.ColAxis, index: a.Index, scene: a.SceneBands}
	}
	cube, err := newCube(c, parts)
	if err != nil {
		return nil, err
	}
	s, err := newCubeScene(c.Info, cube, c.NoData, c.Scale, c.Offset)
	if err != nil {
		return nil, errors.Join(err, cube.close())
	}
	s.nodataAll = c.NoDataAll
	for _, m := range c.Invalid {
		ms, err := m.Open()
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		if err := s.addQualityMaskScene(ms, m.Label, m.Bands); err != nil {
			return nil, errors.Join(err, ms.Close(), s.Close())
		}
	}
	for _, m := range c.QualityMasks {
		s.productQualityMasks = append(s.productQualityMasks, m.source())
	}
	return s, nil
}

// newCube is the reader of c's arrays, parts: straight, or through c's
// geometry lookup table. It closes c's file and arrays when it fails.
func newCube(c Cube, parts []mdPart) (cubeReader, error) {
	if c.Lookup == nil {
		cube, err := newMDCube(c.File.f, c.Info.Bands, parts)
		if err != nil {
			return nil, errors.Join(err, (&mdCube{file: c.File.f, parts: parts}).close())
		}
		return cube, nil
	}
	gx, gy := c.Lookup.X.a, c.Lookup.Y.a
	fail := func(err error) (cubeReader, error) {
		gx.close()
		gy.close()
		return nil, errors.Join(err, (&mdCube{file: c.File.f, parts: parts}).close())
	}
	if len(gx.dims) != 2 || len(gy.dims) != 2 || gx.dims[0] != gy.dims[0] || gx.dims[1] != gy.dims[1] {
		return fail(errors.New("the lookup table's X and Y are not one (ortho rows, ortho columns) grid"))
	}
	if len(parts) == 0 {
		return fail(errors.New("a cube with a lookup table and no array"))
	}
	src := parts[0].arr.dims
	inner, err := newMDCube(nil, c.Info.Bands, parts)
	if err != nil {
		return fail(err)
	}
	return &gltCube{file: c.File.f, inner: inner, gx: gx, gy: gy, srcRows: src[parts[0].rowAxis], srcCols: src[parts[0].colAxis]}, nil
}

// CheckCentres refuses band centres that are not positive numbers, naming
// the first such band and where they came from (ErrBandMetadata).
func CheckCentres(nm []float64, from string) error { return checkCentres(nm, from) }

// CheckWidths refuses band widths (FWHM) that are negative or not numbers
// (0 is "not known"), naming the band and where they came from.
func CheckWidths(nm []float64, from string) error { return checkWidths(nm, from) }

// BadBandsOf turns a good-band list (ENVI bbl, good_wavelengths: 0 = bad)
// into Info.BadBands (nil when every band is good).
func BadBandsOf(good []float64) []bool { return badFromBBL(good) }

// ParseNumberList parses a list of numbers, ENVI style ("{ 400.5, 410,
// 420 }": braces optional, commas or spaces between them).
func ParseNumberList(s string) ([]float64, error) { return parseNumberList(s) }

// ReadENVIHeaderBeside completes in, a GeoTIFF GDAL opened, from the ENVI
// header beside it (in.Name with .hdr or .HDR for its extension), when
// there is one: band centres and widths, bad bands, gains and offsets
// (when the TIFF has no scale of its own), no-data, band names and the
// reflectance scale factor, each only where in has none. Open reads it
// itself for a local GeoTIFF; on a network file system (IsRemote) looking
// for it costs requests, so a sensor whose deliveries carry one asks.
func ReadENVIHeaderBeside(in *Info) error { return readENVIHeaderBeside(in) }

// IsRemote reports whether a dataset name is on a network or custom GDAL
// file system (anything under /vsi but archives of local files), where
// each probe for a sidecar file is a request.
func IsRemote(name string) bool { return remotePath(name) }

// ToNM converts wavelengths given in unit to nanometres; with no (or an
// unknown) unit, values below 100 are taken as micrometres.
func ToNM(vals []float64, unit string) []float64 { return toNM(vals, unit) }

// WidthsNM converts band widths given in unit to nanometres; without a unit
// the centres' magnitude decides, as ToNM does for them.
func WidthsNM(vals []float64, unit string, centresNM []float64) []float64 {
	return widthsNM(vals, unit, centresNM)
}

// FormatValue writes a band value for a message as a header would ("nan",
// "-10").
func FormatValue(v float64) string { return fmtValue(v) }

// WKTOfEPSG is the WKT of the CRS of an EPSG code.
func WKTOfEPSG(code int) (string, error) { return wktOfEPSG(code) }

// HDFEOSGrid is the placement of an HDF-EOS5 grid, from its
// StructMetadata.0: size, outer corners in metres, EPSG code.
type HDFEOSGrid = heGrid

// ParseHDFEOSGrid reads the placement of the grid name from HDF-EOS5
// StructMetadata (ODL text); UTM grids (HE5_GCTP_UTM) are supported.
func ParseHDFEOSGrid(odl, name string) (HDFEOSGrid, error) { return parseHEGrid(odl, name) }

// GeoTransform is the grid's GDAL geotransform (corner convention).
func (g heGrid) GeoTransform() [6]float64 { return g.geoTransform() }

// Exists reports whether the file name exists (on any GDAL file system).
func Exists(name string) bool { return vsiExists(name) }

// ReadDir lists the names in the folder name, local or on a GDAL file
// system (a folder inside a /vsizip/ archive too); nil when it is none.
func ReadDir(name string) []string { return vsiReadDir(name) }

// IsDir reports whether name is a folder (a folder inside a ZIP too).
func IsDir(name string) bool { return vsiIsDir(name) }

// ReadFile reads the whole (small) file name, on any GDAL file system,
// refusing one of more than maxBytes.
func ReadFile(name string, maxBytes int64) ([]byte, error) { return vsiReadFile(name, maxBytes) }

// OpenAs opens the raster file (a GDAL dataset name) as the scene called
// name: a delivery whose cube is one file of a folder or archive.
func OpenAs(name, file string) (*Scene, error) { return openGDAL(name, file) }

// Redescribe lets describe complete the Info of a scene Open or OpenAs
// read as a raster, as a sensor's Describe does for a raster GDAL opened:
// product, band set, bad bands, radiometry, gains (Scale, Offset), no-data
// and acquisition time; later reads apply the gains and no-data it sets,
// and the quality masks it returns are the scene's product masks. It must
// not change the number of bands. An error from describe leaves the scene
// as it was only where describe changed nothing.
func (s *Scene) Redescribe(describe func(in *Info) ([]QualityMaskSource, error)) error {
	masks, err := describe(&s.info)
	if err != nil {
		return err
	}
	if err := s.takeDescription(&s.info, masks); err != nil {
		return err
	}
	s.setSpecs()
	return nil
}

// ReadSample reads every band of the whole scene, sampled (nearest) on a
// grid of cols x rows pixels, as stored after gains (no-data values as
// they are, not marked): pixel-interleaved, Bands values per pixel. A
// sensor judges its data by it (bands that hold no data anywhere).
func (s *Scene) ReadSample(cols, rows int) ([]float32, error) {
	data := make([]float32, cols*rows*s.info.Bands)
	if err := s.readPixels(&s.all, Window{Cols: s.info.Cols, Rows: s.info.Rows}, cols, rows, data, cols); err != nil {
		return nil, tidy(err)
	}
	return data, nil
}
