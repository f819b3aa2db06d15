package geo

import (
	"fmt"
	"math"
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
func (s *Scene) readSpectral(in *Info) error {
	n := len(s.bands)
	centres, widths := nanSlice(n), nanSlice(n)
	var nc, nw int
	source := ""
	for i, b := range s.bands {
		img := b.Metadatas(godal.Domain("IMAGERY"))
		if v, ok := lookupFold(img, "CENTRAL_WAVELENGTH_UM"); ok {
			if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				centres[i] = x * 1000
				nc++
				source = "IMAGERY metadata"
			}
		}
		if v, ok := lookupFold(img, "FWHM_UM"); ok {
			if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				widths[i] = x * 1000
				nw++
			}
		}
		md := b.Metadatas()
		unit, _ := lookupFold(md, "wavelength_units")
		if in.WavelengthUnits == "" {
			in.WavelengthUnits = unit
		}
		if v, ok := lookupFold(md, "wavelength"); ok && math.IsNaN(centres[i]) {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return fmt.Errorf("band %d wavelength %q: %w", i+1, v, err)
			}
			centres[i] = toNM([]float64{x}, unit)[0]
			nc++
			if source == "" {
				source = "band metadata"
			}
		}
		if v, ok := lookupFold(md, "fwhm"); ok && math.IsNaN(widths[i]) {
			if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				// A width takes its band's centre's unit, or the same
				// magnitude rule when there is no unit (1e-2 um, not nm).
				f := nmPerUnit(unit)
				if f <= 0 {
					f = 1
					if !math.IsNaN(centres[i]) && centres[i] > 100 && x < 1 {
						f = 1000
					}
				}
				widths[i] = x * f
				nw++
			}
		}
	}
	envi := s.ds.Metadatas(godal.Domain("ENVI"))
	unit, _ := lookupFold(envi, "wavelength_units")
	if in.WavelengthUnits == "" {
		in.WavelengthUnits = unit
	}
	list := func(key string) ([]float64, error) {
		v, ok := lookupFold(envi, key)
		if !ok {
			return nil, nil
		}
		vals, err := parseNumberList(v)
		if err != nil {
			return nil, fmt.Errorf("ENVI header %s: %w", strings.ReplaceAll(key, "_", " "), err)
		}
		if len(vals) != n {
			return nil, fmt.Errorf("ENVI header lists %d %s values for %d bands", len(vals), strings.ReplaceAll(key, "_", " "), n)
		}
		return vals, nil
	}
	if nc == 0 {
		vals, err := list("wavelength")
		if err != nil {
			return err
		}
		if vals != nil {
			centres, nc, source = toNM(vals, unit), n, "ENVI header"
		}
	}
	if nw == 0 {
		vals, err := list("fwhm")
		if err != nil {
			return err
		}
		if vals != nil {
			widths, nw = widthsNM(vals, unit, centres), n
		}
	}
	bbl, err := list("bbl")
	if err != nil {
		return err
	}
	if nc > 0 {
		in.WavelengthsNM, in.SpectralSource = centres, source
	}
	if nw > 0 {
		in.FWHMNM = widths
	}
	in.BadBands = badFromBBL(bbl)
	if v, ok := lookupFold(envi, "reflectance_scale_factor"); ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f > 0 {
			in.Radiometry = reflectanceAfterGain(f, in.Scale, in.Offset)
		}
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
