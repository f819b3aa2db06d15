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

// ReliabilityKinds lists every kind, in the order reports print them.
var ReliabilityKinds = []ReliabilityKind{
	ReliabilityGate, ReliabilityMaxProb, ReliabilityMargin, ReliabilityEntropy, ReliabilityCombined,
}

// DefaultReliability is the kind products carry unless asked otherwise: the
// candidate with the best error AUROC on held-out pixels of SalinasA and
// JasperRidge (measurements in docs/readme/evaluate.md).
const DefaultReliability = ReliabilityMargin

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
