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

// DefaultReliability is the kind products carry unless asked otherwise:
// the candidate with the best worst-case error AUROC on held-out pixels of
// SalinasA and JasperRidge (measurements in docs/model.md, "Reliability"). It
// needs the training spectra the model file stores; for a model file
// without them products fall back to FallbackReliability.
const DefaultReliability = ReliabilitySpectral

// FallbackReliability is the default for models without training spectra:
// the best-measured kind computed from P_rec and G~ alone.
const FallbackReliability = ReliabilityCombined

// AllReliabilityKinds lists every kind, in the order reports print them.
func AllReliabilityKinds() []ReliabilityKind {
	return append(append([]ReliabilityKind(nil), ReliabilityKinds...), SpectralReliabilityKinds...)
}

// ParseReliability checks a kind's name ("" = DefaultReliability).
func ParseReliability(s string) (ReliabilityKind, error) {
	if s == "" {
		return DefaultReliability, nil
	}
	all := AllReliabilityKinds()
	for _, k := range all {
		if strings.EqualFold(s, string(k)) {
			return k, nil
		}
	}
	names := make([]string, len(all))
	for i, k := range all {
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

// Reliability computes kind for every pixel of prec ([pixels][classes],
// recovered probabilities) with uncertainty ([pixels], G~; may be nil for
// kinds that do not use it). Pixels with no data get NaN. The spectral
// kinds need each pixel's spectrum: use PixelSpectral with AgreementOf.
func Reliability(kind ReliabilityKind, prec, uncertainty []float32, classes int) ([]float32, error) {
	if _, err := ParseReliability(string(kind)); err != nil {
		return nil, err
	}
	if kind.NeedsSpectrum() {
		return nil, fmt.Errorf("reliability %s: needs the pixels' spectra (PixelSpectral)", kind)
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
