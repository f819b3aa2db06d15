package model

import (
	"math"
	"slices"

	"github.com/pnec/pnec/model/internal/kernels"
)

// minCopyPenaltyRad is the smallest copy penalty above 0 a model file
// holds (training chose 0 to 0.04 rad until 2026-12-07, and pi since):
// penalised's shortcut holds from it on.
const minCopyPenaltyRad = 0.005

// alignSamplePixels bounds the pixels a call of ClassDistances aligns on:
// the choice needs the bulk of an acquisition, not every pixel, and costs
// then a small share of the distances themselves.
const alignSamplePixels = 4096

// NewAlignedReference is a reference of the spectra of class (as
// NewSpectralReference takes them) and of groups of changed copies of
// them: changed[g] is every spectrum changed by one radiometric change,
// in the same order ([n][bands]). The pixels of one ClassDistances call
// are taken as one acquisition: the group (or the spectra themselves)
// that fits them best (on their purest pixels, and a group of copies only
// where it fits clearly closer than the spectra: alignFrom) is aligned,
// and an angle to any other reference counts penaltyRad more than it
// measures. A class's distance is that of min(angle to its nearest
// aligned reference, angle to its nearest other one + penaltyRad).
//
// The fused decision measures its angles so (Model.DecisionReference).
// Copies of each class changed as a new acquisition changes a scene let
// it tolerate the change; counted in full on the scene they were made
// from, a copy of one class takes the pixels that lie near another
// class's own spectra (JasperRidge's soil and road, whose mixed pixels
// differ by such tilts), and counting every copy only with a penalty
// loses the changed scene. Aligned, a clean scene is measured against the
// spectra and a tilted one against the copies tilted alike. A penalty of
// 0 gives the distances of one reference of spectra and copies together,
// bit for bit, without aligning; a penalty of pi measures against the
// aligned group alone.
func NewAlignedReference(spectra []float32, bands int, class []int, classes int, changed [][]float32, penaltyRad float64) (*SpectralReference, error) {
	return newReference(spectra, bands, class, classes, changed, nil, penaltyRad, 0)
}

// newChangedReference is NewAlignedReference of the spectra changed by
// each of changes, whose copies' dots are made from a smaller basis where
// the changes allow it (linearCopies): the fused decision's reference.
func newChangedReference(spectra []float32, bands int, class []int, classes int, changes []Radiometric, penaltyRad float64) (*SpectralReference, error) {
	return newChangedReferenceMean(spectra, bands, class, classes, changes, penaltyRad, 0)
}

// newChangedReferenceMean is newChangedReference measuring each class in
// the group counted in full to the unit mean of its localMean nearest
// references there (Decision.LocalMean; 0 or 1: the nearest).
func newChangedReferenceMean(spectra []float32, bands int, class []int, classes int, changes []Radiometric, penaltyRad float64, localMean int) (*SpectralReference, error) {
	changed := make([][]float32, len(changes))
	for g, c := range changes {
		changed[g] = changedSpectra(spectra, bands, c)
	}
	return newReference(spectra, bands, class, classes, changed, changes, penaltyRad, localMean)
}

// The alignment's rule (alignedGroup). More references fit mixed pixels
// by chance: on JasperRidge (mixed pixels everywhere), a group of copies
// fitted the other half of the scene, the same acquisition, 1.5-3% closer
// on average than the spectra in 3 of 12 draws, as close as a real 10%
// linear tilt fitted its own copies (0.5%), and measured against the
// copies the map lost up to 5.6 points (scripts/decision_alternatives.py).
// A real change moves the pure pixels off the spectra, which chance does
// not: on the quarter of the sample nearest any reference, the same
// draws' groups fitted 0-2.4% closer and every 10% tilt of JasperRidge
// 10-32% (SalinasA: 66-76%; tilts of 5% and under, which the spectra
// tolerate: 0-0.7%).
const (
	// alignPureShare is the share of the sampled pixels the alignment
	// judges on: those whose nearest reference of any group is nearest.
	alignPureShare = 0.25
	// alignMinGain is how much closer on average than the spectra a group
	// of copies must fit those pixels to be aligned.
	alignMinGain = 0.05
	// alignMinPixels is the fewest sampled pixels a group of copies is
	// aligned on; fewer align to the spectra. With 26 groups competing,
	// a few hundred pixels let one fit 5% closer by chance: on the
	// processor's test scene (3 classes, clean), tiles of 256 to 1,024
	// pixels aligned to copies and, measured against them alone (the
	// copy penalty pi), changed 540 to 1,695 of the scene's 9,090 class
	// pixels; tiles of 1,600 pixels and more aligned as the whole scene
	// did.
	// classify's tiles are 384 x 384 px.
	alignMinPixels = 2048
)

// alignedGroup is the group of changed copies (1 + its index in
// groupSpan; 0 for the spectra themselves) the valid pixels of spectra
// align to, judged on a sample of them (alignFrom). A reference without
// groups, or whose penalty is 0 (every reference counts alike), aligns
// nothing; a sample of fewer than alignMinPixels aligns to the spectra.
func (r *SpectralReference) alignedGroup(spectra []float32, valid []bool) int {
	if r.groupSpan == nil || r.copyPenaltyRad == 0 {
		return 0
	}
	groups := 1 + len(r.groupSpan)
	angles := r.alignmentAngles(spectra, valid)
	if len(angles)/groups < alignMinPixels {
		return 0
	}
	return alignFrom(angles, groups)
}

// alignFrom is the group aligned from angles ([pixel][group], groups a
// pixel: the angle from each sampled pixel to its nearest reference of
// each group). The purest pixels are the alignPureShare of them whose
// nearest reference of any group is nearest (ties at the cut all count);
// the group whose mean angle over them is smallest is aligned if it is a
// group of copies that fits them at least alignMinGain closer than the
// spectra (group 0), and the spectra otherwise; ties go to the lower
// group.
func alignFrom(angles []float64, groups int) int {
	n := len(angles) / groups
	if n == 0 || groups < 2 {
		return 0
	}
	nearest := make([]float64, n)
	for p := range n {
		nearest[p] = slices.Min(angles[p*groups : (p+1)*groups])
	}
	sorted := slices.Clone(nearest)
	slices.Sort(sorted)
	cut := sorted[max(0, int(math.Ceil(alignPureShare*float64(n)))-1)]
	sum := make([]float64, groups)
	for p, a := range nearest {
		if a > cut {
			continue
		}
		for g, v := range angles[p*groups : (p+1)*groups] {
			sum[g] += v
		}
	}
	g := 0
	for k, v := range sum {
		if v < sum[g] {
			g = k
		}
	}
	if g > 0 && sum[g] > (1-alignMinGain)*sum[0] {
		return 0
	}
	return g
}

// alignmentAngles is, for each pixel of alignedGroup's sample (every
// k-th valid pixel of finite, non-zero length, at most about
// alignSamplePixels) and each group (0: the spectra themselves), the
// angle from the pixel to its nearest reference of the group:
// [pixel][group].
//
// The sampled pixels' dots are taken eight at a time through the 8 x 32
// kernel where the CPU has it (kernels.Dots8, as distancesOf takes them:
// the same dots bit for bit as DotsSIMD's), and each group's nearest by
// kernels.SpanMax. One pixel at a time, the alignment took an eighth of
// the fused distances' CPU on bench-big's scene (a CPU profile of a
// 1536 x 1536 crop).
func (r *SpectralReference) alignmentAngles(spectra []float32, valid []bool) []float64 {
	n := len(spectra) / r.bands
	step := max(1, n/alignSamplePixels)
	// The sampled pixels that count, in order, with their inverse lengths.
	var picked []int
	var invs []float64
	for i := 0; i < n; i += step {
		if valid != nil && !valid[i] {
			continue
		}
		norm := squaredLength(spectra[i*r.bands : (i+1)*r.bands])
		if !(norm > 0) || math.IsInf(float64(norm), 0) {
			continue
		}
		picked = append(picked, i)
		invs = append(invs, 1/math.Sqrt(float64(norm)))
	}
	groups := 1 + len(r.groupSpan)
	angles := make([]float64, 0, len(picked)*groups)
	dots := make([]float32, r.dotsLen())
	best := make([]float32, len(r.span))
	// Each group's nearest reference of any class: where the group's class
	// spans tile one range (they do: newReference lays every group out
	// class after class), one vector maximum over it; the per-class
	// maxima and their maximum, which it replaces, took 4% of a
	// 200-band classify's CPU on an AVX2 machine (perf, bench-big's
	// crop). The maximum is the same value either way.
	whole := make([][][2]int, groups)
	for g := range groups {
		span := r.span
		if g > 0 {
			span = r.groupSpan[g-1]
		}
		whole[g] = span
		if lo, hi, ok := tiledRange(span); ok {
			whole[g] = [][2]int{{lo, hi}}
		}
	}
	add := func(dots []float32, inv float64) {
		for g := range groups {
			span := whole[g]
			for c := range span {
				best[c] = -2 // a class without references of the group
			}
			kernels.SpanMax(best[:len(span)], dots, span)
			b := float32(-2)
			for _, v := range best[:len(span)] {
				b = max(b, v)
			}
			angles = append(angles, angleOf(1-math.Min(1, float64(b)*inv)))
		}
	}
	k := 0
	if _, dots8, tpadded := r.table(); dots8 != nil && len(picked) >= 8 {
		block := dots8Pixels(tpadded)
		px := make([]float32, block*r.bands)
		dotsN := make([]float32, block*tpadded)
		for k+8 <= len(picked) {
			m := min(block, (len(picked)-k)/8*8)
			for q, i := range picked[k : k+m] {
				copy(px[q*r.bands:(q+1)*r.bands], spectra[i*r.bands:(i+1)*r.bands])
			}
			kernels.Dots8(dots8, tpadded, r.bands, px[:m*r.bands], dotsN[:m*tpadded])
			for q := range m {
				add(r.expanded(dotsN[q*tpadded:(q+1)*tpadded], dots), invs[k+q])
			}
			k += m
		}
	}
	for ; k < len(picked); k++ {
		i := picked[k]
		r.pixelDots(spectra[i*r.bands:(i+1)*r.bands], dots)
		add(dots[:r.padded], invs[k])
	}
	return angles
}

// tiledRange is the range [lo, hi) that spans cover one after another
// with nothing between them (empty spans anywhere), and whether they do
// and hold any reference.
func tiledRange(spans [][2]int) (lo, hi int, ok bool) {
	lo, hi = -1, -1
	for _, sp := range spans {
		if sp[0] == sp[1] {
			continue
		}
		if hi >= 0 && sp[0] != hi {
			return 0, 0, false
		}
		if lo < 0 {
			lo = sp[0]
		}
		hi = sp[1]
	}
	return lo, hi, lo >= 0
}

// groupDistance is class c's distance for a reference with changed groups:
// from its nearest reference of the aligned group (or, with a local mean,
// the unit mean of its nearest there: ownDot) and, penalised, its nearest
// other one; inv is the pixel's inverse length.
func (r *SpectralReference) groupDistance(c int, inv float32, dots []float32, aligned int) float32 {
	sp := r.span[c]
	if r.copyPenaltyRad == 0 && r.localMean < 2 {
		// The distance of the union's nearest, bit for bit.
		best := maxDot(dots[sp[0]:sp[1]])
		for _, span := range r.groupSpan {
			if sp := span[c]; sp[0] < sp[1] {
				best = max(best, maxDot(dots[sp[0]:sp[1]]))
			}
		}
		return min(2, max(0, 1-best*inv))
	}
	own, other := r.ownDot(dots, sp[0], sp[1], 0, c), float32(-2)
	if aligned > 0 {
		own, other = -2, maxDot(dots[sp[0]:sp[1]])
	}
	for g, span := range r.groupSpan {
		sp := span[c]
		if sp[0] == sp[1] {
			continue
		}
		if g+1 == aligned {
			own = max(own, r.ownDot(dots, sp[0], sp[1], g+1, c))
		} else {
			other = max(other, maxDot(dots[sp[0]:sp[1]]))
		}
	}
	return r.penalised(own, other, inv)
}

// penalised is a class's distance from the largest dot of its aligned
// references own and of its others other (-2 where it has none), for a
// pixel of inverse length inv: min(the aligned distance, the others'
// angle plus the copy penalty).
func (r *SpectralReference) penalised(own, other, inv float32) float32 {
	dist := float32(2)
	if own > -2 {
		dist = min(2, max(0, 1-own*inv))
	}
	// Another reference no nearer than the aligned one cannot win once
	// penalised: its angle is at least the aligned one's, and a penalty of
	// 0.005 rad or more adds far more than the trigonometry's rounding
	// (at an angle of 0, 1.2e-5 to a distance kept to about 1e-7). Most
	// pixels of an aligned scene end here, without an arcsine and a sine
	// per class.
	if other <= own && r.copyPenaltyRad >= minCopyPenaltyRad {
		return dist
	}
	if other > -2 {
		if a := angleOf(float64(min(2, max(0, 1-other*inv)))) + r.copyPenaltyRad; a < math.Pi {
			// 1 - cos(a) = 2 sin^2(a/2), without cancellation near 0.
			h := math.Sin(a / 2)
			dist = min(dist, float32(2*h*h))
		}
	}
	return dist
}
