package geo

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/airbusgeo/godal"

	"github.com/pnec/pnec/spectral"
)

// readSpectral gathers the scene's band centres and widths in nm, its bad
// bands and its radiometry into in, from (band by band, the first that
// says) GDAL 3.10's IMAGERY band metadata (CENTRAL_WAVELENGTH_UM,
// FWHM_UM), band metadata "wavelength"/"fwhm"/"wavelength_units" (what
// the ENVI driver and pnec's writer set), and the dataset's ENVI domain
// (the header's wavelength, fwhm and bbl lists, reflectance scale factor).
// Bands the scene says nothing about are NaN; nil when no band has one.
// A value that is there but invalid (a centre that is not a positive
// number, a negative width, an ENVI gain of 0, a reflectance scale factor
// that is not positive) is an error wrapping ErrBandMetadata, naming the
// band; so is a band set where only some bands have a centre.
func (s *Scene) readSpectral(in *Info) error {
	if in.Driver == "ENVI" {
		if err := checkENVIHeaderFile(s.name); err != nil {
			return err
		}
	}
	n := len(s.bands)
	sp := bandSpectra{centres: nanSlice(n), widths: nanSlice(n)}
	for i, b := range s.bands {
		if err := sp.fromBand(i, b, in); err != nil {
			return err
		}
	}
	envi := s.ds.Metadatas(godal.Domain("ENVI"))
	unit, _ := lookupFold(envi, "wavelength_units")
	if in.WavelengthUnits == "" {
		in.WavelengthUnits = unit
	}
	bbl, err := sp.fromENVIHeader(envi, unit, n)
	if err != nil {
		return err
	}
	if sp.nc > 0 {
		if err := checkPartialCentres(sp.centres, "the "+sp.source); err != nil {
			return err
		}
		in.WavelengthsNM, in.SpectralSource = sp.centres, sp.source
	}
	if sp.nw > 0 {
		in.FWHMNM = sp.widths
	}
	in.BadBands = badFromBBL(bbl)
	if v, ok := lookupFold(envi, "reflectance_scale_factor"); ok {
		f, err := parseReflectanceScale(v, "the ENVI header")
		if err != nil {
			return err
		}
		in.Radiometry = reflectanceAfterGain(f, in.Scale, in.Offset)
	}
	return nil
}

// bandSpectra is what readSpectral has found so far: band centres and
// widths in nm (NaN where nothing said), how many bands gave each, and
// where the first centre came from (named in errors and Info).
type bandSpectra struct {
	centres, widths []float64
	nc, nw          int
	source          string
}

// fromBand reads band i's IMAGERY metadata, then its plain band metadata
// for what IMAGERY left unsaid, and takes the first band's
// wavelength_units into in.
func (sp *bandSpectra) fromBand(i int, b godal.Band, in *Info) error {
	if err := sp.fromImagery(i, b.Metadatas(godal.Domain("IMAGERY"))); err != nil {
		return err
	}
	md := b.Metadatas()
	unit, _ := lookupFold(md, "wavelength_units")
	if in.WavelengthUnits == "" {
		in.WavelengthUnits = unit
	}
	mdLabel := "the band metadata"
	if in.Driver == "ENVI" {
		mdLabel = "the ENVI header" // GDAL's ENVI driver hands it to the bands
	}
	if err := sp.centreFromMetadata(i, md, unit, mdLabel, in.Driver); err != nil {
		return err
	}
	return sp.widthFromMetadata(i, md, unit, mdLabel)
}

// fromImagery reads GDAL 3.10's CENTRAL_WAVELENGTH_UM and FWHM_UM of band i.
func (sp *bandSpectra) fromImagery(i int, img map[string]string) error {
	if v, ok := lookupFold(img, "CENTRAL_WAVELENGTH_UM"); ok {
		x, err := parseBandNumber(i, "CENTRAL_WAVELENGTH_UM", v)
		if err != nil {
			return err
		}
		if !positiveFinite(x) {
			return fmt.Errorf("%w: band %d CENTRAL_WAVELENGTH_UM %s in the IMAGERY metadata; a band centre is a positive number", ErrBandMetadata, i+1, fmtValue(x))
		}
		sp.centres[i] = x * 1000
		sp.nc++
		sp.source = "IMAGERY metadata"
	}
	if v, ok := lookupFold(img, "FWHM_UM"); ok {
		x, err := parseBandNumber(i, "FWHM_UM", v)
		if err != nil {
			return err
		}
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: band %d FWHM_UM %s in the IMAGERY metadata; a band width is a positive number", ErrBandMetadata, i+1, fmtValue(x))
		}
		sp.widths[i] = x * 1000
		sp.nw++
	}
	return nil
}

// centreFromMetadata reads band i's "wavelength" item in unit when
// IMAGERY gave no centre.
func (sp *bandSpectra) centreFromMetadata(i int, md map[string]string, unit, mdLabel, driver string) error {
	x, ok, err := unsetBandNumber(i, md, "wavelength", sp.centres[i])
	if !ok {
		return err
	}
	if !positiveFinite(x) {
		return fmt.Errorf("%w: band %d wavelength %s in %s; a band centre is a positive number", ErrBandMetadata, i+1, fmtValue(x), mdLabel)
	}
	sp.centres[i] = toNM([]float64{x}, unit)[0]
	sp.nc++
	if sp.source == "" {
		sp.source = "band metadata"
		if driver == "ENVI" {
			sp.source = "ENVI header"
		}
	}
	return nil
}

// widthFromMetadata reads band i's "fwhm" item when IMAGERY gave no width.
func (sp *bandSpectra) widthFromMetadata(i int, md map[string]string, unit, mdLabel string) error {
	x, ok, err := unsetBandNumber(i, md, "fwhm", sp.widths[i])
	if !ok {
		return err
	}
	if !(x >= 0) || math.IsInf(x, 0) {
		return fmt.Errorf("%w: band %d fwhm %s in %s; a band width is a positive number", ErrBandMetadata, i+1, fmtValue(x), mdLabel)
	}
	// A width takes its band's centre's unit, or the same
	// magnitude rule when there is no unit (1e-2 um, not nm).
	f := nmPerUnit(unit)
	if f <= 0 {
		f = 1
		if !math.IsNaN(sp.centres[i]) && sp.centres[i] > 100 && x < 1 {
			f = 1000
		}
	}
	sp.widths[i] = x * f
	sp.nw++
	return nil
}

// unsetBandNumber parses band i's (0-based) metadata item key when the
// band has no value for it yet (have is NaN); ok is false, with a nil
// error, when there is no item or the band has its value.
func unsetBandNumber(i int, md map[string]string, key string, have float64) (x float64, ok bool, err error) {
	v, found := lookupFold(md, key)
	if !found || !math.IsNaN(have) {
		return 0, false, nil
	}
	x, err = parseBandNumber(i, key, v)
	return x, err == nil, err
}

// parseBandNumber parses band (0-based) metadata item key's value v.
func parseBandNumber(band int, key, v string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: band %d %s %q is not a number", ErrBandMetadata, band+1, key, strings.TrimSpace(v))
	}
	return x, nil
}

// fromENVIHeader checks the ENVI domain's wavelength, fwhm, bbl, gain and
// offset lists (of n values each), takes the centres and widths from them
// when no band gave any, and returns the bbl list (nil when absent).
// The header's lists are checked whether or not the band metadata
// already gave the values: GDAL hands a list's values to the bands
// one by one and drops what it cannot place.
func (sp *bandSpectra) fromENVIHeader(envi map[string]string, unit string, n int) ([]float64, error) {
	wl, err := checkedENVIList(envi, "wavelength", n, checkCentres)
	if err != nil {
		return nil, err
	}
	if wl != nil && sp.nc == 0 {
		sp.centres, sp.nc, sp.source = toNM(wl, unit), n, "ENVI header"
	}
	fw, err := checkedENVIList(envi, "fwhm", n, checkWidths)
	if err != nil {
		return nil, err
	}
	if fw != nil && sp.nw == 0 {
		sp.widths, sp.nw = widthsNM(fw, unit, sp.centres), n
	}
	bbl, err := enviList(envi, "bbl", n)
	if err != nil {
		return nil, err
	}
	if err := checkENVIGainsOffsets(envi, n); err != nil {
		return nil, err
	}
	return bbl, nil
}

// checkENVIGainsOffsets checks the header's data gain values (finite, not
// 0) and data offset values (finite).
func checkENVIGainsOffsets(envi map[string]string, n int) error {
	for _, key := range []string{"data_gain_values", "data_offset_values"} {
		vals, err := enviList(envi, key, n)
		if err != nil {
			return err
		}
		what := strings.TrimSuffix(strings.ReplaceAll(key, "_", " "), " values")
		if key == "data_gain_values" {
			err = checkGains(vals, what, "the ENVI header")
		} else {
			err = checkFinite(vals, what, "the ENVI header")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// enviList parses the ENVI domain's list key, which must hold n numbers;
// nil when the header has no such list.
func enviList(envi map[string]string, key string, n int) ([]float64, error) {
	v, ok := lookupFold(envi, key)
	if !ok {
		return nil, nil
	}
	name := strings.ReplaceAll(key, "_", " ")
	vals, err := parseNumberList(v)
	if err != nil {
		return nil, fmt.Errorf("%w: ENVI header %s: %w", ErrBandMetadata, name, err)
	}
	if len(vals) != n {
		return nil, fmt.Errorf("%w: ENVI header lists %d %s values for %d bands", ErrBandMetadata, len(vals), name, n)
	}
	return vals, nil
}

// checkedENVIList is enviList's list key checked by check, which names it
// as "the ENVI header's KEY list"; nil when the header has no such list.
func checkedENVIList(envi map[string]string, key string, n int, check func(vals []float64, from string) error) ([]float64, error) {
	vals, err := enviList(envi, key, n)
	if err != nil || vals == nil {
		return nil, err
	}
	if err := check(vals, "the ENVI header's "+key+" list"); err != nil {
		return nil, err
	}
	return vals, nil
}

// checkENVIHeaderFile parses the ENVI header of the cube name (name.hdr,
// or the name with its extension replaced), which GDAL's ENVI driver reads
// leniently: a list whose "{" is never closed loses its last values (or
// swallows the next line) without a word. pnec's own parser refuses it.
// Remote names are left to GDAL.
func checkENVIHeaderFile(name string) error {
	if remotePath(name) {
		return nil
	}
	base := strings.TrimSuffix(name, path.Ext(name))
	for _, h := range []string{name + ".hdr", base + ".hdr", name + ".HDR", base + ".HDR"} {
		if !vsiExists(h) {
			continue
		}
		text, err := vsiReadFile(h, maxSidecarBytes)
		if err != nil {
			return nil // GDAL read it; its own reading stands
		}
		if _, err := parseENVIHeader(string(text)); err != nil && !errors.Is(err, errNotENVIHeader) {
			return fmt.Errorf("%w: %s: %w", ErrBandMetadata, path.Base(h), err)
		}
		return nil
	}
	return nil
}

// widthsNM converts band widths given in unit to nm; without a unit the
// centres' magnitude decides, as toNM does for them.
func widthsNM(vals []float64, unit string, centresNM []float64) []float64 {
	if nmPerUnit(unit) != 0 {
		return toNM(vals, unit)
	}
	f := 1.0
	if maxAbs(vals) < 1 && len(centresNM) > 0 && maxAbs(centresNM) > 100 {
		f = 1000 // widths in um beside centres already in nm
	} else if maxAbs(vals) < 100 && maxAbs(centresNM) < 100 {
		f = 1000
	}
	out := make([]float64, len(vals))
	for i, v := range vals {
		out[i] = v * f
	}
	return out
}

// badFromBBL turns an ENVI bad band list (1 good, 0 bad) into flags; nil
// when it marks no band bad (or there is none).
func badFromBBL(bbl []float64) []bool {
	var out []bool
	for i, v := range bbl {
		if v == 0 {
			if out == nil {
				out = make([]bool, len(bbl))
			}
			out[i] = true
		}
	}
	return out
}

// reflectanceAfterGain is the radiometry of reflectance stored scaled by
// factor (ENVI's reflectance scale factor: the stored value of reflectance
// 1) once the bands' gains are applied: factor times a gain shared by every
// band; scale unknown when the gains differ or offsets are set.
func reflectanceAfterGain(factor float64, gains, offsets []float64) spectral.Radiometry {
	r := spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: factor}
	for i, g := range gains {
		if g != gains[0] || (i < len(offsets) && offsets[i] != 0) {
			r.Scale = 0
			return r
		}
	}
	if len(gains) > 0 {
		// 9 significant digits: 10000 x 1e-4 is 1, not 0.9999999999.
		r.Scale, _ = strconv.ParseFloat(strconv.FormatFloat(factor*gains[0], 'g', 9, 64), 64)
	}
	return r
}

// positiveFinite reports whether v is a number above 0 and not infinite.
func positiveFinite(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// fmtValue writes a band value as a header would ("nan", "-10").
func fmtValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// checkCentres refuses band centres that are not positive numbers, naming
// the first such band (1-based) and where the values came from.
func checkCentres(vals []float64, from string) error {
	for i, v := range vals {
		if !positiveFinite(v) {
			return fmt.Errorf("%w: %s gives band %d the wavelength %s; a band centre is a positive number", ErrBandMetadata, from, i+1, fmtValue(v))
		}
	}
	return nil
}

// checkWidths refuses band widths (FWHM) that are negative or not numbers;
// 0 is taken as "not known" (some writers fill unknown widths with it).
func checkWidths(vals []float64, from string) error {
	for i, v := range vals {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s gives band %d the FWHM %s; a band width is a positive number", ErrBandMetadata, from, i+1, fmtValue(v))
		}
	}
	return nil
}

// checkGains refuses band gains (ENVI data gain values, a product's
// gains) of 0 or not numbers: every value of the band would read as its
// offset.
func checkGains(vals []float64, what, from string) error {
	for i, v := range vals {
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s gives band %d the %s %s; a gain is a non-zero number", ErrBandMetadata, from, i+1, what, fmtValue(v))
		}
	}
	return nil
}

// checkFinite refuses band values (offsets) that are not numbers.
func checkFinite(vals []float64, what, from string) error {
	for i, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s gives band %d the %s %s; want a number", ErrBandMetadata, from, i+1, what, fmtValue(v))
		}
	}
	return nil
}

// parseReflectanceScale reads an ENVI reflectance scale factor: the stored
// value of reflectance 1, a positive number.
func parseReflectanceScale(v, from string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !positiveFinite(f) {
		return 0, fmt.Errorf("%w: %s gives the reflectance scale factor %q; it is the stored value of reflectance 1, a positive number (e.g. 10000)", ErrBandMetadata, from, strings.TrimSpace(v))
	}
	return f, nil
}

// checkPartialCentres refuses a band set where some bands have a centre and
// others none: the scene's band metadata is incomplete (an ENVI list cut
// short, a band without its wavelength), and which band is which cannot be
// told.
func checkPartialCentres(centres []float64, from string) error {
	n := 0
	for _, c := range centres {
		if !math.IsNaN(c) {
			n++
		}
	}
	if n == 0 || n == len(centres) {
		return nil
	}
	for i, c := range centres {
		if math.IsNaN(c) {
			return fmt.Errorf("%w: %s gives %d of the %d bands a wavelength but none to band %d", ErrBandMetadata, from, n, len(centres), i+1)
		}
	}
	return nil
}

func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// parseNumberList parses an ENVI-style list "{ 400.5, 410, 420 }" (braces
// optional, commas or spaces between numbers).
func parseNumberList(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "{")
	s = strings.TrimSuffix(s, "}")
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	out := make([]float64, 0, len(fields))
	for _, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("number list item %q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// nmPerUnit returns the factor that converts a wavelength in unit to
// nanometres, or 0 when the unit is unknown. The empty unit is resolved by
// the caller from the values' magnitude.
func nmPerUnit(unit string) float64 {
	u := strings.ToLower(strings.TrimSpace(unit))
	switch u {
	case "nm", "nanometers", "nanometer", "nanometres", "nanometre":
		return 1
	case "um", "µm", "μm", "micrometers", "micrometer", "micrometres", "micrometre", "microns", "micron":
		return 1000
	case "mm", "millimeters", "millimeter", "millimetres", "millimetre":
		return 1e6
	case "m", "meters", "meter", "metres", "metre":
		return 1e9
	case "cm-1", "wavenumber", "wavenumbers":
		return -1 // wavenumbers in cm^-1: nm = 1e7 / v
	}
	return 0
}

// toNM converts wavelengths in unit to nanometres. With no (or an unknown)
// unit, values below 100 are taken as micrometres (no imaging spectrometer
// has bands below 100 nm) and others as nanometres.
func toNM(vals []float64, unit string) []float64 {
	f := nmPerUnit(unit)
	if f == 0 {
		f = 1
		if len(vals) > 0 && maxAbs(vals) < 100 {
			f = 1000
		}
	}
	out := make([]float64, len(vals))
	for i, v := range vals {
		if f < 0 {
			if v != 0 {
				out[i] = 1e7 / v
			}
			continue
		}
		out[i] = v * f
	}
	return out
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// formatNumberList writes values as an ENVI list "{400, 410.5}".
func formatNumberList(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
