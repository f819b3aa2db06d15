package sensors

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pnec/pnec/geo"
)

// PRISMA (ASI): L2D geocoded reflectance as HDF-EOS5 (PRS_L2D_..._HCO
// swath), which GDAL cannot read as one raster: this reader builds its
// cube through geo's multidimensional API. docs/sensors.md says what is
// verified; the fixture is internal/fixture's WritePRISMA.

// ProductPRISMAL2D is the product name (geo.Info.Product) of PRISMA's L2D
// deliveries.
const ProductPRISMAL2D = "PRISMA L2D"

func init() { Register(prisma{}) }

type prisma struct{}

var _ Sensor = prisma{}

const prismaSwath = "/HDFEOS/SWATHS/PRS_L2D_HCO"

func (prisma) Name() string { return "PRISMA" }

// Companion: a PRISMA delivery is one file.
func (prisma) Companion(string) bool { return false }

// Describe: a PRISMA delivery is no raster GDAL opens as it is.
func (prisma) Describe(*geo.Info) ([]geo.QualityMaskSource, bool, error) { return nil, false, nil }

// Open recognises an HDF5 file by its extension and its L2D VNIR cube,
// and reads it; PRISMA's other levels (sensor geometry) are refused by
// name.
func (prisma) Open(name string) (*geo.Scene, bool, error) {
	if !isHDF5Name(name) {
		return nil, false, nil
	}
	f, err := geo.OpenMD(name)
	if err != nil {
		return nil, false, nil // GDAL's own open reports what is wrong
	}
	if !f.Has(prismaSwath + "/Data Fields/VNIR_Cube") {
		for _, lv := range []string{"PRS_L1_HCO", "PRS_L2B_HCO", "PRS_L2C_HCO"} {
			if f.Has("/HDFEOS/SWATHS/" + lv + "/Data Fields/VNIR_Cube") {
				return nil, true, errors.Join(fmt.Errorf("open %s: a PRISMA %s product (sensor geometry); pnec reads L2D (geocoded reflectance)", name, strings.TrimSuffix(strings.TrimPrefix(lv, "PRS_"), "_HCO")), f.Close())
			}
		}
		f.Close()
		return nil, false, nil
	}
	s, err := openPRISMA(name, f)
	if err != nil {
		return nil, true, fmt.Errorf("open %s: %w", name, err)
	}
	return s, true, nil
}

// openPRISMA reads a PRISMA L2D file (ASI's HDF-EOS5): VNIR_Cube and
// SWIR_Cube are UInt16 stored (rows, bands, cols), bands in descending
// wavelength order; the root attributes List_Cw_Vnir/Swir and
// List_Fwhm_Vnir/Swir give centres and widths (0 for a band not in use,
// List_Cw_*_Flags 0 for one flagged), L2ScaleVnir/SwirMin and Max the
// linear DN-to-reflectance scale (reflectance = Min + DN x (Max - Min) /
// 65535), Epsg_Code and Product_UL/LRcorner_easting/northing the UTM grid
// (the corner pixels' centres). A pixel whose DN is 0 in every band is
// no-data. It takes f over.
func openPRISMA(name string, f *geo.MDFile) (*geo.Scene, error) {
	parts, bands, rows, cols, err := readPRISMACubes(f)
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	// Ascending wavelength: both cubes are stored descending, and the
	// SWIR's first bands overlap the VNIR's last.
	sort.SliceStable(bands, func(i, j int) bool { return bands[i].c < bands[j].c })
	n := len(bands)
	if n == 0 {
		closeArrays(parts)
		return nil, errors.Join(errors.New("no band in use (List_Cw_Vnir and List_Cw_Swir are all 0)"), f.Close())
	}
	in := geo.Info{Name: name, Driver: "HDF5", Rows: rows, Cols: cols, Bands: n, Product: ProductPRISMAL2D, DataType: "UInt16",
		SpectralSource: "PRISMA List_Cw/List_Fwhm attributes", WavelengthUnits: "nm", Radiometry: reflectance01}
	scale, offset := placePRISMABands(&in, bands, parts)
	placePRISMAGrid(&in, f)
	if t, ok := f.GroupAttr("/", "Product_StartTime"); ok && t.Text() != "" {
		in.Metadata = map[string]string{"ACQUISITIONDATETIME": t.Text()}
	}
	var used []geo.CubeArray
	for _, pt := range parts {
		if len(pt.SceneBands) > 0 {
			used = append(used, pt)
		} else {
			pt.Array.Close()
		}
	}
	return geo.NewCubeScene(geo.Cube{Info: in, File: f, Arrays: used,
		NoData: make([]float64, n), Scale: scale, Offset: offset, NoDataAll: true}) // DN 0 in every band
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

// closeArrays closes the arrays of parts.
func closeArrays(parts []geo.CubeArray) {
	for _, pt := range parts {
		pt.Array.Close()
	}
}

// readPRISMACubes opens VNIR_Cube and SWIR_Cube (one part each, in that
// order) and lists their bands in use in storage order, with the cubes'
// common rows and cols. On error it has closed what it opened.
func readPRISMACubes(f *geo.MDFile) (parts []geo.CubeArray, bands []prismaBand, rows, cols int, err error) {
	rows, cols = -1, -1
	for p, d := range []struct{ cube, key string }{{"VNIR_Cube", "Vnir"}, {"SWIR_Cube", "Swir"}} {
		arr, err := f.Array(prismaSwath + "/Data Fields/" + d.cube)
		if err != nil {
			closeArrays(parts)
			return nil, nil, 0, 0, err
		}
		parts = append(parts, geo.CubeArray{Array: arr, BandAxis: 1, RowAxis: 0, ColAxis: 2})
		dims := arr.Dims()
		if len(dims) != 3 || (rows >= 0 && (dims[0] != rows || dims[2] != cols)) {
			closeArrays(parts)
			return nil, nil, 0, 0, fmt.Errorf("%s has dimensions %v, want (rows, bands, cols) like the other cube", d.cube, dims)
		}
		rows, cols = dims[0], dims[2]
		det, err := prismaDetectorBands(f, d.cube, d.key, p, dims[1])
		if err != nil {
			closeArrays(parts)
			return nil, nil, 0, 0, err
		}
		bands = append(bands, det...)
	}
	return parts, bands, rows, cols, nil
}

// prismaDetectorBands lists the slots in use of cube (stored as part,
// with nb slots) from the root attributes named by key (Vnir or Swir):
// centres, widths, flags and the L2Scale reflectance range.
func prismaDetectorBands(f *geo.MDFile, cube, key string, part, nb int) ([]prismaBand, error) {
	cw, _ := f.GroupAttr("/", "List_Cw_"+key)
	fw, _ := f.GroupAttr("/", "List_Fwhm_"+key)
	fl, hasFlags := f.GroupAttr("/", "List_Cw_"+key+"_Flags")
	if len(cw.Floats()) != nb || (len(fw.Floats()) != 0 && len(fw.Floats()) != nb) {
		return nil, fmt.Errorf("List_Cw_%s lists %d centres (and %d widths) for the %d bands of %s", key, len(cw.Floats()), len(fw.Floats()), nb, cube)
	}
	mn, mx, err := prismaScale(f, key)
	if err != nil {
		return nil, err
	}
	var bands []prismaBand
	for i, c := range cw.Floats() {
		if c == 0 {
			continue // a band not in use
		}
		if !(c > 0) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("%w: List_Cw_%s gives slot %d of %s the wavelength %s; a band centre is a positive number (0 for a slot not in use)", geo.ErrBandMetadata, key, i+1, cube, geo.FormatValue(c))
		}
		b := prismaBand{c: c, w: math.NaN(), part: part, idx: i, scale: (mx - mn) / 65535, of: mn}
		if len(fw.Floats()) > i {
			b.w = fw.Floats()[i]
			if !(b.w >= 0) || math.IsInf(b.w, 0) {
				return nil, fmt.Errorf("%w: List_Fwhm_%s gives slot %d of %s the FWHM %s; a band width is a positive number", geo.ErrBandMetadata, key, i+1, cube, geo.FormatValue(b.w))
			}
		}
		if hasFlags && len(fl.Floats()) > i && fl.Floats()[i] == 0 {
			b.bad = true
		}
		bands = append(bands, b)
	}
	return bands, nil
}

// prismaScale reads L2Scale<key>Min and Max, the reflectance of DN 0 and
// DN 65535; 0 and 1 when either is missing.
func prismaScale(f *geo.MDFile, key string) (mn, mx float64, err error) {
	lo, okLo := f.GroupAttr("/", "L2Scale"+key+"Min")
	hi, okHi := f.GroupAttr("/", "L2Scale"+key+"Max")
	mn, _ = lo.Float()
	mx, ok := hi.Float()
	if !okLo || !okHi || !ok {
		return 0, 1, nil
	}
	if math.IsNaN(mn) || math.IsInf(mn, 0) || !(mx > mn) || math.IsInf(mx, 0) {
		return 0, 0, fmt.Errorf("%w: L2Scale%sMin %.7g and L2Scale%sMax %.7g: the reflectance of DN 0 and DN 65535, want Min < Max", geo.ErrBandMetadata, key, mn, key, mx)
	}
	return mn, mx, nil
}

// placePRISMABands gives scene band k (bands in scene order) its centre,
// width and bad-band flag in in, its slot in its part, and returns the
// bands' scales and offsets.
func placePRISMABands(in *geo.Info, bands []prismaBand, parts []geo.CubeArray) (scale, offset []float64) {
	n := len(bands)
	scale, offset = make([]float64, n), make([]float64, n)
	in.WavelengthsNM, in.FWHMNM = make([]float64, n), make([]float64, n)
	for k, b := range bands {
		in.WavelengthsNM[k], in.FWHMNM[k], scale[k], offset[k] = b.c, b.w, b.scale, b.of
		parts[b.part].Index = append(parts[b.part].Index, b.idx)
		parts[b.part].SceneBands = append(parts[b.part].SceneBands, k)
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
func placePRISMAGrid(in *geo.Info, f *geo.MDFile) {
	epsg, ok := f.GroupAttr("/", "Epsg_Code")
	if !ok {
		return
	}
	rows, cols := in.Rows, in.Cols
	code, _ := epsg.Float()
	ul, okUL := prismaCorner(f, "UL")
	lr, okLR := prismaCorner(f, "LR")
	if w, err := geo.WKTOfEPSG(int(code)); err == nil && okUL && okLR && cols > 1 && rows > 1 {
		// The corners are the corner pixels' centres: the grid's outer
		// corner is half a pixel further out.
		px, py := (lr[0]-ul[0])/float64(cols-1), (ul[1]-lr[1])/float64(rows-1)
		in.GeoTransform = [6]float64{ul[0] - px/2, px, 0, ul[1] + py/2, 0, -py}
		in.HasGeoTransform, in.WKT = true, w
	}
}

// prismaCorner reads Product_<c>corner_easting/northing.
func prismaCorner(f *geo.MDFile, c string) ([2]float64, bool) {
	e, okE := f.GroupAttr("/", "Product_"+c+"corner_easting")
	n, okN := f.GroupAttr("/", "Product_"+c+"corner_northing")
	x, okX := e.Float()
	y, okY := n.Float()
	return [2]float64{x, y}, okE && okN && okX && okY
}
