package geo

import (
	"errors"
	"fmt"
	"github.com/pnec/pnec/internal/buffers"
	"math"
	"path"
	"strings"
)

// EMIT's L2A products (NetCDF-4, LP DAAC): the cube in sensor geometry,
// (downtrack, crosstrack, bands), and a geometry lookup table (GLT) that
// says, for each pixel of the orthorectified grid (EPSG:4326, the
// geotransform and spatial_ref global attributes), which sensor pixel it
// sees. GDAL 3.8 orthorectifies EMIT files in its netCDF driver; 3.6
// cannot, so pnec applies the GLT itself, window by window.

// emitMaskBands are the bands of EMIT's L2A mask file.
var emitMaskBands = []string{"Cloud flag", "Cirrus flag", "Water flag", "Spacecraft Flag", "Dilated Cloud Flag", "AOD550", "H2O (g cm-2)", "Aggregate Flag"}

// emitMaskFlags are the mask bands --mask product applies (0-based): the
// cloud, cirrus, spacecraft and dilated cloud flags, where the surface is
// not seen. Not the water flag (water is land cover), the aggregate flag
// (which includes it) or the AOD and water vapour values.
var emitMaskFlags = []int{0, 1, 3, 4}

// openNetCDF recognises and opens the NetCDF deliveries geo reads itself:
// EMIT L2A reflectance or mask files (package sensors reads AVIRIS-3's).
func openNetCDF(name string) (*Scene, bool, error) {
	if !strings.HasSuffix(strings.ToLower(name), ".nc") {
		return nil, false, nil
	}
	f, err := openMD(name)
	if err != nil {
		return nil, false, nil // GDAL's own open reports what is wrong
	}
	var s *Scene
	switch {
	case f.has("/location/glt_x") && (f.has("/reflectance") || f.has("/mask")):
		s, err = openEMIT(name, f)
	default:
		f.close()
		return nil, false, nil
	}
	if err != nil {
		f.close()
		return nil, true, fmt.Errorf("open %s: %w", name, err)
	}
	return s, true, nil
}

// openEMIT reads an EMIT L2A RFL (or MASK) file's band set, georeference
// and GLT, and makes a scene on the ortho grid.
func openEMIT(name string, f *mdFile) (*Scene, error) {
	varName, product := "/reflectance", ProductEMITL2A
	if !f.has(varName) {
		varName, product = "/mask", ProductEMITMask
	}
	arr, err := f.array(varName)
	if err != nil {
		return nil, err
	}
	if len(arr.dims) != 3 {
		arr.close()
		return nil, fmt.Errorf("%s has %d dimensions, want (downtrack, crosstrack, bands)", varName, len(arr.dims))
	}
	down, cross, nb := arr.dims[0], arr.dims[1], arr.dims[2]
	gx, err := f.array("/location/glt_x")
	if err != nil {
		arr.close()
		return nil, err
	}
	gy, err := f.array("/location/glt_y")
	if err != nil {
		arr.close()
		gx.close()
		return nil, err
	}
	cleanup := func() { arr.close(); gx.close(); gy.close() }
	if len(gx.dims) != 2 || len(gy.dims) != 2 || gx.dims[0] != gy.dims[0] || gx.dims[1] != gy.dims[1] {
		cleanup()
		return nil, errors.New("glt_x and glt_y are not one (ortho_y, ortho_x) grid")
	}
	in := Info{Name: name, Driver: "netCDF", Rows: gx.dims[0], Cols: gx.dims[1], Bands: nb, Product: product, DataType: "Float32"}
	gt, ok := f.groupAttr("/", "geotransform")
	if v := gt.floats(); ok && len(v) == 6 {
		copy(in.GeoTransform[:], v)
		in.HasGeoTransform = true
	}
	if srs, ok := f.groupAttr("/", "spatial_ref"); ok {
		in.WKT = srs.str
	}
	if t, ok := f.groupAttr("/", "time_coverage_start"); ok && t.str != "" {
		in.Metadata = map[string]string{"ACQUISITIONDATETIME": t.str}
	}
	if product == ProductEMITL2A {
		if err := emitBandSet(f, &in, nb); err != nil {
			cleanup()
			return nil, err
		}
		in.Radiometry = reflectance01
	} else if nb == len(emitMaskBands) {
		in.BandNames = append([]string(nil), emitMaskBands...)
	}
	nodata := math.NaN()
	if arr.hasNoData {
		nodata = arr.nodata
	}
	inner, err := newMDCube(nil, nb, []mdPart{{arr: arr, bandAxis: 2, rowAxis: 0, colAxis: 1, index: allBands(nb), scene: allBands(nb)}})
	if err != nil {
		cleanup()
		return nil, err
	}
	cube := &gltCube{file: f, inner: inner, gx: gx, gy: gy, srcRows: down, srcCols: cross}
	s, err := newCubeScene(in, cube, constSlice(nb, nodata), constSlice(nb, 1), constSlice(nb, 0))
	if err != nil {
		cleanup()
		return nil, err
	}
	if product == ProductEMITL2A {
		// The L2A mask file of the same acquisition, beside the reflectance.
		base := path.Base(name)
		if i := strings.Index(base, "_L2A_RFL_"); i >= 0 {
			mf := path.Join(path.Dir(name), base[:i]+"_L2A_MASK_"+base[i+len("_L2A_RFL_"):])
			// Registered whether or not the file is there: without it,
			// --quality-mask product says which file is missing rather
			// than that the product has no masks.
			s.productQualityMasks = append(s.productQualityMasks, productQualityMask{label: "EMIT L2A mask (cloud, cirrus, spacecraft, dilated cloud flags)",
				bands: emitMaskFlags, open: func() (*Scene, error) {
					if !vsiExists(mf) {
						return nil, fmt.Errorf("%s is not beside the reflectance file: the product's quality masks are in this L2A mask file of the same acquisition (LP DAAC delivers it with the reflectance in the EMITL2ARFL granule)", path.Base(mf))
					}
					return Open(mf)
				}})
		}
	}
	return s, nil
}

// emitBandSet reads sensor_band_parameters: wavelengths and fwhm (nm) and
// good_wavelengths (0 = bad).
func emitBandSet(f *mdFile, in *Info, nb int) error {
	read := func(name string) ([]float64, error) {
		a, err := f.array("/sensor_band_parameters/" + name)
		if err != nil {
			return nil, err
		}
		defer a.close()
		v, err := a.readAllF64()
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
	if err := checkCentres(wl, "sensor_band_parameters/wavelengths"); err != nil {
		return err
	}
	in.WavelengthsNM, in.WavelengthUnits, in.SpectralSource = wl, "nm", "EMIT sensor_band_parameters"
	if fw, err := read("fwhm"); err == nil {
		if err := checkWidths(fw, "sensor_band_parameters/fwhm"); err != nil {
			return err
		}
		in.FWHMNM = fw
	} else if !errors.Is(err, errNoArray) {
		return err
	}
	good, err := read("good_wavelengths")
	if err != nil && !errors.Is(err, errNoArray) {
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

// gltCube reads the ortho grid of a sensor-geometry cube through its
// geometry lookup table: glt_x and glt_y give each ortho pixel's sensor
// column and row, 1-based, 0 (or less) where no sensor pixel falls (read
// as NaN, invalid). A window is read in blocks of gltBlock x gltBlock
// ortho pixels, each with one read of the sensor rows and columns its
// pixels see (about the block's size turned by the ground track's angle:
// twice its area at 45 degrees), so no whole cube is held.
type gltCube struct {
	file             *mdFile
	inner            *mdCube
	gx, gy           *mdArray
	srcRows, srcCols int
	gxBuf, gyBuf     []int32
	src              []float32
}

const gltBlock = 64

func (g *gltCube) readBSQ(w Window, bufCols, bufRows int, bands []int, buf []float32) error {
	npix := bufCols * bufRows
	nb := len(bands)
	for b0 := 0; b0 < bufRows; b0 += gltBlock {
		for c0 := 0; c0 < bufCols; c0 += gltBlock {
			bh, bw := min(gltBlock, bufRows-b0), min(gltBlock, bufCols-c0)
			// The ortho pixels of this block of the buffer.
			rows, cols := make([]int, bh), make([]int, bw)
			for r := range bh {
				rows[r] = w.Row + nearestIndex(b0+r, bufRows, w.Rows)
			}
			for c := range bw {
				cols[c] = w.Col + nearestIndex(c0+c, bufCols, w.Cols)
			}
			if err := g.readGLT(rows, cols); err != nil {
				return err
			}
			r0, r1, s0, s1 := math.MaxInt, -1, math.MaxInt, -1
			for i := range bh * bw {
				x, y := int(g.gxBuf[i])-1, int(g.gyBuf[i])-1
				if x < 0 || y < 0 || x >= g.srcCols || y >= g.srcRows {
					g.gxBuf[i] = 0
					continue
				}
				r0, r1, s0, s1 = min(r0, y), max(r1, y), min(s0, x), max(s1, x)
			}
			if r1 >= 0 {
				sw := Window{Col: s0, Row: r0, Cols: s1 - s0 + 1, Rows: r1 - r0 + 1}
				if err := checkGLTSpread(rows, cols, sw, nb); err != nil {
					return err
				}
				g.src = buffers.Resize(g.src, nb*sw.Cols*sw.Rows)
				if err := g.inner.readBSQ(sw, sw.Cols, sw.Rows, bands, g.src); err != nil {
					return err
				}
			}
			area := 0
			if r1 >= 0 {
				area = (r1 - r0 + 1) * (s1 - s0 + 1)
			}
			nan := float32(math.NaN())
			for r := range bh {
				for c := range bw {
					i := r*bw + c
					o := (b0+r)*bufCols + c0 + c
					if g.gxBuf[i] <= 0 {
						for k := range nb {
							buf[k*npix+o] = nan
						}
						continue
					}
					sp := (int(g.gyBuf[i])-1-r0)*(s1-s0+1) + int(g.gxBuf[i]) - 1 - s0
					for k := range nb {
						buf[k*npix+o] = g.src[k*area+sp]
					}
				}
			}
		}
	}
	return nil
}

// A block's sensor window (gltCube.readBSQ) is refused before it is
// allocated when it is over gltMaxSpread times the block's ortho footprint
// and over gltMinWindow pixels: a real lookup table sends a block to about
// its own area (twice at 45 degrees); one that scatters a block over the
// whole sensor cube made a 48 KB file declaring a 2500 x 2500 x 32 cube
// take 1.65 GB whatever the memory budget.
const (
	gltMaxSpread = 8
	gltMinWindow = 256 * 256
)

// checkGLTSpread refuses the sensor window sw (of nb bands) that the ortho
// pixels rows x cols look up when it is too large for them.
func checkGLTSpread(rows, cols []int, sw Window, nb int) error {
	foot := (rows[len(rows)-1] - rows[0] + 1) * (cols[len(cols)-1] - cols[0] + 1)
	if n := sw.Cols * sw.Rows; n > gltMinWindow && n > gltMaxSpread*foot {
		return fmt.Errorf("geometry lookup table: ortho rows %d..%d, columns %d..%d look up sensor pixels over %d x %d (%.0f times their area; %d MiB for %d bands): not the lookup table of one swath",
			rows[0], rows[len(rows)-1], cols[0], cols[len(cols)-1], sw.Rows, sw.Cols, float64(n)/float64(foot), int64(n)*int64(nb)*4>>20, nb)
	}
	return nil
}

// readGLT reads the GLT entries of the ortho pixels rows x cols (each
// list ascending) into gxBuf, gyBuf.
func (g *gltCube) readGLT(rows, cols []int) error {
	n := len(rows) * len(cols)
	g.gxBuf, g.gyBuf = buffers.Resize(g.gxBuf, n), buffers.Resize(g.gyBuf, n)
	rs, cs := stepOf(rows), stepOf(cols)
	if rs > 0 && cs > 0 {
		start, count, step := []int{rows[0], cols[0]}, []int{len(rows), len(cols)}, []int{rs, cs}
		if err := g.gx.readI32(start, count, step, g.gxBuf); err != nil {
			return err
		}
		return g.gy.readI32(start, count, step, g.gyBuf)
	}
	// Uneven sampling: read the span and pick.
	h, w := rows[len(rows)-1]-rows[0]+1, cols[len(cols)-1]-cols[0]+1
	tx, ty := make([]int32, h*w), make([]int32, h*w)
	start, count := []int{rows[0], cols[0]}, []int{h, w}
	if err := g.gx.readI32(start, count, nil, tx); err != nil {
		return err
	}
	if err := g.gy.readI32(start, count, nil, ty); err != nil {
		return err
	}
	for i, r := range rows {
		for j, c := range cols {
			k := (r-rows[0])*w + c - cols[0]
			g.gxBuf[i*len(cols)+j], g.gyBuf[i*len(cols)+j] = tx[k], ty[k]
		}
	}
	return nil
}

// stepOf is the common difference of an ascending list (1 for one
// element), 0 when uneven.
func stepOf(v []int) int {
	if len(v) < 2 {
		return 1
	}
	d := v[1] - v[0]
	for i := 2; i < len(v); i++ {
		if v[i]-v[i-1] != d {
			return 0
		}
	}
	if d < 1 {
		return 0
	}
	return d
}

func (g *gltCube) close() error {
	g.gx.close()
	g.gy.close()
	err := g.inner.close()
	if g.file != nil {
		if e := g.file.close(); err == nil {
			err = e
		}
	}
	return err
}
