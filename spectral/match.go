package spectral

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Sentinel errors of Match; the returned errors wrap them (errors.Is).
var (
	// ErrBandCount: a band set without wavelengths (the scene's or the
	// model's) whose band count differs from the other's, so that nothing
	// says which band is which.
	ErrBandCount = errors.New("band count does not match the model")
	// ErrBandsDiffer: both band sets have wavelengths and the scene's bands
	// are not the model's (also with the same count); see *MismatchError.
	ErrBandsDiffer = errors.New("the scene's bands are not the model's")
	// ErrNotCovered: resampling was asked for, but a model band lies where
	// the scene has no (good) band; see *CoverageError.
	ErrNotCovered = errors.New("model band not covered by the scene's bands")
)

// Options tune Match. Zero values mean the documented defaults.
type Options struct {
	// Resample makes Match compute model bands from the scene's bands
	// (Gaussian spectral response functions) when they are not the same
	// bands, instead of refusing.
	Resample bool
	// Source describes the scene a model was trained on, when the model's
	// bands are a subset of it (its bad bands left out): a scene without
	// wavelengths but with the training scene's band count then gives the
	// model the same subset.
	Source *Source
}

// Source is the training scene of a model whose input bands are a subset
// of the scene's bands.
type Source struct {
	Bands int   // the training scene's band count
	Used  []int // its 0-based bands the model takes, in order
}

// Plan says how to make a model's input bands from a scene's bands, pixel
// by pixel.
type Plan struct {
	// Read are the scene's bands (0-based, ascending) a reader must read.
	Read []int
	// Weights is nil for a selection (model band k is Read[k]); otherwise
	// the resampling matrix [Out][len(Read)], row-major: model band k is
	// the sum over j of Weights[k*len(Read)+j] times Read[j]'s value.
	Weights []float32
	// Out is the number of model bands made.
	Out int
	// Gain multiplies every model band (a radiometric conversion, see
	// ConvertRadiometry); 0 and 1 mean none.
	Gain float32
	// MaxShiftNM is the largest centre difference between a model band
	// and the scene band picked for it (a selection; 0 when both agree
	// exactly or have no wavelengths).
	MaxShiftNM float64
	// Warnings say what the plan assumes (a band set without wavelengths
	// taken in order), one sentence each.
	Warnings []string
}

// Resampled reports whether the plan computes model bands (Weights set)
// rather than picking scene bands.
func (p Plan) Resampled() bool { return p.Weights != nil }

// Identity reports whether the plan reads every one of sceneBands bands in
// order, unchanged.
func (p Plan) Identity(sceneBands int) bool {
	if p.Weights != nil || (p.Gain != 0 && p.Gain != 1) || len(p.Read) != sceneBands || p.Out != sceneBands {
		return false
	}
	for i, b := range p.Read {
		if b != i {
			return false
		}
	}
	return true
}

// Apply makes one pixel's model bands (out, p.Out values) from its read
// bands (in, len(p.Read) values in the order of p.Read).
func (p Plan) Apply(in, out []float32) {
	g := p.Gain
	if g == 0 {
		g = 1
	}
	if p.Weights == nil {
		copy(out[:p.Out], in)
		if g != 1 {
			for k := range out[:p.Out] {
				out[k] *= g
			}
		}
		return
	}
	n := len(p.Read)
	for k := range p.Out {
		w := p.Weights[k*n : (k+1)*n]
		var s float32
		for j, x := range in[:n] {
			s += w[j] * x
		}
		out[k] = s * g
	}
}

// MismatchError reports a scene whose bands are not the model's.
// errors.Is(err, ErrBandsDiffer) holds for it.
type MismatchError struct {
	Model, Scene BandSet
	// LargestNM is the largest centre difference between a model band and
	// the scene's nearest good band; ModelBand (0-based) is that model band
	// and SceneNM the nearest scene centre.
	LargestNM float64
	ModelBand int
	SceneNM   float64
	// WidthBand is a model band whose width differs from its scene band's
	// by more than WidthTolerance (-1 when none does); WidthModelNM and
	// WidthSceneNM are the two widths.
	WidthBand                  int
	WidthModelNM, WidthSceneNM float64
}

func (e *MismatchError) Error() string {
	s := fmt.Sprintf("bands differ from the model's: scene %s, model %s", e.Scene.Describe(), e.Model.Describe())
	c := e.Model.CentresNM[e.ModelBand]
	if e.LargestNM > 0 {
		s += fmt.Sprintf("; largest centre difference %s nm (model band %d at %s nm, nearest scene band %s nm)",
			fmtDiff(e.LargestNM), e.ModelBand+1, fmtNM(c), fmtNM(e.SceneNM))
	}
	if e.WidthBand >= 0 {
		s += fmt.Sprintf("; model band %d (%s nm) is %s nm wide, the scene's %s nm", e.WidthBand+1,
			fmtNM(e.Model.CentresNM[e.WidthBand]), fmtNM(e.WidthModelNM), fmtNM(e.WidthSceneNM))
	}
	return s
}

// Is makes errors.Is(err, ErrBandsDiffer) true.
func (e *MismatchError) Is(target error) bool { return target == ErrBandsDiffer }

// CoverageError reports a model band that the scene's good bands cannot
// make: outside their range, or in a gap between them (water-vapour bands
// declared bad), or without a width and no scene band near its centre.
// errors.Is(err, ErrNotCovered) holds for it.
type CoverageError struct {
	ModelBand            int     // 0-based
	CentreNM             float64 // the model band's centre
	SceneLoNM, SceneHiNM float64 // the scene's good bands' range
	// GapLoNM, GapHiNM are the scene bands around a gap the band falls in
	// (0 when it lies outside the range).
	GapLoNM, GapHiNM float64
	// NoWidth: the model band has no FWHM and no scene band is near enough.
	NoWidth bool
}

func (e *CoverageError) Error() string {
	b := fmt.Sprintf("model band %d (%s nm)", e.ModelBand+1, fmtNM(e.CentreNM))
	switch {
	case e.NoWidth:
		return fmt.Sprintf("%s has no FWHM and no scene band lies within tolerance of it (the nearest is %s nm away); it is not computed", b, fmtDiff(e.GapHiNM))
	case e.GapHiNM > 0:
		return fmt.Sprintf("%s falls in the scene's gap between good bands at %s and %s nm; it is not computed from bands that far away", b, fmtNM(e.GapLoNM), fmtNM(e.GapHiNM))
	}
	return fmt.Sprintf("%s lies outside the scene's good bands (%s-%s nm); it is not extrapolated", b, fmtNM(e.SceneLoNM), fmtNM(e.SceneHiNM))
}

// Is makes errors.Is(err, ErrNotCovered) true.
func (e *CoverageError) Is(target error) bool { return target == ErrNotCovered }

func fmtDiff(v float64) string {
	if math.Abs(v) >= 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// Tolerances of Match for calling a scene band the model's own.
const (
	// CentreToleranceFWHM is the largest centre difference, as a share of
	// the band's FWHM, at which two bands are the same band (10%).
	CentreToleranceFWHM = 0.1
	// CentreToleranceNM is the centre tolerance, nm, when neither band has
	// a width (1 nm), and the least tolerance otherwise (0.1 nm, for
	// rounding in headers).
	CentreToleranceNM    = 1.0
	MinCentreToleranceNM = 0.1
	// WidthTolerance is the largest relative FWHM difference at which two
	// bands are the same band (25%).
	WidthTolerance = 0.25
)

// Match compares a model's band set with a scene's and returns the plan
// that makes the model's bands from the scene's:
//
//   - both have wavelengths: each model band is the scene's good band with
//     the same centre (within CentreToleranceFWHM of its FWHM) and width
//     (WidthTolerance), so a scene with more bands (bad bands the model left
//     out) gives a selection. Otherwise Match returns a *MismatchError, or,
//     with opts.Resample, a resampling (see Resample).
//   - either has none: the scene is taken band for band when it has the
//     model's band count (or opts.Source's, then the model's subset of it),
//     with a warning; otherwise an error wrapping ErrBandCount.
func Match(model, scene BandSet, opts Options) (Plan, error) {
	if !model.HasCentres() || !scene.HasCentres() {
		return matchByCount(model, scene, opts)
	}
	good := scene.Good()
	if len(good) == 0 {
		return Plan{}, fmt.Errorf("%w: every scene band is declared bad", ErrBandsDiffer)
	}
	sorted := sortByCentre(scene, good)
	mis := &MismatchError{Model: model, Scene: scene, WidthBand: -1}
	read := make([]int, model.Bands)
	used := map[int]bool{}
	same := true
	maxShift := 0.0
	for i, c := range model.CentresNM {
		j := nearest(scene, sorted, c)
		d := math.Abs(scene.CentresNM[j] - c)
		if d > mis.LargestNM {
			mis.LargestNM, mis.ModelBand, mis.SceneNM = d, i, scene.CentresNM[j]
		}
		fm, okm := model.FWHM(i)
		fs, oks := scene.FWHM(j)
		tol := CentreToleranceNM
		switch {
		case okm:
			tol = math.Max(MinCentreToleranceNM, CentreToleranceFWHM*fm)
		case oks:
			tol = math.Max(MinCentreToleranceNM, CentreToleranceFWHM*fs)
		}
		if d > tol || used[j] {
			same = false
		}
		if okm && oks && math.Abs(fs-fm) > WidthTolerance*fm {
			same = false
			if mis.WidthBand < 0 {
				mis.WidthBand, mis.WidthModelNM, mis.WidthSceneNM = i, fm, fs
			}
		}
		used[j] = true
		read[i] = j
		maxShift = math.Max(maxShift, d)
	}
	if same {
		return Plan{Read: read, Out: model.Bands, MaxShiftNM: maxShift}, nil
	}
	if !opts.Resample {
		return Plan{}, mis
	}
	return Resample(model, scene)
}

// matchByCount is Match where a band set lacks wavelengths. It warns
// when the other band set has them (something could have been checked and
// was not); where neither has, the scene is taken as the model's training
// scene was, with nothing to say.
func matchByCount(model, scene BandSet, opts Options) (Plan, error) {
	why := "the scene declares no band wavelengths"
	if !model.HasCentres() {
		why = "the model records no band wavelengths"
	}
	warn := func(format string, args ...any) []string {
		if !model.HasCentres() && !scene.HasCentres() {
			return nil
		}
		return []string{why + ": " + fmt.Sprintf(format, args...)}
	}
	switch {
	case scene.Bands == model.Bands:
		read := make([]int, scene.Bands)
		for i := range read {
			read[i] = i
		}
		return Plan{Read: read, Out: model.Bands, Warnings: warn("its %d bands are taken as the model's, in order, unchecked", scene.Bands)}, nil
	case opts.Source != nil && scene.Bands == opts.Source.Bands && len(opts.Source.Used) == model.Bands:
		return Plan{Read: append([]int(nil), opts.Source.Used...), Out: model.Bands,
			Warnings: warn("its %d bands are taken as the training scene's, in order, unchecked (the model uses %d of them)", scene.Bands, model.Bands)}, nil
	}
	want := fmt.Sprintf("%d", model.Bands)
	if opts.Source != nil && opts.Source.Bands != model.Bands {
		want = fmt.Sprintf("%d (or the training scene's %d)", model.Bands, opts.Source.Bands)
	}
	return Plan{}, fmt.Errorf("%d bands, the model takes %s, and %s: %w", scene.Bands, want, why, ErrBandCount)
}

// sortByCentre returns idx sorted by the bands' centres.
func sortByCentre(b BandSet, idx []int) []int {
	s := append([]int(nil), idx...)
	sort.SliceStable(s, func(x, y int) bool { return b.CentresNM[s[x]] < b.CentresNM[s[y]] })
	return s
}

// nearest is the band of sorted (band indices by ascending centre) whose
// centre is nearest c.
func nearest(b BandSet, sorted []int, c float64) int {
	k := sort.Search(len(sorted), func(i int) bool { return b.CentresNM[sorted[i]] >= c })
	switch {
	case k == 0:
		return sorted[0]
	case k == len(sorted):
		return sorted[len(sorted)-1]
	}
	lo, hi := sorted[k-1], sorted[k]
	if c-b.CentresNM[lo] <= b.CentresNM[hi]-c {
		return lo
	}
	return hi
}

// Applier applies a Plan pixel by pixel, visiting only each model band's
// span of non-zero weights: a resampling matrix is mostly zeros (a 10 nm
// model band weighs the few scene bands within a few sigma of its
// centre), and the dense product would cost model x scene bands
// multiplications per pixel (80,000 for 200 bands from 400).
type Applier struct {
	p          Plan
	first, end []int // per model band: its non-zero weights' positions [first, end)
}

// Compile prepares p for applying to many pixels.
func (p Plan) Compile() Applier {
	a := Applier{p: p}
	if p.Weights == nil {
		return a
	}
	n := len(p.Read)
	a.first, a.end = make([]int, p.Out), make([]int, p.Out)
	for k := range p.Out {
		w := p.Weights[k*n : (k+1)*n]
		f, e := 0, 0
		for j, x := range w {
			if x != 0 {
				if e == 0 {
					f = j
				}
				e = j + 1
			}
		}
		a.first[k], a.end[k] = f, e
	}
	return a
}

// Apply is p.Apply: one pixel's model bands (out) from its read bands (in).
func (a Applier) Apply(in, out []float32) {
	p := a.p
	if p.Weights == nil {
		p.Apply(in, out)
		return
	}
	g := p.Gain
	if g == 0 {
		g = 1
	}
	n := len(p.Read)
	for k := range p.Out {
		w := p.Weights[k*n+a.first[k] : k*n+a.end[k]]
		x := in[a.first[k]:a.end[k]]
		var s float32
		for j, v := range w {
			s += v * x[j]
		}
		out[k] = s * g
	}
}
