package geo

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// enviHeader is an ENVI header's fields: keys lower-cased with single
// spaces ("data gain values"), values as written, a brace list's braces
// kept ("{ 400.5, 410 }").
type enviHeader map[string]string

// errNotENVIHeader: the text does not start with the "ENVI" line.
var errNotENVIHeader = errors.New("not an ENVI header (its first line is not ENVI)")

// parseENVIHeader reads an ENVI header: a first line "ENVI", then lines
// "key = value", where a value starting with "{" runs to the matching "}"
// over any number of lines; lines starting with ";" are comments. GDAL's
// ENVI driver reads the headers of raw cubes itself; pnec reads the headers
// that some products put beside a GeoTIFF, which GDAL's GeoTIFF driver
// ignores.
func parseENVIHeader(text string) (enviHeader, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimSpace(first) != "ENVI" {
		return nil, errNotENVIHeader
	}
	h := enviHeader{}
	line := 1
	for rest != "" {
		var l string
		l, rest, _ = strings.Cut(rest, "\n")
		line++
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, ";") {
			continue
		}
		key, val, ok := strings.Cut(t, "=")
		if !ok {
			return nil, fmt.Errorf("ENVI header line %d: %q is not KEY = VALUE", line, truncate(t, 40))
		}
		key = strings.ToLower(strings.Join(strings.Fields(key), " "))
		val = strings.TrimSpace(val)
		if key == "" {
			return nil, fmt.Errorf("ENVI header line %d: empty key", line)
		}
		if strings.HasPrefix(val, "{") {
			// Gather lines until the braces balance.
			depth := strings.Count(val, "{") - strings.Count(val, "}")
			for depth > 0 {
				if rest == "" {
					return nil, fmt.Errorf("ENVI header: %s: list not closed", key)
				}
				l, rest, _ = strings.Cut(rest, "\n")
				line++
				val += " " + strings.TrimSpace(l)
				depth += strings.Count(l, "{") - strings.Count(l, "}")
			}
		}
		h[key] = val
	}
	return h, nil
}

// numbers is the number list (or single number) of key; nil when absent.
func (h enviHeader) numbers(key string) ([]float64, error) {
	v, ok := h[key]
	if !ok {
		return nil, nil
	}
	vals, err := parseNumberList(v)
	if err != nil {
		return nil, fmt.Errorf("%w: ENVI header %s: %w", ErrBandMetadata, key, err)
	}
	return vals, nil
}

// number is key's single number; ok false when absent or not one number.
func (h enviHeader) number(key string) (float64, bool) {
	v, err := h.numbers(key)
	if err != nil || len(v) != 1 || math.IsNaN(v[0]) {
		return 0, false
	}
	return v[0], true
}

// int is key's whole number; ok false when absent or not one.
func (h enviHeader) int(key string) (int, bool) {
	v, ok := h.number(key)
	if !ok || v != math.Trunc(v) || v < 0 || v > math.MaxInt32 {
		return 0, false
	}
	return int(v), true
}

// strings is key's brace list of strings ("{blue, green}"); nil when absent.
func (h enviHeader) strings(key string) []string {
	v, ok := h[key]
	if !ok {
		return nil
	}
	v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "{"), "}")
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// perBand is key's list when it has one value per band: an error when it
// has another count, nil when absent.
func (h enviHeader) perBand(key string, bands int) ([]float64, error) {
	vals, err := h.numbers(key)
	if err != nil || vals == nil {
		return nil, err
	}
	if len(vals) != bands {
		return nil, fmt.Errorf("%w: ENVI header lists %d %s for %d bands", ErrBandMetadata, len(vals), key, bands)
	}
	return vals, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
