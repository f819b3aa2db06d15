package geo

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
)

// Report describes a scene as the classifier sees it: pnec info prints it
// as text (WriteText) or as JSON (encoding/json, the field tags below).
type Report struct {
	Name         string      `json:"name"`
	Driver       string      `json:"driver"`
	Cols         int         `json:"cols"`
	Rows         int         `json:"rows"`
	Bands        int         `json:"bands"`
	DataType     string      `json:"data_type"`
	NoData       []*float64  `json:"nodata"` // per band; null where none
	CRS          *CRSReport  `json:"crs"`    // null for a local grid
	GeoTransform *[6]float64 `json:"geotransform"`
	// PixelSize is the ground size of a pixel along a row and along a
	// column, in the CRS's units: the lengths of the geotransform's column
	// and row vectors, so also of a rotated grid (null without a
	// geotransform).
	PixelSize *[2]float64 `json:"pixel_size"`
	// RotationDeg is the angle of the grid's rows from the CRS's x axis,
	// counter-clockwise, in degrees (0 for a north-up grid; ENVI's map
	// info "rotation=").
	RotationDeg float64           `json:"rotation_deg"`
	Footprint   *geojson.Geometry `json:"footprint"` // GeoJSON Polygon in WGS84 lon/lat; null without a CRS
	// ValidFraction is the share of valid pixels; nil until measured
	// (Scene.ValidFractionEstimate).
	ValidFraction *float64 `json:"valid_fraction"`
	// ValidEstimated: valid_fraction comes from a sample, not every pixel.
	ValidEstimated bool       `json:"valid_fraction_estimated,omitempty"`
	WavelengthsNM  []*float64 `json:"wavelengths_nm"` // null when the scene says none
	FWHMNM         []*float64 `json:"fwhm_nm"`        // null when the scene says none
	// BadBands are the bands (1-based) the scene declares bad; empty when none.
	BadBands []int `json:"bad_bands"`
	// BadBandSource says what evidence made those bands bad (a product's
	// metadata, or its data where the metadata says nothing); "" when the
	// scene's own list (an ENVI bbl, a good-band flag) says it.
	BadBandSource   string `json:"bad_band_source,omitempty"`
	WavelengthUnits string `json:"wavelength_units,omitempty"`
	SpectralSource  string `json:"spectral_source,omitempty"`
	// Product names the provider's product the scene was read as.
	Product    string            `json:"product,omitempty"`
	Radiometry *RadiometryReport `json:"radiometry"` // null when the scene does not say
	// Scale and Offset are what reading applies to each band's samples;
	// null when every band has scale 1 and offset 0.
	Scale     []float64         `json:"scale"`
	Offset    []float64         `json:"offset"`
	BandNames []string          `json:"band_names"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// RadiometryReport says what a scene's values measure.
type RadiometryReport struct {
	Quantity string  `json:"quantity"`        // reflectance or radiance
	Scale    float64 `json:"scale,omitempty"` // the value of reflectance 1
	Units    string  `json:"units,omitempty"`
}

// CRSReport names a scene's CRS.
type CRSReport struct {
	Name string `json:"name"` // from the WKT's root node
	EPSG int    `json:"epsg,omitempty"`
	WKT  string `json:"wkt"`
}

// NewReport builds the report of a scene from its Info (without the valid
// fraction, which needs a read).
func NewReport(in Info) Report {
	rep := Report{
		Name: in.Name, Driver: in.Driver, Cols: in.Cols, Rows: in.Rows, Bands: in.Bands,
		DataType: in.DataType, BandNames: in.BandNames, Metadata: in.Metadata,
		NoData: make([]*float64, in.Bands),
	}
	for i := range rep.NoData {
		if in.HasNoData[i] && !math.IsNaN(in.NoData[i]) {
			v := in.NoData[i]
			rep.NoData[i] = &v
		}
	}
	if in.WKT != "" {
		rep.CRS = &CRSReport{Name: crsName(in.WKT), EPSG: in.EPSG, WKT: in.WKT}
	}
	if in.HasGeoTransform {
		gt := in.GeoTransform
		rep.GeoTransform = &gt
		rep.PixelSize, rep.RotationDeg = pixelSizeOf(gt)
	}
	if in.FootprintWGS84 != nil {
		rep.Footprint = geojson.NewGeometry(in.FootprintWGS84)
	}
	rep.WavelengthsNM, rep.FWHMNM = optional(in.WavelengthsNM), optional(in.BandSet().FWHMNM)
	rep.BadBands = []int{}
	for i, bad := range in.BadBands {
		if bad {
			rep.BadBands = append(rep.BadBands, i+1)
		}
	}
	rep.WavelengthUnits, rep.SpectralSource, rep.Product = in.WavelengthUnits, in.SpectralSource, in.Product
	if len(rep.BadBands) > 0 {
		rep.BadBandSource = in.BadBandSource
	}
	if r := in.Radiometry; r.Known() {
		rep.Radiometry = &RadiometryReport{Quantity: r.Quantity, Scale: r.Scale, Units: r.Units}
	}
	for i := range in.Scale {
		if in.Scale[i] != 1 || (i < len(in.Offset) && in.Offset[i] != 0) {
			rep.Scale, rep.Offset = in.Scale, in.Offset
			break
		}
	}
	return rep
}

// pixelSizeOf is the ground size of a pixel of the geotransform gt (the
// lengths of its column vector (GT[1], GT[4]) and row vector (GT[2],
// GT[5])) and the grid's rotation: the column vector's angle from the x
// axis, counter-clockwise, in degrees. Both to 9 significant digits, so
// that 5.2 reads as 5.2 and not 5.199999999999999.
func pixelSizeOf(gt [6]float64) (*[2]float64, float64) {
	round := func(v float64) float64 {
		r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 9, 64), 64)
		return r
	}
	size := [2]float64{round(math.Hypot(gt[1], gt[4])), round(math.Hypot(gt[2], gt[5]))}
	rot := 0.0
	if gt[2] != 0 || gt[4] != 0 {
		rot = round(math.Atan2(gt[4], gt[1]) * 180 / math.Pi)
	}
	return &size, rot
}

// optional turns per-band values into JSON numbers, null for NaN; nil for nil.
func optional(v []float64) []*float64 {
	if v == nil {
		return nil
	}
	out := make([]*float64, len(v))
	for i, w := range v {
		if !math.IsNaN(w) && w > 0 {
			x := w
			out[i] = &x
		}
	}
	return out
}

// crsName is the name in the WKT's root node (PROJCRS["WGS 84 / UTM zone 31N", ...).
func crsName(wkt string) string {
	i := strings.Index(wkt, `["`)
	if i < 0 {
		return ""
	}
	j := strings.Index(wkt[i+2:], `"`)
	if j < 0 {
		return ""
	}
	return wkt[i+2 : i+2+j]
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// WriteJSON writes the report as one indented JSON object and a newline
// (pnec info --json).
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as aligned "key: value" lines. wktHint, when
// not empty, follows a CRS without an EPSG code, saying where its WKT is
// (pnec info: "--json gives the WKT").
func (r Report) WriteText(w io.Writer, wktHint string) error {
	var t reportLines
	t.line("scene", "%s (%s)", r.Name, r.Driver)
	t.line("size", "%d cols x %d rows, %d bands", r.Cols, r.Rows, r.Bands)
	t.line("data type", "%s", r.DataType)
	t.line("nodata", "%s", r.nodataText())
	r.crsLines(&t, wktHint)
	r.gridLines(&t)
	if err := r.footprintLine(&t); err != nil {
		return err
	}
	r.validLine(&t)
	r.bandSetLines(&t)
	r.radiometryLine(&t)
	named := 0
	for _, n := range r.BandNames {
		if n != "" {
			named++
		}
	}
	if named > 0 {
		t.line("band names", "%s", listText(r.BandNames, func(s string) string { return strconv.Quote(s) }))
	}
	_, err := io.WriteString(w, t.b.String())
	return err
}

// reportLines collects WriteText's lines, whole before anything is
// written.
type reportLines struct{ b strings.Builder }

// line adds "key:" padded to 15 columns and the formatted value.
func (t *reportLines) line(k, format string, args ...any) {
	fmt.Fprintf(&t.b, "%-15s %s\n", k+":", fmt.Sprintf(format, args...))
}

// crsLines writes the CRS line: EPSG code and name, or the name and
// wktHint when the CRS has no code.
func (r Report) crsLines(t *reportLines, wktHint string) {
	switch {
	case r.CRS == nil:
		t.line("CRS", "none (local pixel grid)")
	case r.CRS.EPSG != 0:
		t.line("CRS", "EPSG:%d (%s)", r.CRS.EPSG, r.CRS.Name)
	default:
		hint := ""
		if wktHint != "" {
			hint = "; " + wktHint
		}
		t.line("CRS", "%s (no EPSG code%s)", r.CRS.Name, hint)
	}
}

// gridLines writes the geotransform, origin, pixel size and, for a
// rotated grid, its rotation.
func (r Report) gridLines(t *reportLines) {
	if r.GeoTransform == nil {
		t.line("geotransform", "none (pixel coordinates)")
		return
	}
	gt := r.GeoTransform
	t.line("geotransform", "[%s, %s, %s, %s, %s, %s]", fmtNum(gt[0]), fmtNum(gt[1]), fmtNum(gt[2]), fmtNum(gt[3]), fmtNum(gt[4]), fmtNum(gt[5]))
	t.line("origin", "%s, %s", fmtNum(gt[0]), fmtNum(gt[3]))
	if r.RotationDeg == 0 && gt[2] == 0 && gt[4] == 0 {
		t.line("pixel size", "%s x %s", fmtNum(gt[1]), fmtNum(gt[5]))
	} else {
		// A rotated grid: GT[1] and GT[5] are not the pixel's size.
		t.line("pixel size", "%s x %s (along the rows x along the columns)", fmtNum(r.PixelSize[0]), fmtNum(r.PixelSize[1]))
		t.line("rotation", "%s degrees counter-clockwise (a rotated grid: GDAL, QGIS and rasterio place it; tools that need north-up rasters need gdalwarp first)", fmtNum(r.RotationDeg))
	}
}

// footprintLine writes the footprint as GeoJSON rounded to micro-degrees.
func (r Report) footprintLine(t *reportLines) error {
	p, ok := r.footprintPolygon()
	if !ok {
		t.line("footprint", "none (no CRS)")
		return nil
	}
	// Text shows micro-degrees (about 0.1 m); JSON keeps full precision.
	short := orb.Polygon{}
	for _, ring := range p {
		rr := make(orb.Ring, len(ring))
		for i, pt := range ring {
			rr[i] = orb.Point{math.Round(pt[0]*1e6) / 1e6, math.Round(pt[1]*1e6) / 1e6}
		}
		short = append(short, rr)
	}
	fp, err := json.Marshal(geojson.NewGeometry(short))
	if err != nil {
		return err
	}
	t.line("footprint", "%s", fp)
	return nil
}

// validLine writes the share of valid pixels, saying whether it was
// counted, estimated from a sample or not measured.
func (r Report) validLine(t *reportLines) {
	switch {
	case r.ValidFraction != nil && r.ValidEstimated:
		t.line("valid pixels", "%.2f%% (estimated from a regular sample of at most %d Mpixels of %d)", *r.ValidFraction*100, MaxExactValidPixels>>20, int64(r.Cols)*int64(r.Rows))
	case r.ValidFraction != nil:
		t.line("valid pixels", "%.2f%% (%.0f of %d)", *r.ValidFraction*100, math.Round(*r.ValidFraction*float64(r.Cols*r.Rows)), r.Cols*r.Rows)
	default:
		t.line("valid pixels", "not measured (the scene was not read)")
	}
}

// bandSetLines writes the scale and offset, product, wavelengths, widths
// and bad bands, each when the scene says it.
func (r Report) bandSetLines(t *reportLines) {
	if r.Scale != nil {
		t.line("scale/offset", "%s (value = DN x scale + offset, applied on read)", scaleText(r.Scale, r.Offset))
	}
	if r.Product != "" {
		t.line("product", "%s", r.Product)
	}
	if r.WavelengthsNM != nil {
		w := wavelengthText(r.WavelengthsNM)
		if r.SpectralSource != "" {
			w += " (from the " + r.SpectralSource + ")"
		}
		t.line("wavelengths", "%s", w)
	} else {
		t.line("wavelengths", "none (the model's band count is all pnec can check)")
	}
	if r.FWHMNM != nil {
		t.line("fwhm", "%s", fwhmText(r.FWHMNM))
	}
	if len(r.BadBands) > 0 {
		from := ""
		if r.BadBandSource != "" {
			from = "; from " + r.BadBandSource
		}
		t.line("bad bands", "%d: %s (left out of training and classification%s)", len(r.BadBands), listText(r.BadBands, strconv.Itoa), from)
	}
}

// radiometryLine writes what the values measure, or that the scene does
// not say.
func (r Report) radiometryLine(t *reportLines) {
	switch {
	case r.Radiometry == nil:
		t.line("radiometry", "not stated")
	case r.Radiometry.Quantity == "reflectance" && r.Radiometry.Scale > 0:
		t.line("radiometry", "reflectance 0-%s", fmtNum(r.Radiometry.Scale))
	case r.Radiometry.Units != "":
		t.line("radiometry", "%s (%s)", r.Radiometry.Quantity, r.Radiometry.Units)
	default:
		t.line("radiometry", "%s", r.Radiometry.Quantity)
	}
}

func (r Report) footprintPolygon() (orb.Polygon, bool) {
	if r.Footprint == nil {
		return nil, false
	}
	p, ok := r.Footprint.Coordinates.(orb.Polygon)
	return p, ok
}

func (r Report) nodataText() string {
	if len(r.NoData) == 0 {
		return "none"
	}
	first, same := r.NoData[0], true
	for _, v := range r.NoData[1:] {
		if (v == nil) != (first == nil) || (v != nil && *v != *first) {
			same = false
		}
	}
	if same {
		if first == nil {
			return "none"
		}
		return fmtNum(*first) + " (all bands)"
	}
	return listText(r.NoData, func(v *float64) string {
		if v == nil {
			return "none"
		}
		return fmtNum(*v)
	})
}

func wavelengthText(ws []*float64) string {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for _, w := range ws {
		if w != nil {
			lo, hi, n = math.Min(lo, *w), math.Max(hi, *w), n+1
		}
	}
	list := listText(ws, func(w *float64) string {
		if w == nil {
			return "?"
		}
		return strconv.FormatFloat(*w, 'f', -1, 64)
	})
	if n == 0 {
		return fmt.Sprintf("none of the %d bands has one", len(ws))
	}
	return fmt.Sprintf("%d of %d bands, %s-%s nm: %s", n, len(ws), fmtNum(lo), fmtNum(hi), list)
}

// fwhmText is the band widths: one value when every band has it, else
// as wavelengthText.
func fwhmText(ws []*float64) string {
	var first *float64
	for _, w := range ws {
		switch {
		case w == nil:
			return wavelengthText(ws)
		case first == nil:
			first = w
		case *w != *first:
			return wavelengthText(ws)
		}
	}
	if first == nil {
		return wavelengthText(ws)
	}
	return fmt.Sprintf("%s nm, every band", fmtNum(*first))
}

// listText joins items, eliding the middle of long lists.
// scaleText is "x0.0001 +0" when every band has the same scale and
// offset, else the per-band list.
func scaleText(scale, offset []float64) string {
	one := func(i int) string { return "x" + fmtNum(scale[i]) + " +" + fmtNum(offset[i]) }
	same := true
	for i := range scale {
		same = same && scale[i] == scale[0] && offset[i] == offset[0]
	}
	if same {
		return one(0) + " in every band"
	}
	idx := make([]int, len(scale))
	for i := range idx {
		idx[i] = i
	}
	return listText(idx, func(i int) string { return fmt.Sprintf("band %d %s", i+1, one(i)) })
}

func listText[T any](items []T, f func(T) string) string {
	const head, tail = 6, 3
	var parts []string
	for i, it := range items {
		if len(items) > head+tail+1 && i == head {
			parts = append(parts, fmt.Sprintf("... (%d more)", len(items)-head-tail))
		}
		if len(items) > head+tail+1 && i >= head && i < len(items)-tail {
			continue
		}
		parts = append(parts, f(it))
	}
	return strings.Join(parts, ", ")
}
