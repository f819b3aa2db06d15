package geo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

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
