package geo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airbusgeo/godal"

	"github.com/pnec/pnec/internal/tempfiles"
)

// Mask errors; the returned errors name the mask and the scene.
var (
	// ErrMaskCRS: the mask cannot be placed on the scene: it has no CRS
	// (and is no raster of the scene's size), or the scene has none and
	// the mask has one.
	ErrMaskCRS = errors.New("cannot place the mask on the scene")
	// ErrMaskNoOverlap: no pixel of the scene lies inside the mask.
	ErrMaskNoOverlap = errors.New("the mask does not overlap the scene")
)

// Mask is an area of interest on a scene's pixel grid: a raster mask
// (non-zero = inside) warped to the scene's grid, or polygons of a vector
// file OGR reads rasterised on it (pixels whose centre lies inside), each
// reprojected from its own CRS. It is kept in a temporary compressed
// GeoTIFF, read by windows, and removed by Close.
type Mask struct {
	name       string
	dir        string // temporary directory, removed by Close
	ds         *godal.Dataset
	band       godal.Band
	rows, cols int
	inside     int64
	buf        []float32
	// nodata is the source raster's no-data value where it is copied pixel
	// for pixel (a raster without CRS): outside, like 0. (A warp leaves
	// the source's no-data at 0 itself.)
	nodata    float32
	hasNoData bool
}

// isInside is whether a value of the placed mask is inside: not 0, not
// NaN (a Float32 mask of NaN is no data, not "non-zero") and not the
// source's no-data.
func (m *Mask) isInside(v float32) bool {
	return v != 0 && v == v && !(m.hasNoData && v == m.nodata)
}

// OpenMask places the mask named name (a raster or vector dataset name)
// on the pixel grid of scene (rows, columns, geotransform, CRS). A raster
// without CRS is taken as the scene's own grid when it has the scene's
// size. Errors name the mask: one that does not open (ErrNotRegular for a
// FIFO, a device or a socket), ErrMaskCRS, ErrMaskNoOverlap.
func OpenMask(ctx context.Context, name string, scene Info) (*Mask, error) {
	return OpenMaskWithin(ctx, name, scene, 0)
}

// OpenMaskWithin is OpenMask within a memory budget of budgetBytes (0:
// none): GDAL's GeoJSON driver parses each feature whole, in about 3.2
// times OGR_GEOJSON_MAX_OBJ_SIZE at its limit (ogrinfo of a 2M-vertex
// polygon: limit 10 MB, 75 MB RSS; 40 MB, 171 MB; GDAL's default 200 MB,
// 685 MB), so the limit is set to a sixteenth of the budget in MB (at most
// GDAL's default) while the mask is read: a fifth of the budget. A value the
// user set wins. A feature over it is refused with GDAL's message.
func OpenMaskWithin(ctx context.Context, name string, scene Info, budgetBytes int64) (*Mask, error) {
	register()
	// GDAL would wait forever on a FIFO nobody writes (as for scenes).
	if err := CheckOpenable(name); err != nil {
		return nil, fmt.Errorf("mask %s: %w", name, err)
	}
	var m *Mask
	open := func() (err error) { m, err = openMask(ctx, name, scene); return err }
	var err error
	if limit := geojsonMaxObjMB(budgetBytes); limit > 0 && ConfigValue(geojsonMaxObj) == "" {
		err = withThreadConfig(geojsonMaxObj, strconv.Itoa(limit), open)
		if err != nil && strings.Contains(err.Error(), geojsonMaxObj) {
			err = fmt.Errorf("%w (pnec set %s=%d from the memory budget, %d MiB: a larger budget, or the option set in GDAL's configuration, allows larger features)",
				err, geojsonMaxObj, limit, budgetBytes>>20)
		}
	} else {
		err = open()
	}
	if err != nil {
		return nil, fmt.Errorf("mask %s: %w", name, err)
	}
	return m, nil
}

// geojsonMaxObj is GDAL's limit, MB, on the size of one GeoJSON object it parses.
const geojsonMaxObj = "OGR_GEOJSON_MAX_OBJ_SIZE"

// geojsonMaxObjMB is OpenMaskWithin's GeoJSON object limit, MB, for a
// budget (0: none, GDAL's default).
func geojsonMaxObjMB(budgetBytes int64) int {
	if budgetBytes <= 0 {
		return 0
	}
	return int(min(max(budgetBytes/(16<<20), 1), 200))
}

func openMask(ctx context.Context, name string, scene Info) (*Mask, error) {
	defer onQuietThread()()
	dir, err := os.MkdirTemp("", "pnec-mask-*")
	if err != nil {
		return nil, err
	}
	if err := tempfiles.Add(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	m := &Mask{name: name, dir: dir, rows: scene.Rows, cols: scene.Cols}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	if vds, err := godal.Open(name, godal.VectorOnly(), errh); err == nil {
		err = m.rasterize(vds, scene)
		vds.Close(errh)
		if err != nil {
			return nil, err
		}
	} else {
		verr := err
		src, rerr := godal.Open(name, godal.RasterOnly(), errh)
		if rerr != nil {
			// GDAL's reason as a vector when a vector driver took the file
			// and failed (a GeoJSON object over OGR_GEOJSON_MAX_OBJ_SIZE),
			// rather than the raster drivers' "not recognized".
			if !strings.Contains(verr.Error(), "not recognized as a supported file format") {
				rerr = verr
			}
			return nil, fmt.Errorf("neither a vector nor a raster GDAL opens: %w", tidy(rerr))
		}
		err := m.warp(src, scene)
		src.Close(errh)
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.band, err = m.firstBand(); err != nil {
		return nil, err
	}
	if err := m.count(ctx); err != nil {
		return nil, err
	}
	if m.inside == 0 {
		return nil, fmt.Errorf("%w %s (no pixel of it lies inside; 0, no-data and NaN are outside)", ErrMaskNoOverlap, scene.Name)
	}
	ok = true
	return m, nil
}

// create makes the mask's raster on the scene's grid.
func (m *Mask) create(scene Info, dtype godal.DataType) (string, error) {
	path := filepath.Join(m.dir, "mask.tif")
	ds, err := godal.Create(godal.GTiff, path, 1, dtype, scene.Cols, scene.Rows,
		godal.CreationOption("TILED=YES", "COMPRESS=DEFLATE", "BIGTIFF=IF_SAFER", "SPARSE_OK=TRUE"), errh)
	if err != nil {
		return "", fmt.Errorf("create mask raster: %w", err)
	}
	gt := scene.GeoTransform
	if gt == ([6]float64{}) {
		gt = [6]float64{0, 1, 0, 0, 0, 1} // pixel coordinates
	}
	if err := ds.SetGeoTransform(gt, errh); err != nil {
		ds.Close(errh)
		return "", err
	}
	if scene.WKT != "" {
		if err := setGeoRef(ds, GeoRef{GeoTransform: gt, WKT: scene.WKT}); err != nil {
			ds.Close(errh)
			return "", err
		}
	}
	m.ds = ds
	return path, nil
}

// rasterize burns the vector dataset's polygons (every layer with
// geometries; each reprojected from its CRS to the scene's) into the mask.
// Points and lines are refused: GDAL would burn the pixels they touch, a
// pixel or a one-pixel trace, which is no area.
func (m *Mask) rasterize(vds *godal.Dataset, scene Info) error {
	var layers []godal.Layer
	for _, l := range vds.Layers() {
		if l.Type() != godal.GTNone { // not an attribute table
			layers = append(layers, l)
		}
	}
	if len(layers) == 0 {
		return errors.New("a vector dataset without layers of geometries")
	}
	args := []string{"-burn", "1"}
	for _, l := range layers {
		if err := polygonsOnly(vds, l); err != nil {
			return err
		}
		// Named one by one: without -l, GDAL refuses a dataset of several
		// layers ("Neither -sql nor -l are specified").
		args = append(args, "-l", l.Name())
		has := hasSRS(l.SpatialRef())
		switch {
		case !has && scene.WKT != "":
			return fmt.Errorf("%w: layer %q has no CRS, scene %s has one", ErrMaskCRS, l.Name(), scene.Name)
		case has && scene.WKT == "":
			return fmt.Errorf("%w: scene %s has no CRS to reproject layer %q to", ErrMaskCRS, scene.Name, l.Name())
		}
	}
	if _, err := m.create(scene, godal.Byte); err != nil {
		return err
	}
	// GDAL reprojects each layer to the raster's CRS; pixels whose centre
	// lies inside a polygon are burnt.
	if err := m.ds.RasterizeInto(vds, args, errh); err != nil {
		return fmt.Errorf("rasterize: %w", tidy(err))
	}
	return nil
}

// polygonal are the geometry types (OGR SQL's OGR_GEOMETRY, which names a
// Z or M geometry's 2D type) that cover an area.
const polygonal = `'POLYGON','MULTIPOLYGON','CURVEPOLYGON','MULTISURFACE','POLYHEDRALSURFACE','TIN','TRIANGLE'`

// polygonsOnly refuses a layer holding a geometry that covers no area (a
// point, a line, a collection), naming the layer, the type and the feature.
func polygonsOnly(vds *godal.Dataset, l godal.Layer) error {
	q := fmt.Sprintf(`SELECT OGR_GEOMETRY, FID FROM "%s" WHERE OGR_GEOMETRY IS NOT NULL AND OGR_GEOMETRY NOT IN (%s)`,
		strings.ReplaceAll(l.Name(), `"`, `""`), polygonal)
	rs, err := vds.ExecuteSQL(q, godal.OGRSQLDialect(), errh)
	if err != nil {
		return fmt.Errorf("layer %q: geometry types: %w", l.Name(), tidy(err))
	}
	defer rs.Close(errh)
	f := rs.NextFeature()
	if f == nil {
		return nil
	}
	defer f.Close()
	fields := f.Fields()
	return fmt.Errorf("layer %q holds a %s (feature %s): an area of interest is made of polygons (buffer points and lines into polygons first, e.g. with ogr2ogr -dialect SQLite -sql 'SELECT ST_Buffer(geometry, 10) ...')",
		l.Name(), fields["OGR_GEOMETRY"].String(), fields["FID"].String())
}

// warp places a raster mask's first band on the scene's grid: nearest
// neighbour, from its CRS to the scene's; outside the mask raster, and
// where it is no-data, is outside. A raster without CRS (or without
// geotransform) of the scene's size is the scene's grid as it is.
func (m *Mask) warp(src *godal.Dataset, scene Info) error {
	st := src.Structure()
	hasCRS := src.Projection() != ""
	_, gtErr := src.GeoTransform(errh)
	if len(src.Bands()) == 0 {
		return errors.New("a raster without bands")
	}
	dtype := src.Bands()[0].Structure().DataType
	aligned := st.SizeX == scene.Cols && st.SizeY == scene.Rows
	switch {
	case (!hasCRS || gtErr != nil) && aligned:
		// Pixel for pixel: the scene's grid. The copy keeps the values
		// as they are; the source's no-data is remembered as outside.
		if nd, ok := src.Bands()[0].NoData(); ok {
			m.nodata, m.hasNoData = float32(nd), true
		}
		path, err := m.create(scene, dtype)
		if err != nil {
			return err
		}
		m.ds.Close(errh)
		m.ds = nil
		out, err := src.Translate(path, []string{"-b", "1", "-of", "GTiff", "-a_nodata", "none", "-co", "TILED=YES", "-co", "COMPRESS=DEFLATE"}, errh)
		if err != nil {
			return fmt.Errorf("copy: %w", tidy(err))
		}
		m.ds = out
		return nil
	case !hasCRS || gtErr != nil:
		return fmt.Errorf("%w: a raster without CRS or geotransform must have the scene's size %dx%d (cols x rows), it has %dx%d",
			ErrMaskCRS, scene.Cols, scene.Rows, st.SizeX, st.SizeY)
	case scene.WKT == "":
		return fmt.Errorf("%w: scene %s has no CRS to reproject the mask to", ErrMaskCRS, scene.Name)
	}
	// Band 1 only: a VRT of it, then the warp into the scene's grid.
	vrt := filepath.Join(m.dir, "band1.vrt")
	one, err := src.Translate(vrt, []string{"-b", "1", "-of", "VRT"}, errh)
	if err != nil {
		return fmt.Errorf("band 1: %w", tidy(err))
	}
	defer one.Close(errh)
	if _, err := m.create(scene, dtype); err != nil {
		return err
	}
	if err := m.ds.WarpInto([]*godal.Dataset{one}, []string{"-r", "near", "-wo", "INIT_DEST=0"}, errh); err != nil {
		return fmt.Errorf("warp to the scene's grid: %w", tidy(err))
	}
	return nil
}

func (m *Mask) firstBand() (godal.Band, error) {
	if m.ds == nil || len(m.ds.Bands()) == 0 {
		return godal.Band{}, errors.New("no mask raster")
	}
	return m.ds.Bands()[0], nil
}

// count counts the pixels inside, in strips.
func (m *Mask) count(ctx context.Context) error {
	const strip = 256
	buf := make([]float32, m.cols*strip)
	for r0 := 0; r0 < m.rows; r0 += strip {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(strip, m.rows-r0)
		if err := m.band.Read(0, r0, buf[:m.cols*n], m.cols, n, errh); err != nil {
			return fmt.Errorf("read rows %d..%d: %w", r0, r0+n-1, tidy(err))
		}
		for _, v := range buf[:m.cols*n] {
			if m.isInside(v) {
				m.inside++
			}
		}
	}
	return nil
}

// Name is the mask's dataset name.
func (m *Mask) Name() string { return m.name }

// Inside is the number of the scene's pixels inside the mask.
func (m *Mask) Inside() int64 { return m.inside }

// Read sets inside[r*w.Cols+c] to whether pixel (c, r) of window w lies
// inside the mask and reports whether any does. inside must hold
// w.Cols*w.Rows values. The window must lie in the scene.
func (m *Mask) Read(w Window, inside []bool) (bool, error) {
	if w.Col < 0 || w.Row < 0 || w.Cols <= 0 || w.Rows <= 0 || w.Col+w.Cols > m.cols || w.Row+w.Rows > m.rows {
		return false, fmt.Errorf("mask %s: %w: %v of %dx%d", m.name, ErrWindow, w, m.cols, m.rows)
	}
	n := w.Cols * w.Rows
	if len(inside) < n {
		return false, fmt.Errorf("mask %s: %w: %d values for a %dx%d window", m.name, ErrSize, len(inside), w.Cols, w.Rows)
	}
	if cap(m.buf) < n {
		m.buf = make([]float32, n)
	}
	buf := m.buf[:n]
	if err := m.band.Read(w.Col, w.Row, buf, w.Cols, w.Rows, errh); err != nil {
		return false, fmt.Errorf("mask %s: read %v: %w", m.name, w, tidy(err))
	}
	any := false
	for i, v := range buf {
		inside[i] = m.isInside(v)
		any = any || inside[i]
	}
	return any, nil
}

// Close releases the mask and removes its temporary raster.
func (m *Mask) Close() error {
	var err error
	if m.ds != nil {
		err = m.ds.Close(errh)
		m.ds = nil
	}
	if m.dir != "" {
		if rerr := os.RemoveAll(m.dir); err == nil {
			err = rerr
		}
		tempfiles.Forget(m.dir)
		m.dir = ""
	}
	return err
}

// hasSRS reports whether sr (a layer's or dataset's, not owned) is set:
// exporting an unset one fails (the failure is the answer, so godal's own
// SkipWarnings logger does: only whether it failed matters here).
//
// GeoPackage marks a layer without CRS with srs_id 0 or -1, which GDAL
// reads as CRSs named "Undefined geographic SRS" (a WGS84-like ellipsoid:
// taken as WGS84, its layer was reprojected as lon/lat)
// and "Undefined cartesian SRS": both are no CRS.
func hasSRS(sr *godal.SpatialRef) bool {
	wkt, err := sr.WKT(godal.SkipWarnings)
	if err != nil || wkt == "" {
		return false
	}
	for _, undefined := range []string{`"Undefined geographic SRS"`, `"Undefined cartesian SRS"`} {
		if strings.Contains(wkt, undefined) {
			return false
		}
	}
	return true
}
