package geo

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/airbusgeo/godal"
)

// defaultGTiffOptions are the GTiff creation options CreateGeoTIFF starts
// from: tiled (windowed reads touch few blocks), DEFLATE, BigTIFF when needed,
// and the tile size of gtiffBlockOptions.
var defaultGTiffOptions = []string{"TILED=YES", "COMPRESS=DEFLATE", "BIGTIFF=IF_SAFER"}

// gtiffBlockSide is CreateGeoTIFF's tile side, pixels, where the raster is
// at least that large.
const gtiffBlockSide = 256

// gtiffBlockOptions are the tile size options for a rows x cols raster:
// gtiffBlockSide a side, or the raster's side rounded up to 16 (TIFF's
// tile multiple) where that is smaller. Every read decodes whole tiles, and
// a pixel-interleaved tile holds every band: a 256 x 256 tile over an
// 83 x 86 x 204 Int16 scene (SalinasA as pnec import mat writes it) is
// 26.7 MB to decode for 2.9 MB of pixels, 140 ms of a 0.36 s classify
// (the same scene in 96 x 96 tiles: 40-48 ms).
func gtiffBlockOptions(rows, cols int) []string {
	side := func(n int) int { return min(gtiffBlockSide, (n+15)/16*16) }
	return []string{fmt.Sprintf("BLOCKXSIZE=%d", side(cols)), fmt.Sprintf("BLOCKYSIZE=%d", side(rows))}
}

func (t DataType) godal() (godal.DataType, error) {
	switch t {
	case Byte:
		return godal.Byte, nil
	case UInt16:
		return godal.UInt16, nil
	case Int16:
		return godal.Int16, nil
	case Float32:
		return godal.Float32, nil
	}
	return godal.Unknown, fmt.Errorf("unknown data type %d", int(t))
}

// String returns GDAL's name of the type.
func (t DataType) String() string {
	g, err := t.godal()
	if err != nil {
		return fmt.Sprintf("DataType(%d)", int(t))
	}
	return g.String()
}

// mergeOptions returns base with entries of over replacing those with the same
// KEY (case-insensitive); GDAL takes the first KEY it finds in a list, so
// duplicates must not be left in.
func mergeOptions(base, over []string) ([]string, error) {
	keyOf := func(kv string) (string, error) {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return "", fmt.Errorf("creation option %q: want KEY=VALUE", kv)
		}
		return strings.ToUpper(strings.TrimSpace(k)), nil
	}
	overKeys := map[string]bool{}
	for _, kv := range over {
		k, err := keyOf(kv)
		if err != nil {
			return nil, err
		}
		overKeys[k] = true
	}
	var out []string
	for _, kv := range base {
		k, _ := keyOf(kv)
		if !overKeys[k] {
			out = append(out, kv)
		}
	}
	return append(out, over...), nil
}

// RasterWriter writes a GeoTIFF to a temporary file beside the target; Commit renames it into place.
type RasterWriter struct {
	path, tmp string
	spec      RasterSpec
	ds        *godal.Dataset
	committed bool
	watch     failureWatch // GDAL worker threads' failures (compression) since Create
}

// CreateGeoTIFF starts a tiled, DEFLATE-compressed GeoTIFF at path. Nothing
// appears at path until Commit. Wavelengths are written as band metadata
// "wavelength" + "wavelength_units" (the items GDAL's ENVI driver reads and
// writes, so gdal_translate -of ENVI keeps them) and as GDAL 3.10's IMAGERY
// CENTRAL_WAVELENGTH_UM.
func CreateGeoTIFF(path string, spec RasterSpec) (*RasterWriter, error) {
	register()
	if spec.Cols <= 0 || spec.Rows <= 0 || spec.Bands <= 0 {
		return nil, fmt.Errorf("create %s: size %dx%dx%d: want positive cols, rows and bands", path, spec.Cols, spec.Rows, spec.Bands)
	}
	if spec.BandNames != nil && len(spec.BandNames) != spec.Bands {
		return nil, fmt.Errorf("create %s: %d band names for %d bands", path, len(spec.BandNames), spec.Bands)
	}
	if spec.WavelengthsNM != nil && len(spec.WavelengthsNM) != spec.Bands {
		return nil, fmt.Errorf("create %s: %d wavelengths for %d bands", path, len(spec.WavelengthsNM), spec.Bands)
	}
	if spec.FWHMNM != nil && len(spec.FWHMNM) != spec.Bands {
		return nil, fmt.Errorf("create %s: %d band widths for %d bands", path, len(spec.FWHMNM), spec.Bands)
	}
	dt, err := spec.DataType.godal()
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	opts, err := mergeOptions(append(slices.Clone(defaultGTiffOptions), gtiffBlockOptions(spec.Rows, spec.Cols)...), spec.CreationOptions)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	w := &RasterWriter{path: path, spec: spec, watch: startFailureWatch()}
	if isVSI(path) {
		w.tmp = path + ".tmp.tif"
	} else if w.tmp, err = tempBeside(path, ".tmp.tif"); err != nil {
		return nil, err
	}
	w.ds, err = godal.Create(godal.GTiff, w.tmp, spec.Bands, dt, spec.Cols, spec.Rows, godal.CreationOption(opts...), errh)
	if err != nil {
		removeIfExists(w.tmp)
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := w.describe(); err != nil {
		w.Close()
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return w, nil
}

// hasGeoTransform is false for the all-zero transform, meaning "none".
func hasGeoTransform(gt [6]float64) bool { return gt != [6]float64{} }

// setGeoRef writes the geotransform and CRS of g to ds.
func setGeoRef(ds *godal.Dataset, g GeoRef) error {
	if hasGeoTransform(g.GeoTransform) {
		if err := ds.SetGeoTransform(g.GeoTransform, errh); err != nil {
			return fmt.Errorf("set geotransform: %w", err)
		}
	}
	if g.WKT != "" {
		if err := ds.SetProjection(g.WKT, errh); err != nil {
			return fmt.Errorf("set CRS: %w", err)
		}
	} else if g.EPSG != 0 {
		sr, err := godal.NewSpatialRefFromEPSG(g.EPSG, errh)
		if err != nil {
			return fmt.Errorf("EPSG:%d: %w", g.EPSG, err)
		}
		defer sr.Close()
		if err := ds.SetSpatialRef(sr, errh); err != nil {
			return fmt.Errorf("set CRS: %w", err)
		}
	}
	return nil
}

// setMetadata writes md in key order (GDAL keeps insertion order in files).
func setMetadata(mo interface {
	SetMetadata(key, value string, opts ...godal.MetadataOption) error
}, md map[string]string, domain string) error {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var err error
		if domain == "" {
			err = mo.SetMetadata(k, md[k])
		} else {
			err = mo.SetMetadata(k, md[k], godal.Domain(domain))
		}
		if err != nil {
			return fmt.Errorf("set metadata %s: %w", k, err)
		}
	}
	return nil
}

func (w *RasterWriter) describe() error {
	s := w.spec
	if err := setGeoRef(w.ds, s.GeoRef); err != nil {
		return err
	}
	if err := setMetadata(w.ds, s.Metadata, ""); err != nil {
		return err
	}
	for i, b := range w.ds.Bands() {
		if s.NoData != nil {
			if err := b.SetNoData(*s.NoData, errh); err != nil {
				return fmt.Errorf("band %d nodata: %w", i+1, err)
			}
		}
		if s.BandNames != nil && s.BandNames[i] != "" {
			if err := b.SetDescription(s.BandNames[i], errh); err != nil {
				return fmt.Errorf("band %d description: %w", i+1, err)
			}
		}
		if s.WavelengthsNM != nil && !math.IsNaN(s.WavelengthsNM[i]) {
			nm := s.WavelengthsNM[i]
			md := map[string]string{
				"wavelength":       strconv.FormatFloat(nm, 'g', -1, 64),
				"wavelength_units": "Nanometers",
			}
			if err := setMetadata(b, md, ""); err != nil {
				return fmt.Errorf("band %d: %w", i+1, err)
			}
			um := map[string]string{"CENTRAL_WAVELENGTH_UM": strconv.FormatFloat(nm/1000, 'g', -1, 64)}
			if s.FWHMNM != nil && s.FWHMNM[i] > 0 {
				md["fwhm"] = strconv.FormatFloat(s.FWHMNM[i], 'g', -1, 64)
				um["FWHM_UM"] = strconv.FormatFloat(s.FWHMNM[i]/1000, 'g', -1, 64)
				if err := setMetadata(b, md, ""); err != nil {
					return fmt.Errorf("band %d: %w", i+1, err)
				}
			}
			if err := setMetadata(b, um, "IMAGERY"); err != nil {
				return fmt.Errorf("band %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// WriteWindow writes pixel-interleaved data ([Rows][Cols][Bands]) into win.
// Values are converted to the file's type by GDAL (rounded, clamped to its range).
func (w *RasterWriter) WriteWindow(win Window, data []float32) error {
	if w.ds == nil {
		return fmt.Errorf("write %s: %w", w.path, ErrClosed)
	}
	s := w.spec
	if win.Cols <= 0 || win.Rows <= 0 || win.Col < 0 || win.Row < 0 || win.Col+win.Cols > s.Cols || win.Row+win.Rows > s.Rows {
		return fmt.Errorf("write %s: %w: window %v in a %dx%d raster", w.path, ErrWindow, win, s.Cols, s.Rows)
	}
	if len(data) != win.Cols*win.Rows*s.Bands {
		return fmt.Errorf("write %s window %v: %w: got %d values, want %d", w.path, win, ErrSize, len(data), win.Cols*win.Rows*s.Bands)
	}
	if err := w.ds.Write(win.Col, win.Row, data, win.Cols, win.Rows, errh); err != nil {
		return fmt.Errorf("write %s window %v: %w", w.path, win, err)
	}
	return nil
}

// Commit flushes the file and renames it to its final path.
func (w *RasterWriter) Commit() error {
	if w.ds == nil {
		return fmt.Errorf("commit %s: %w", w.path, ErrClosed)
	}
	err := w.ds.Close(errh)
	w.ds = nil
	if err == nil {
		err = w.watch.err()
	}
	if err != nil {
		w.cleanup()
		return fmt.Errorf("commit %s: %w", w.path, err)
	}
	if isVSI(w.path) {
		err = vsiRename(w.tmp, w.path)
	} else {
		err = publish(w.tmp, w.path)
	}
	if err != nil {
		w.cleanup()
		return fmt.Errorf("commit %s: %w", w.path, err)
	}
	w.committed = true
	return nil
}

func (w *RasterWriter) cleanup() {
	if isVSI(w.path) {
		vsiUnlink(w.tmp)
		vsiUnlink(w.tmp + auxSuffix)
		return
	}
	removeIfExists(w.tmp, w.tmp+auxSuffix)
}

// Close removes the temporary file unless Commit succeeded. It is safe to
// call after Commit and more than once (then it does nothing).
func (w *RasterWriter) Close() error {
	if w.committed {
		return nil
	}
	var err error
	if w.ds != nil {
		err = w.ds.Close(errh)
		w.ds = nil
	}
	w.cleanup()
	if err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return nil
}
