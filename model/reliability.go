package model

import (
	"fmt"
	"math"
	"strings"
)

// ReliabilityKind names a per-pixel reliability score in 0..1 (1 = the
// label is most likely right) computed from the recovered probabilities
// P_rec and the network's fused uncertainty G~. The product's reliability
// band is one of them; 1 - reliability is the uncertainty of the paper's
// reliability table.
type ReliabilityKind string

const (
	// ReliabilityGate is 1 - G~, the network's own fused uncertainty turned round.
	ReliabilityGate ReliabilityKind = "gate"
	// ReliabilityMaxProb is the largest component of P_rec.
	ReliabilityMaxProb ReliabilityKind = "maxprob"
	// ReliabilityMargin is the gap between the two largest components of P_rec.
	ReliabilityMargin ReliabilityKind = "margin"
	// ReliabilityEntropy is 1 - H(P_rec)/log(classes), one minus the normalised entropy.
	ReliabilityEntropy ReliabilityKind = "entropy"
	// ReliabilityCombined is the geometric mean of the margin and 1 - G~:
	// a pixel is reliable only when both its neighbourhood-recovered
	// probabilities and the network's gate agree. Fixed form, nothing fitted.
	ReliabilityCombined ReliabilityKind = "combined"
)

// Kinds that also need the pixel's spectrum and a SpectralReference (the
// training pixels' spectra); Pixel cannot compute them, PixelSpectral can.
const (
	// ReliabilitySpectral is the spectral agreement of the pixel with its
	// label: SpectralReference.Agreement.
	ReliabilitySpectral ReliabilityKind = "spectral"
	// ReliabilitySpectralMargin is the geometric mean of the spectral
	// agreement and the margin of P_rec.
	ReliabilitySpectralMargin ReliabilityKind = "spectral-margin"
)

// ReliabilityKinds lists the kinds computed from P_rec and G~ alone, which
// products can carry, in the order reports print them.
var ReliabilityKinds = []ReliabilityKind{
	ReliabilityGate, ReliabilityMaxProb, ReliabilityMargin, ReliabilityEntropy, ReliabilityCombined,
}

// SpectralReliabilityKinds lists the kinds that need a SpectralReference.
var SpectralReliabilityKinds = []ReliabilityKind{ReliabilitySpectral, ReliabilitySpectralMargin}

// DefaultReliability is the kind products carry unless asked otherwise: of
// ReliabilityKinds, the one with the best error AUROC on held-out pixels of
// SalinasA and JasperRidge (measurements in docs/readme/evaluate.md).
const DefaultReliability = ReliabilityCombined

// ParseReliability checks a kind's name ("" = DefaultReliability).
func ParseReliability(s string) (ReliabilityKind, error) {
	if s == "" {
		return DefaultReliability, nil
	}
	for _, k := range ReliabilityKinds {
		if strings.EqualFold(s, string(k)) {
			return k, nil
		}
	}
	names := make([]string, len(ReliabilityKinds))
	for i, k := range ReliabilityKinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("reliability %q: unknown; want one of %s", s, strings.Join(names, ", "))
}

// Pixel computes the reliability of one pixel from its recovered
// probabilities p (one per class) and its fused uncertainty g (G~ in 0..1).
// It returns NaN for a pixel with no data (probabilities summing to zero, as
// Recover leaves invalid pixels) and for an unknown kind.
func (k ReliabilityKind) Pixel(p []float32, g float32) float32 {
	var sum, p1, p2 float32
	for _, v := range p {
		sum += v
		switch {
		case v > p1:
			p1, p2 = v, p1
		case v > p2:
			p2 = v
		}
	}
	if !(sum > 0) {
		return float32(math.NaN())
	}
	clamp := func(x float64) float32 { return float32(math.Min(1, math.Max(0, x))) }
	// Probabilities are renormalised so that rounding in upstream sums does
	// not push scores past 0..1.
	inv := 1 / float64(sum)
	switch k {
	case ReliabilityGate:
		return clamp(1 - float64(g))
	case ReliabilityMaxProb:
		return clamp(float64(p1) * inv)
	case ReliabilityMargin:
		return clamp(float64(p1-p2) * inv)
	case ReliabilityEntropy:
		if len(p) < 2 {
			return 1
		}
		h := 0.0
		for _, v := range p {
			if q := float64(v) * inv; q > 0 {
				h -= q * math.Log(q)
			}
		}
		return clamp(1 - h/math.Log(float64(len(p))))
	case ReliabilityCombined:
		return clamp(math.Sqrt(math.Max(0, float64(p1-p2)*inv) * math.Max(0, 1-float64(g))))
	}
	return float32(math.NaN())
}

// NeedsSpectrum reports whether k needs a SpectralReference (PixelSpectral).
func (k ReliabilityKind) NeedsSpectrum() bool {
	return k == ReliabilitySpectral || k == ReliabilitySpectralMargin
}

// PixelSpectral is Pixel for every kind, given the pixel's spectral
// agreement with its label (SpectralReference.Agreement; ignored by the
// kinds that do not need it).
func (k ReliabilityKind) PixelSpectral(p []float32, g, agreement float32) float32 {
	switch k {
	case ReliabilitySpectral:
		return agreement
	case ReliabilitySpectralMargin:
		m := ReliabilityMargin.Pixel(p, g)
		return float32(math.Sqrt(float64(m) * float64(agreement)))
	}
	return k.Pixel(p, g)
}

// SpectralReference holds the spectra of the training pixels and their
// dense classes. Its Agreement says whether a pixel's spectrum looks like
// the training pixels of the class it was given rather than those of any
// other class, by spectral angle, which ignores illumination scale.
type SpectralReference struct {
	bands, classes int
	unit           []float64 // [n][bands], each spectrum scaled to unit length
	class          []int
}

// NewSpectralReference builds a reference from spectra ([n][bands],
// pixel-interleaved) of dense classes class[i] in 0..classes-1. Spectra of
// zero length (no data) are skipped.
func NewSpectralReference(spectra []float32, bands int, class []int, classes int) (*SpectralReference, error) {
	if bands < 1 || len(spectra) != len(class)*bands {
		return nil, fmt.Errorf("spectral reference: %d values for %d pixels of %d bands", len(spectra), len(class), bands)
	}
	r := &SpectralReference{bands: bands, classes: classes}
	seen := map[int]bool{}
	for i, c := range class {
		if c < 0 || c >= classes {
			return nil, fmt.Errorf("spectral reference: pixel %d has class %d outside 0..%d", i, c, classes-1)
		}
		u, ok := unitSpectrum(spectra[i*bands : (i+1)*bands])
		if !ok {
			continue
		}
		r.unit = append(r.unit, u...)
		r.class = append(r.class, c)
		seen[c] = true
	}
	if len(seen) < 2 {
		return nil, fmt.Errorf("spectral reference: spectra of %d classes, need at least 2", len(seen))
	}
	return r, nil
}

func unitSpectrum(s []float32) ([]float64, bool) {
	n := 0.0
	for _, v := range s {
		n += float64(v) * float64(v)
	}
	if !(n > 0) || math.IsInf(n, 0) {
		return nil, false
	}
	inv := 1 / math.Sqrt(n)
	u := make([]float64, len(s))
	for i, v := range s {
		u[i] = float64(v) * inv
	}
	return u, true
}

// Bands is the spectrum length the reference takes.
func (r *SpectralReference) Bands() int { return r.bands }

// Agreement returns a_other / (a_label + a_other) in 0..1, with a_label the
// spectral angle from spectrum to the nearest reference pixel of class label
// and a_other to the nearest of any other class: above 0.5 when the spectrum
// is closer to its label's training pixels. A label without reference pixels
// gives 0; a zero spectrum NaN.
func (r *SpectralReference) Agreement(spectrum []float32, label int) float32 {
	if len(spectrum) != r.bands {
		return float32(math.NaN())
	}
	norm := 0.0
	for _, v := range spectrum {
		norm += float64(v) * float64(v)
	}
	if !(norm > 0) || math.IsInf(norm, 0) {
		return float32(math.NaN())
	}
	// The angle falls as the cosine rises, so the nearest reference of each
	// group is the one with the largest dot product with the unit reference;
	// acos is taken once per group, not once per reference.
	cosLabel, cosOther := math.Inf(-1), math.Inf(-1)
	for j, c := range r.class {
		ref := r.unit[j*r.bands : (j+1)*r.bands : (j+1)*r.bands]
		var d0, d1, d2, d3 float64
		b := 0
		for ; b+4 <= len(ref); b += 4 {
			d0 += ref[b] * float64(spectrum[b])
			d1 += ref[b+1] * float64(spectrum[b+1])
			d2 += ref[b+2] * float64(spectrum[b+2])
			d3 += ref[b+3] * float64(spectrum[b+3])
		}
		for ; b < len(ref); b++ {
			d0 += ref[b] * float64(spectrum[b])
		}
		dot := d0 + d1 + d2 + d3
		if c == label {
			cosLabel = math.Max(cosLabel, dot)
		} else {
			cosOther = math.Max(cosOther, dot)
		}
	}
	if math.IsInf(cosLabel, -1) {
		return 0
	}
	inv := 1 / math.Sqrt(norm)
	angle := func(cos float64) float64 { return math.Acos(math.Max(-1, math.Min(1, cos*inv))) }
	aLabel, aOther := angle(cosLabel), angle(cosOther)
	if aLabel+aOther == 0 {
		return 0.5
	}
	return float32(aOther / (aLabel + aOther))
}

// Reliability computes kind for every pixel of prec ([pixels][classes],
// recovered probabilities) with uncertainty ([pixels], G~; may be nil for
// kinds that do not use it). Pixels with no data get NaN.
func Reliability(kind ReliabilityKind, prec, uncertainty []float32, classes int) ([]float32, error) {
	if _, err := ParseReliability(string(kind)); err != nil {
		return nil, err
	}
	if classes < 1 || len(prec)%classes != 0 {
		return nil, fmt.Errorf("reliability: %d probabilities do not divide into %d classes", len(prec), classes)
	}
	n := len(prec) / classes
	needG := kind == ReliabilityGate || kind == ReliabilityCombined
	if needG && len(uncertainty) != n {
		return nil, fmt.Errorf("reliability %s: %d uncertainties for %d pixels", kind, len(uncertainty), n)
	}
	out := make([]float32, n)
	for i := range out {
		g := float32(0)
		if needG {
			g = uncertainty[i]
		}
		out[i] = kind.Pixel(prec[i*classes:(i+1)*classes], g)
	}
	return out, nil
}
