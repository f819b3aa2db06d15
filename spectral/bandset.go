package spectral

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// BandSet is the spectral identity of a raster's bands, or of a model's
// input bands.
type BandSet struct {
	// Bands is the number of bands.
	Bands int
	// CentresNM are the band centre wavelengths in nm, one per band; nil
	// when unknown, NaN for a single band without one.
	CentresNM []float64
	// FWHMNM are the bands' full widths at half maximum in nm; nil when
	// unknown, NaN (or <= 0) for a single band without one.
	FWHMNM []float64
	// Bad marks bands declared unusable (ENVI bbl 0, EMIT good_wavelengths
	// 0, PRISMA's unused bands, EnMAP's no-data-filled water-vapour bands);
	// nil when none are.
	Bad []bool
}

// HasCentres reports whether every band has a centre wavelength.
func (b BandSet) HasCentres() bool {
	if len(b.CentresNM) != b.Bands || b.Bands == 0 {
		return false
	}
	for _, c := range b.CentresNM {
		if !(c > 0) || math.IsInf(c, 0) {
			return false
		}
	}
	return true
}

// IsBad reports whether band i (0-based) is declared bad.
func (b BandSet) IsBad(i int) bool { return i < len(b.Bad) && b.Bad[i] }

// Good returns the 0-based indices of the bands not declared bad.
func (b BandSet) Good() []int {
	out := make([]int, 0, b.Bands)
	for i := range b.Bands {
		if !b.IsBad(i) {
			out = append(out, i)
		}
	}
	return out
}

// BadCount is the number of bands declared bad.
func (b BandSet) BadCount() int { return b.Bands - len(b.Good()) }

// FWHM returns band i's width in nm and whether it is known.
func (b BandSet) FWHM(i int) (float64, bool) {
	if i >= len(b.FWHMNM) {
		return 0, false
	}
	f := b.FWHMNM[i]
	return f, f > 0 && !math.IsInf(f, 0)
}

// Subset is the band set of the bands idx (0-based, in that order).
func (b BandSet) Subset(idx []int) BandSet {
	out := BandSet{Bands: len(idx)}
	pick := func(v []float64) []float64 {
		if v == nil {
			return nil
		}
		r := make([]float64, len(idx))
		for k, i := range idx {
			r[k] = math.NaN()
			if i < len(v) {
				r[k] = v[i]
			}
		}
		return r
	}
	out.CentresNM, out.FWHMNM = pick(b.CentresNM), pick(b.FWHMNM)
	for k, i := range idx {
		if b.IsBad(i) {
			if out.Bad == nil {
				out.Bad = make([]bool, len(idx))
			}
			out.Bad[k] = true
		}
	}
	return out
}

// Range returns the lowest and highest centre of the bands idx (all bands
// when idx is nil); NaN when none has one.
func (b BandSet) Range(idx []int) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	visit := func(i int) {
		if i < len(b.CentresNM) && b.CentresNM[i] > 0 {
			lo, hi = math.Min(lo, b.CentresNM[i]), math.Max(hi, b.CentresNM[i])
		}
	}
	if idx == nil {
		for i := range b.Bands {
			visit(i)
		}
	} else {
		for _, i := range idx {
			visit(i)
		}
	}
	if math.IsInf(lo, 1) {
		return math.NaN(), math.NaN()
	}
	return lo, hi
}

// medianFWHM is the median of the known widths of the bands idx (NaN when none is known).
func (b BandSet) medianFWHM(idx []int) float64 {
	var ws []float64
	for _, i := range idx {
		if f, ok := b.FWHM(i); ok {
			ws = append(ws, f)
		}
	}
	return median(ws)
}

// Describe is the band set in a few words: "224 bands, 418.2-2445.5 nm,
// FWHM 5.8-11.2 nm, 6 bad" (the parts it knows).
func (b BandSet) Describe() string {
	s := fmt.Sprintf("%d bands", b.Bands)
	if lo, hi := b.Range(nil); !math.IsNaN(lo) {
		s += fmt.Sprintf(", %s-%s nm", fmtNM(lo), fmtNM(hi))
	} else {
		s += ", no wavelengths"
	}
	var fs []float64
	for i := range b.Bands {
		if f, ok := b.FWHM(i); ok {
			fs = append(fs, f)
		}
	}
	if len(fs) > 0 {
		lo, hi := slices.Min(fs), slices.Max(fs)
		if lo == hi {
			s += fmt.Sprintf(", FWHM %s nm", fmtNM(lo))
		} else {
			s += fmt.Sprintf(", FWHM %s-%s nm", fmtNM(lo), fmtNM(hi))
		}
	}
	if n := b.BadCount(); n > 0 {
		s += fmt.Sprintf(", %d bad", n)
	}
	return s
}

// fmtNM writes a wavelength with at most one decimal.
func fmtNM(v float64) string {
	if v == math.Round(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
