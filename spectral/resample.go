package spectral

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// FWHMPerSigma is the FWHM of a Gaussian in units of its standard
// deviation: 2 sqrt(2 ln 2).
var FWHMPerSigma = 2 * math.Sqrt(2*math.Ln2)

// Resampling limits.
const (
	// GapSpacings is how many of the scene's median band spacings a gap
	// between two good scene bands may span before a model band inside it
	// counts as not covered (2.5): the water-vapour bands a scene declares
	// bad leave gaps of 10 spacings and more.
	GapSpacings = 2.5
	// kernelSigmas is where the Gaussian kernel is cut, in standard deviations.
	kernelSigmas = 5
)

// Resample returns the plan that computes every model band from the
// scene's good bands, each through the model band's Gaussian spectral
// response function (its centre and FWHM):
//
// A scene band is itself a Gaussian average of the spectrum (its own
// FWHM), so the model band's average is the scene bands' average under a
// Gaussian of the remaining width, sigma_e^2 = sigma_model^2 -
// sigma_scene^2 (Gaussians compose by adding variances), weighted by each
// scene band's share of the wavelength axis (half the distance to its
// neighbours). This is exact for spectra whose Gaussian averages are (a
// polynomial of degree two; a Gaussian absorption line in the limit of
// fine scene sampling), which the tests check. Where sigma_e is below half
// the scene's band spacing (a model band narrower than the scene's) the
// model band is interpolated linearly between the two scene bands around
// its centre, exact for linear spectra. A scene band without a width is
// taken as wide as the band spacing.
//
// A model band without a width takes the nearest scene band within half
// that band's width (or spacing). A model band the good scene bands do not
// surround (beyond half a band width past either end, or in a gap wider
// than GapSpacings spacings and than its own width, such as water-vapour
// bands the scene declares bad) is refused with a *CoverageError: nothing
// is extrapolated.
func Resample(model, scene BandSet) (Plan, error) {
	sorted := sortByCentre(scene, scene.Good())
	if len(sorted) == 0 || !model.HasCentres() {
		return matchByCount(model, scene, Options{})
	}
	ax := newSceneAxis(scene, sorted)
	rows := make([]map[int]float64, model.Bands) // per model band: scene band -> weight
	for i, c := range model.CentresNM {
		fm, okm := model.FWHM(i)
		row, err := ax.modelBandRow(i, c, fm, okm)
		if err != nil {
			return Plan{}, err
		}
		rows[i] = row
	}
	return planFromRows(rows), nil
}

// sceneAxis is the scene's good bands along the wavelength axis, as
// Resample weighs them.
type sceneAxis struct {
	scene  BandSet
	sorted []int     // good scene bands by centre
	cs     []float64 // their centres, nm
	h      float64   // the median band spacing, nm
	maxGap float64   // the widest gap a share spans, nm
}

// newSceneAxis places the good bands sorted (by centre) of scene on the axis.
func newSceneAxis(scene BandSet, sorted []int) sceneAxis {
	cs := make([]float64, len(sorted))
	for k, j := range sorted {
		cs[k] = scene.CentresNM[j]
	}
	h := bandSpacing(cs)
	return sceneAxis{scene: scene, sorted: sorted, cs: cs, h: h, maxGap: GapSpacings * h}
}

// width is scene band k's FWHM (of sorted), the spacing when unknown.
func (ax sceneAxis) width(k int) float64 {
	if f, ok := ax.scene.FWHM(ax.sorted[k]); ok {
		return f
	}
	return ax.h
}

// share is scene band k's part of the wavelength axis, gaps capped.
func (ax sceneAxis) share(k int) float64 {
	cs, n := ax.cs, len(ax.cs)
	var left, right float64
	if k > 0 {
		left = math.Min(cs[k]-cs[k-1], ax.maxGap)
	}
	if k < n-1 {
		right = math.Min(cs[k+1]-cs[k], ax.maxGap)
	}
	switch {
	case k == 0 && k == n-1:
		return 1
	case k == 0:
		return right
	case k == n-1:
		return left
	}
	return (left + right) / 2
}

// modelBandRow is model band i's weights over the scene bands: c its
// centre, fm its FWHM (okm false when it has none), both nm. A band the
// scene does not surround is a *CoverageError.
func (ax sceneAxis) modelBandRow(i int, c, fm float64, okm bool) (map[int]float64, error) {
	cs, sorted, n := ax.cs, ax.sorted, len(ax.cs)
	lo, hi := cs[0], cs[n-1]
	row := map[int]float64{}
	cover := &CoverageError{ModelBand: i, CentreNM: c, SceneLoNM: lo, SceneHiNM: hi}
	switch {
	case c < lo-ax.width(0)/2 || c > hi+ax.width(n-1)/2:
		return nil, cover
	case c <= lo:
		row[sorted[0]] = 1
		return row, nil
	case c >= hi:
		row[sorted[n-1]] = 1
		return row, nil
	}
	b := sort.SearchFloat64s(cs, c) // cs[b] >= c, b >= 1
	a := b - 1
	if cs[b] == c {
		a = b
	}
	if gap := cs[b] - cs[a]; gap > ax.maxGap && (!okm || gap > fm) {
		cover.GapLoNM, cover.GapHiNM = cs[a], cs[b]
		return nil, cover
	}
	if !okm {
		k := a
		if c-cs[a] > cs[b]-c {
			k = b
		}
		if d := math.Abs(cs[k] - c); d > ax.width(k)/2 {
			cover.NoWidth, cover.GapHiNM = true, d
			return nil, cover
		}
		row[sorted[k]] = 1
		return row, nil
	}
	sm := fm / FWHMPerSigma
	ss := (ax.width(a) + ax.width(b)) / 2 / FWHMPerSigma
	se2 := sm*sm - ss*ss
	if se2 < (ax.h/2)*(ax.h/2) {
		if a == b {
			row[sorted[a]] = 1
			return row, nil
		}
		t := (c - cs[a]) / (cs[b] - cs[a])
		row[sorted[a]] += 1 - t
		row[sorted[b]] += t
		return row, nil
	}
	ax.addGaussian(row, c, se2)
	return row, nil
}

// addGaussian fills row with the scene bands' weights under a Gaussian
// centred on c (nm) of variance se2 (nm^2), each times its share of the
// axis, normalised to sum 1.
func (ax sceneAxis) addGaussian(row map[int]float64, c, se2 float64) {
	cs, n := ax.cs, len(ax.cs)
	se := math.Sqrt(se2)
	k0 := sort.SearchFloat64s(cs, c-kernelSigmas*se)
	sum := 0.0
	for k := k0; k < n && cs[k] <= c+kernelSigmas*se; k++ {
		d := cs[k] - c
		w := math.Exp(-d*d/(2*se2)) * ax.share(k)
		row[ax.sorted[k]] += w
		sum += w
	}
	for j := range row {
		row[j] /= sum
	}
}

// planFromRows turns per-model-band weights into a Plan over the scene
// bands any row uses.
func planFromRows(rows []map[int]float64) Plan {
	seen := map[int]bool{}
	var read []int
	for _, r := range rows {
		for j, w := range r {
			if w != 0 && !seen[j] {
				seen[j] = true
				read = append(read, j)
			}
		}
	}
	sort.Ints(read)
	pos := make(map[int]int, len(read))
	for p, j := range read {
		pos[j] = p
	}
	w := make([]float32, len(rows)*len(read))
	for k, r := range rows {
		for j, v := range r {
			if v != 0 {
				w[k*len(read)+pos[j]] = float32(v)
			}
		}
	}
	return Plan{Read: read, Weights: w, Out: len(rows)}
}

// bandSpacing is the median distance between neighbouring centres of
// cs (ascending); 10 nm for a single band.
func bandSpacing(cs []float64) float64 {
	var d []float64
	for k := 1; k < len(cs); k++ {
		if g := cs[k] - cs[k-1]; g > 0 {
			d = append(d, g)
		}
	}
	if len(d) == 0 {
		return 10
	}
	return median(d)
}

// Covers reports whether the scene's good bands can make a model band of
// centre centreNM and width fwhmNM (0 or less: unknown) without
// extrapolating: its centre lies within the good bands' range and not in a
// gap between them wider than GapSpacings band spacings and than the band
// itself (the water-vapour bands a scene declares bad, or leaves out),
// as Resample requires, and no nearer an end than Resample's half-width
// allowance: inside the range.
func Covers(scene BandSet, centreNM, fwhmNM float64) bool {
	sorted := sortByCentre(scene, scene.Good())
	n := len(sorted)
	if n == 0 || !(centreNM > 0) {
		return false
	}
	cs := make([]float64, n)
	for k, j := range sorted {
		cs[k] = scene.CentresNM[j]
	}
	if centreNM < cs[0] || centreNM > cs[n-1] {
		return false
	}
	b := sort.SearchFloat64s(cs, centreNM)
	if cs[b] == centreNM {
		return true
	}
	gap := cs[b] - cs[b-1]
	return !(gap > GapSpacings*bandSpacing(cs) && (!(fwhmNM > 0) || gap > fwhmNM))
}

// CommonBands returns the bands (0-based, ascending) of train that are
// good and that every one of others covers (Covers): the bands a model
// trained on train can take so that it applies, through Resample, to
// scenes of every other band set.
func CommonBands(train BandSet, others ...BandSet) []int {
	var out []int
	for _, i := range train.Good() {
		c := train.CentresNM[i]
		f, _ := train.FWHM(i)
		ok := true
		for _, o := range others {
			ok = ok && Covers(o, c, f)
		}
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// InRanges returns the good bands (0-based, ascending) of b whose centres
// lie in one of ranges (nm, inclusive).
func InRanges(b BandSet, ranges [][2]float64) []int {
	var out []int
	for _, i := range b.Good() {
		if i >= len(b.CentresNM) {
			continue
		}
		c := b.CentresNM[i]
		for _, r := range ranges {
			if c >= r[0] && c <= r[1] {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// ParseRanges reads wavelength ranges in nm, "400-1340,1460-1790": pairs
// LO-HI (LO below HI, both positive) separated by commas.
func ParseRanges(s string) ([][2]float64, error) {
	var out [][2]float64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(part), "nm"))
		lo, hi, ok := strings.Cut(part, "-")
		a, errA := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		b, errB := strconv.ParseFloat(strings.TrimSpace(hi), 64)
		if !ok || errA != nil || errB != nil || !(a > 0) || !(b > a) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("%q: want LO-HI in nm, LO below HI (e.g. 400-1340,1460-1790)", part)
		}
		out = append(out, [2]float64{a, b})
	}
	return out, nil
}
