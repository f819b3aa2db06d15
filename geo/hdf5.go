package geo

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pnec/pnec/spectral"
)

// openHDF5 recognises and opens the HDF5 deliveries: PRISMA L2D (HDF-EOS5
// swaths) and Planet Tanager ortho products (HDF-EOS5 grid).
func openHDF5(name string) (*Scene, bool, error) {
	lower := strings.ToLower(name)
	if !strings.HasSuffix(lower, ".he5") && !strings.HasSuffix(lower, ".h5") && !strings.HasSuffix(lower, ".hdf5") && !strings.HasSuffix(lower, ".hdf") {
		return nil, false, nil
	}
	f, err := openMD(name)
	if err != nil {
		return nil, false, nil
	}
	var s *Scene
	switch {
	case f.has(prismaSwath + "/Data Fields/VNIR_Cube"):
		s, err = openPRISMA(name, f)
	case f.has(tanagerFields+"/surface_reflectance") || f.has(tanagerFields+"/toa_radiance"):
		s, err = openTanager(name, f)
	default:
		for _, lv := range []string{"PRS_L1_HCO", "PRS_L2B_HCO", "PRS_L2C_HCO"} {
			if f.has("/HDFEOS/SWATHS/" + lv + "/Data Fields/VNIR_Cube") {
				f.close()
				return nil, true, fmt.Errorf("open %s: a PRISMA %s product (sensor geometry); pnec reads L2D (geocoded reflectance)", name, strings.TrimSuffix(strings.TrimPrefix(lv, "PRS_"), "_HCO"))
			}
		}
		f.close()
		return nil, false, nil
	}
	if err != nil {
		f.close()
		return nil, true, fmt.Errorf("open %s: %w", name, err)
	}
	return s, true, nil
}

const prismaSwath = "/HDFEOS/SWATHS/PRS_L2D_HCO"

// openPRISMA reads a PRISMA L2D file (ASI's HDF-EOS5): VNIR_Cube and
// SWIR_Cube are UInt16 stored (rows, bands, cols), bands in descending
// wavelength order; the root attributes List_Cw_Vnir/Swir and
// List_Fwhm_Vnir/Swir give centres and widths (0 for a band not in use,
// List_Cw_*_Flags 0 for one flagged), L2ScaleVnir/SwirMin and Max the
// linear DN-to-reflectance scale (reflectance = Min + DN x (Max - Min) /
// 65535), Epsg_Code and Product_UL/LRcorner_easting/northing the UTM grid
// (the corner pixels' centres). A pixel whose DN is 0 in every band is
// no-data.
func openPRISMA(name string, f *mdFile) (*Scene, error) {
	parts, bands, rows, cols, err := readPRISMACubes(f)
	if err != nil {
		return nil, err
	}
	// Ascending wavelength: both cubes are stored descending, and the
	// SWIR's first bands overlap the VNIR's last.
	sort.SliceStable(bands, func(i, j int) bool { return bands[i].c < bands[j].c })
	n := len(bands)
	if n == 0 {
		closeMDParts(parts)
		return nil, errors.New("no band in use (List_Cw_Vnir and List_Cw_Swir are all 0)")
	}
	in := Info{Name: name, Driver: "HDF5", Rows: rows, Cols: cols, Bands: n, Product: ProductPRISMAL2D, DataType: "UInt16",
		SpectralSource: "PRISMA List_Cw/List_Fwhm attributes", WavelengthUnits: "nm", Radiometry: reflectance01}
	scale, offset := placePRISMABands(&in, bands, parts)
	placePRISMAGrid(&in, f)
	if t, ok := f.groupAttr("/", "Product_StartTime"); ok && t.str != "" {
		in.Metadata = map[string]string{"ACQUISITIONDATETIME": t.str}
	}
	var used []mdPart
	for _, pt := range parts {
		if len(pt.scene) > 0 {
			used = append(used, pt)
		} else {
			pt.arr.close()
		}
	}
	cube, err := newMDCube(f, n, used)
	if err != nil {
		closeMDParts(used)
		return nil, err
	}
	s, err := newCubeScene(in, cube, constSlice(n, 0), scale, offset)
	if err != nil {
		return nil, err
	}
	s.nodataAll = true // DN 0 in every band
	return s, nil
}

// prismaBand is one PRISMA band slot in use: its centre and width in nm,
// whether List_Cw_*_Flags flags it, where it is stored (cube part and
// slot) and its DN-to-reflectance scale and offset.
type prismaBand struct {
	c, w      float64
	bad       bool
	part, idx int
	scale, of float64
}

// closeMDParts closes the arrays of parts.
func closeMDParts(parts []mdPart) {
	for _, pt := range parts {
		pt.arr.close()
	}
}

// readPRISMACubes opens VNIR_Cube and SWIR_Cube (one part each, in that
// order) and lists their bands in use in storage order, with the cubes'
// common rows and cols. On error it has closed what it opened.
func readPRISMACubes(f *mdFile) (parts []mdPart, bands []prismaBand, rows, cols int, err error) {
	rows, cols = -1, -1
	for p, d := range []struct{ cube, key string }{{"VNIR_Cube", "Vnir"}, {"SWIR_Cube", "Swir"}} {
		arr, err := f.array(prismaSwath + "/Data Fields/" + d.cube)
		if err != nil {
			closeMDParts(parts)
			return nil, nil, 0, 0, err
		}
		parts = append(parts, mdPart{arr: arr, bandAxis: 1, rowAxis: 0, colAxis: 2})
		if len(arr.dims) != 3 || (rows >= 0 && (arr.dims[0] != rows || arr.dims[2] != cols)) {
			closeMDParts(parts)
			return nil, nil, 0, 0, fmt.Errorf("%s has dimensions %v, want (rows, bands, cols) like the other cube", d.cube, arr.dims)
		}
		rows, cols = arr.dims[0], arr.dims[2]
		det, err := prismaDetectorBands(f, d.cube, d.key, p, arr.dims[1])
		if err != nil {
			closeMDParts(parts)
			return nil, nil, 0, 0, err
		}
		bands = append(bands, det...)
	}
	return parts, bands, rows, cols, nil
}

// prismaDetectorBands lists the slots in use of cube (stored as part,
// with nb slots) from the root attributes named by key (Vnir or Swir):
// centres, widths, flags and the L2Scale reflectance range.
func prismaDetectorBands(f *mdFile, cube, key string, part, nb int) ([]prismaBand, error) {
	cw, _ := f.groupAttr("/", "List_Cw_"+key)
	fw, _ := f.groupAttr("/", "List_Fwhm_"+key)
	fl, hasFlags := f.groupAttr("/", "List_Cw_"+key+"_Flags")
	if len(cw.floats()) != nb || (len(fw.floats()) != 0 && len(fw.floats()) != nb) {
		return nil, fmt.Errorf("List_Cw_%s lists %d centres (and %d widths) for the %d bands of %s", key, len(cw.floats()), len(fw.floats()), nb, cube)
	}
	mn, mx, err := prismaScale(f, key)
	if err != nil {
		return nil, err
	}
	var bands []prismaBand
	for i, c := range cw.floats() {
		if c == 0 {
			continue // a band not in use
		}
		if !positiveFinite(c) {
			return nil, fmt.Errorf("%w: List_Cw_%s gives slot %d of %s the wavelength %s; a band centre is a positive number (0 for a slot not in use)", ErrBandMetadata, key, i+1, cube, fmtValue(c))
		}
		b := prismaBand{c: c, w: math.NaN(), part: part, idx: i, scale: (mx - mn) / 65535, of: mn}
		if len(fw.floats()) > i {
			b.w = fw.floats()[i]
			if !(b.w >= 0) || math.IsInf(b.w, 0) {
				return nil, fmt.Errorf("%w: List_Fwhm_%s gives slot %d of %s the FWHM %s; a band width is a positive number", ErrBandMetadata, key, i+1, cube, fmtValue(b.w))
			}
		}
		if hasFlags && len(fl.floats()) > i && fl.floats()[i] == 0 {
			b.bad = true
		}
		bands = append(bands, b)
	}
	return bands, nil
}

// prismaScale reads L2Scale<key>Min and Max, the reflectance of DN 0 and
// DN 65535; 0 and 1 when either is missing.
func prismaScale(f *mdFile, key string) (mn, mx float64, err error) {
	lo, okLo := f.groupAttr("/", "L2Scale"+key+"Min")
	hi, okHi := f.groupAttr("/", "L2Scale"+key+"Max")
	mn, _ = lo.float()
	mx, ok := hi.float()
	if !okLo || !okHi || !ok {
		return 0, 1, nil
	}
	if math.IsNaN(mn) || math.IsInf(mn, 0) || !(mx > mn) || math.IsInf(mx, 0) {
		return 0, 0, fmt.Errorf("%w: L2Scale%sMin %.7g and L2Scale%sMax %.7g: the reflectance of DN 0 and DN 65535, want Min < Max", ErrBandMetadata, key, mn, key, mx)
	}
	return mn, mx, nil
}

// placePRISMABands gives scene band k (bands in scene order) its centre,
// width and bad-band flag in in, its slot in its part, and returns the
// bands' scales and offsets.
func placePRISMABands(in *Info, bands []prismaBand, parts []mdPart) (scale, offset []float64) {
	n := len(bands)
	scale, offset = make([]float64, n), make([]float64, n)
	in.WavelengthsNM, in.FWHMNM = make([]float64, n), make([]float64, n)
	for k, b := range bands {
		in.WavelengthsNM[k], in.FWHMNM[k], scale[k], offset[k] = b.c, b.w, b.scale, b.of
		parts[b.part].index = append(parts[b.part].index, b.idx)
		parts[b.part].scene = append(parts[b.part].scene, k)
		if b.bad {
			if in.BadBands == nil {
				in.BadBands = make([]bool, n)
			}
			in.BadBands[k] = true
		}
	}
	return scale, offset
}

// placePRISMAGrid sets in's UTM grid from Epsg_Code and the corner pixels'
// centres; in stays ungeoreferenced when any of them is missing.
func placePRISMAGrid(in *Info, f *mdFile) {
	epsg, ok := f.groupAttr("/", "Epsg_Code")
	if !ok {
		return
	}
	rows, cols := in.Rows, in.Cols
	code, _ := epsg.float()
	ul, okUL := prismaCorner(f, "UL")
	lr, okLR := prismaCorner(f, "LR")
	if w, err := wktOfEPSG(int(code)); err == nil && okUL && okLR && cols > 1 && rows > 1 {
		// The corners are the corner pixels' centres: the grid's outer
		// corner is half a pixel further out.
		px, py := (lr[0]-ul[0])/float64(cols-1), (ul[1]-lr[1])/float64(rows-1)
		in.GeoTransform = [6]float64{ul[0] - px/2, px, 0, ul[1] + py/2, 0, -py}
		in.HasGeoTransform, in.WKT = true, w
	}
}

// prismaCorner reads Product_<c>corner_easting/northing.
func prismaCorner(f *mdFile, c string) ([2]float64, bool) {
	e, okE := f.groupAttr("/", "Product_"+c+"corner_easting")
	n, okN := f.groupAttr("/", "Product_"+c+"corner_northing")
	x, okX := e.float()
	y, okY := n.float()
	return [2]float64{x, y}, okE && okN && okX && okY
}

const tanagerFields = "/HDFEOS/GRIDS/HYP/Data Fields"

// openTanager reads a Planet Tanager ortho product (HDF-EOS5 grid HYP):
// surface_reflectance (or toa_radiance) Float32 (bands, rows, cols), its
// attributes wavelengths, fwhm, wavelengths_units and good_wavelengths,
// the grid's UTM placement from HDFEOS INFORMATION/StructMetadata.0, the
// pixels nodata_pixels flags as no-data, and beta_cloud_mask and
// beta_cirrus_mask as the product's masks.
func openTanager(name string, f *mdFile) (*Scene, error) {
	varName, rad := "surface_reflectance", reflectance01
	arr, err := f.array(tanagerFields + "/" + varName)
	if errors.Is(err, errNoArray) {
		varName, rad = "toa_radiance", spectral.Radiometry{Quantity: spectral.QuantityRadiance}
		arr, err = f.array(tanagerFields + "/" + varName)
	}
	if err != nil {
		return nil, err
	}
	if len(arr.dims) != 3 {
		arr.close()
		return nil, fmt.Errorf("%s has %d dimensions, want (bands, rows, cols)", varName, len(arr.dims))
	}
	nb, rows, cols := arr.dims[0], arr.dims[1], arr.dims[2]
	in := Info{Name: name, Driver: "HDF5", Rows: rows, Cols: cols, Bands: nb, Product: ProductTanagerSR, DataType: "Float32", Radiometry: rad}
	if varName != "surface_reflectance" {
		in.Product = "Tanager ortho radiance"
		if u, ok := arr.attr("units"); ok {
			in.Radiometry.Units = u.str
		}
	}
	if err := tanagerBandSet(&in, arr, varName); err != nil {
		arr.close()
		return nil, err
	}
	if err := placeTanagerGrid(&in, f, varName); err != nil {
		arr.close()
		return nil, err
	}
	if t, err := tanagerStartTime(f); err != nil {
		arr.close()
		return nil, err
	} else if t != "" {
		in.Metadata = map[string]string{"ACQUISITIONDATETIME": t}
	}
	nodata := -9999.0
	if arr.hasNoData {
		nodata = arr.nodata
	}
	cube, err := newMDCube(f, nb, []mdPart{{arr: arr, bandAxis: 0, rowAxis: 1, colAxis: 2, index: allBands(nb), scene: allBands(nb)}})
	if err != nil {
		arr.close()
		return nil, err
	}
	s, err := newCubeScene(in, cube, constSlice(nb, nodata), constSlice(nb, 1), constSlice(nb, 0))
	if err != nil {
		return nil, err
	}
	if err := addTanagerMasks(s, name, in, f); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// tanagerBandSet sets in's centres, widths and bad bands from varName's
// attributes wavelengths, fwhm (in wavelengths_units, nm when absent) and
// good_wavelengths, each with one value per band or absent.
func tanagerBandSet(in *Info, arr *mdArray, varName string) error {
	nb := in.Bands
	unit := "nm"
	if u, ok := arr.attr("wavelengths_units"); ok && u.str != "" {
		unit = u.str
	}
	perBand := func(name string) ([]float64, error) {
		a, ok := arr.attr(name)
		if !ok {
			return nil, nil
		}
		if len(a.floats()) != nb {
			return nil, fmt.Errorf("%w: %s's attribute %s has %d values for %d bands", ErrBandMetadata, varName, name, len(a.floats()), nb)
		}
		return a.floats(), nil
	}
	wl, err := perBand("wavelengths")
	if err == nil {
		err = checkCentres(wl, varName+"'s wavelengths")
	}
	fw, err2 := perBand("fwhm")
	if err == nil && err2 == nil {
		err = checkWidths(fw, varName+"'s fwhm")
	}
	gw, err3 := perBand("good_wavelengths")
	if err = errors.Join(err, err2, err3); err != nil {
		return err
	}
	if wl != nil {
		in.WavelengthsNM, in.WavelengthUnits, in.SpectralSource = toNM(wl, unit), unit, "Tanager dataset attributes"
	}
	if fw != nil {
		in.FWHMNM = widthsNM(fw, unit, in.WavelengthsNM)
	}
	in.BadBands = badFromBBL(gw)
	return nil
}

// placeTanagerGrid sets in's CRS and geotransform from StructMetadata.0's
// grid HYP, which must match varName's size, and the grid's epsg_code.
func placeTanagerGrid(in *Info, f *mdFile, varName string) error {
	sm, err := f.array("/HDFEOS INFORMATION/StructMetadata.0")
	if err != nil {
		return fmt.Errorf("no HDFEOS INFORMATION/StructMetadata.0 to place the grid: %w", err)
	}
	odl, err := sm.readString()
	sm.close()
	if err != nil {
		return err
	}
	g, err := parseHEGrid(odl, "HYP")
	if err != nil {
		return err
	}
	if g.XDim != in.Cols || g.YDim != in.Rows {
		return fmt.Errorf("StructMetadata grid HYP is %dx%d, %s %dx%d", g.XDim, g.YDim, varName, in.Cols, in.Rows)
	}
	// The grid's epsg_code attribute (Planet's ortho products carry one)
	// names the CRS outright; StructMetadata's ZoneCode is the fallback.
	epsg := g.EPSG
	if v, ok := f.groupAttr("/HDFEOS/GRIDS/HYP", "epsg_code"); ok {
		if code, ok := v.float(); ok && code > 1024 && code == math.Trunc(code) {
			epsg = int(code)
		}
	}
	if in.WKT, err = wktOfEPSG(epsg); err != nil {
		return err
	}
	in.GeoTransform, in.HasGeoTransform = g.geoTransform(), true
	return nil
}

// addTanagerMasks applies nodata_pixels as s's no-data and registers
// beta_cloud_mask and beta_cirrus_mask as the product's quality masks,
// each opened on grid (s's Info) when asked for.
func addTanagerMasks(s *Scene, name string, grid Info, f *mdFile) error {
	layer := func(ds string) func() (*Scene, error) {
		return func() (*Scene, error) { return openTanagerLayer(name, grid, ds) }
	}
	if f.has(tanagerFields + "/nodata_pixels") {
		ms, err := layer("nodata_pixels")()
		if err == nil {
			err = s.addQualityMaskScene(ms, "Tanager nodata_pixels", nil)
		}
		if err != nil {
			return err
		}
	}
	for _, m := range []struct{ ds, label string }{{"beta_cloud_mask", "Tanager cloud mask"}, {"beta_cirrus_mask", "Tanager cirrus mask"}} {
		if f.has(tanagerFields + "/" + m.ds) {
			s.productQualityMasks = append(s.productQualityMasks, productQualityMask{label: m.label, open: layer(m.ds)})
		}
	}
	return nil
}

// maxTimeValues bounds the per-pixel time array tanagerStartTime reads
// (8 bytes each).
const maxTimeValues = 64 << 20

// tanagerStartTime is the earliest of an ortho product's per-pixel
// acquisition times (Data Fields/time: seconds since 1970 UTC, per
// Planet's Tanager product specification), as RFC 3339; "" when the file
// has no such field or no valid time in it.
func tanagerStartTime(f *mdFile) (string, error) {
	a, err := f.array(tanagerFields + "/time")
	if errors.Is(err, errNoArray) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer a.close()
	if len(a.dims) != 2 || a.dims[0]*a.dims[1] == 0 || a.dims[0]*a.dims[1] > maxTimeValues {
		return "", nil
	}
	buf := make([]float64, a.dims[0]*a.dims[1])
	if err := a.readF64([]int{0, 0}, a.dims, nil, buf); err != nil {
		return "", err
	}
	first := math.Inf(1)
	for _, v := range buf {
		// Fill values and no-data pixels: 0 or negative, or NaN.
		if v > 0 && v < first && !(a.hasNoData && v == a.nodata) {
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
func openTanagerLayer(name string, grid Info, ds string) (*Scene, error) {
	f, err := openMD(name)
	if err != nil {
		return nil, err
	}
	arr, err := f.array(tanagerFields + "/" + ds)
	if err != nil {
		f.close()
		return nil, err
	}
	if len(arr.dims) != 2 || arr.dims[0] != grid.Rows || arr.dims[1] != grid.Cols {
		arr.close()
		f.close()
		return nil, fmt.Errorf("%s is %v, not the %dx%d grid", ds, arr.dims, grid.Rows, grid.Cols)
	}
	cube, err := newMDCube(f, 1, []mdPart{{arr: arr, bandAxis: -1, rowAxis: 0, colAxis: 1, index: []int{0}, scene: []int{0}}})
	if err != nil {
		arr.close()
		f.close()
		return nil, err
	}
	in := Info{Name: name + ":" + ds, Driver: "HDF5", Rows: grid.Rows, Cols: grid.Cols, Bands: 1, GeoRef: grid.GeoRef, HasGeoTransform: grid.HasGeoTransform}
	return newCubeScene(in, cube, []float64{math.NaN()}, []float64{1}, []float64{0})
}
