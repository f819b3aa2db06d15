package drift

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Verdict says how far a scene is from the model's training data.
type Verdict string

// Verdicts.
const (
	OK   Verdict = "ok"   // within what the model was measured to tolerate
	Warn Verdict = "warn" // farther: accuracy may be lower than on the training scene
	Fail Verdict = "fail" // far outside the training data: do not trust the map
	// Unknown is the verdict of a model without training statistics.
	Unknown Verdict = "unknown"
)

// Limit is the verdict's limits on one figure (Figure.Key): warn
// when the figure reaches Warn, fail when it reaches Fail (at or above for
// a figure that rises with drift, at or below for one that falls); 0: no
// limit of that kind (no figure is judged at 0: shares and ratios are
// judged at positive values).
type Limit struct {
	Figure string  `json:"figure"`
	Warn   float64 `json:"warn,omitempty"`
	Fail   float64 `json:"fail,omitempty"`
}

// Thresholds turn drift figures into a verdict (Verdict): the worst
// verdict of its limits; fail where a figure a limit judges is not finite.
type Thresholds struct {
	Limits []Limit `json:"limits"`
	// BandShiftBands warns where the recalibration probe finds the scene's
	// bands shifted from the training scene's by more than this many bands
	// either way (0: no such rule). It is not chosen from case runs: it is
	// the shift the default augmentation trains the model to tolerate.
	BandShiftBands float64 `json:"band_shift_bands,omitempty"`
}

// DefaultThresholds are the thresholds products use: chosen on the
// acquisition-shift protocol by evaluation.ChooseDriftThresholdsFor from the
// case runs recorded in bench/drift-cases.csv (`go run ./bench/cmd/driftfit`
// prints the choice; evaluation's TestDefaultDriftThresholdsAreChosen checks
// that these are it). docs/acquisitions.md says how they were chosen and
// what they give.
//
// Beyond the chosen limits, a scene whose bands the probe finds shifted by
// more than the default augmentation's band shift is at least warn: in
// every case run of bench/drift-cases-fused.csv (3,360; in the record of
// the decision before the local mean and in the local mean's alike) the
// probe's estimate exceeded 1 band only on band shifts of +-3, the
// reversed bands and another scene, never on a target case, and the fused
// map aligned to its copies (before the local mean) lost 5.9 points on
// JasperRidge's +3 with the change share under its warn limit.
var DefaultThresholds = Thresholds{Limits: []Limit{
	{Figure: "feature_far_share", Warn: 0.255},
	{Figure: "recalibration_change_share", Warn: 0.0665, Fail: 0.188},
}, BandShiftBands: DefaultBandShiftBands}

// DefaultBandShiftBands is DefaultThresholds' band shift rule: the band
// shift the default augmentation trains a model to tolerate
// (model.DefaultAugment.BandShift; model's tests hold the two equal).
const DefaultBandShiftBands = 1

// Equal reports whether t and u judge the same figures at the same limits,
// in the same order (the chosen limits; BandShiftBands is not chosen).
func (t Thresholds) Equal(u Thresholds) bool { return slices.Equal(t.Limits, u.Limits) }

// Limit is t's limit on figure key (ok false when t does not judge it).
func (t Thresholds) Limit(key string) (Limit, bool) {
	for _, l := range t.Limits {
		if l.Figure == key {
			return l, true
		}
	}
	return Limit{}, false
}

// Check reports whether every limit names a known figure, once, with
// finite positive limits and the fail limit beyond the warn limit.
func (t Thresholds) Check() error {
	seen := map[string]bool{}
	for _, l := range t.Limits {
		f, ok := FigureByKey(l.Figure)
		switch {
		case !ok:
			return fmt.Errorf("drift thresholds: unknown figure %q", l.Figure)
		case seen[l.Figure]:
			return fmt.Errorf("drift thresholds: figure %q twice", l.Figure)
		case !(l.Warn >= 0) || !(l.Fail >= 0) || math.IsInf(l.Warn, 0) || math.IsInf(l.Fail, 0):
			return fmt.Errorf("drift thresholds: %s: limits %g and %g, want finite and positive (0: none)", l.Figure, l.Warn, l.Fail)
		case l.Warn == 0 && l.Fail == 0:
			return fmt.Errorf("drift thresholds: %s: no limit", l.Figure)
		case l.Warn > 0 && l.Fail > 0 && (f.Rising && l.Fail < l.Warn || !f.Rising && l.Fail > l.Warn):
			return fmt.Errorf("drift thresholds: %s: fail limit %g on the near side of the warn limit %g", l.Figure, l.Fail, l.Warn)
		}
		seen[l.Figure] = true
	}
	if !(t.BandShiftBands >= 0) || math.IsInf(t.BandShiftBands, 0) {
		return fmt.Errorf("drift thresholds: band shift %g bands, want finite and >= 0 (0: none)", t.BandShiftBands)
	}
	return nil
}

// Figure is one scalar figure of Report, as reports, product metadata
// (DRIFT_ and the key in upper case) and STAC Items (the key) name it.
type Figure struct {
	Key string
	// Rising is true for a figure that grows as the scene moves away from
	// the training scene (shares of far cells, distance ratios), false for
	// one that falls (reliability and margin ratios).
	Rising bool
	// Window is true for a figure of the recalibration probe's window,
	// false for one of the whole scene.
	Window bool
	// What says what the figure measures in a verdict's reasons, "%s"
	// standing for its value as Format writes it.
	What   string
	Format func(v float64) string
	field  func(r *Report) *float64
}

// Value is the figure's value in r.
func (f Figure) Value(r Report) float64 { return *f.field(&r) }

// Set sets the figure in r to v (for tools that read figures back).
func (f Figure) Set(r *Report, v float64) { *f.field(r) = v }

// reaches reports whether v is at or beyond limit in the figure's bad
// direction.
func (f Figure) reaches(v, limit float64) bool {
	if f.Rising {
		return v >= limit
	}
	return v <= limit
}

func percentFigure(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
func ratioFigure(v float64) string   { return fmt.Sprintf("%.2f", v) }
func bandsFigure(v float64) string   { return fmt.Sprintf("%+.2f bands", v) }

// figures lists the scalar figures, in the order reports print them:
// the network's own terms first, then the spectral ones.
var figures = []Figure{
	{Key: "feature_far_share", Rising: true, Format: percentFigure,
		What:  "%s of the network's cells are farther from their nearest prototype than 90%% of the training scene's cells of that prototype",
		field: func(r *Report) *float64 { return &r.FeatureFarShare }},
	{Key: "feature_distance_ratio", Rising: true, Format: ratioFigure,
		What:  "the network's features are %s times as far from their nearest prototype as the training scene's",
		field: func(r *Report) *float64 { return &r.FeatureDistanceRatio }},
	{Key: "prototype_margin_ratio", Format: percentFigure,
		What:  "the margin between the nearest and the second prototype is %s of the training scene's",
		field: func(r *Report) *float64 { return &r.PrototypeMarginRatio }},
	{Key: "uncertainty_ratio", Rising: true, Format: ratioFigure,
		What:  "the reliability gate's uncertainty is %s times the training scene's for these labels",
		field: func(r *Report) *float64 { return &r.UncertaintyRatio }},
	{Key: "margin_ratio", Format: percentFigure,
		What:  "the margin of the class probabilities is %s of the training scene's for these labels",
		field: func(r *Report) *float64 { return &r.MarginRatio }},
	{Key: "recalibration_change_share", Rising: true, Format: percentFigure, Window: true,
		What:  "%s of the probe window's pixels change class when the scene is brought back to the training scene's calibration",
		field: func(r *Report) *float64 { return &r.RecalibrationChangeShare }},
	// The band shift moves either way: reported, never a candidate to judge.
	{Key: "recalibration_band_shift", Rising: true, Format: bandsFigure, Window: true,
		What:  "the band axis is shifted by %s against the training scene's (estimated)",
		field: func(r *Report) *float64 { return &r.RecalibrationBandShift }},
	{Key: "far_share", Rising: true, Format: percentFigure,
		What:  "%s of the pixels are farther (by spectral angle) from every class than 99%% of the training scene's pixels of that class",
		field: func(r *Report) *float64 { return &r.FarShare }},
	{Key: "distance_ratio", Rising: true, Format: ratioFigure,
		What:  "the spectra are %s times as far (by spectral angle) from their nearest class as the training scene's",
		field: func(r *Report) *float64 { return &r.DistanceRatio }},
	{Key: "reliability_ratio", Format: percentFigure,
		What:  "the mean spectral reliability is %s of the training scene's for these labels",
		field: func(r *Report) *float64 { return &r.ReliabilityRatio }},
	{Key: "brightness_ratio", Rising: true, Format: ratioFigure,
		What:  "the scene is %s times as bright as the training scene (median over bands)",
		field: func(r *Report) *float64 { return &r.BrightnessRatio }},
	{Key: "band_shift_sd_mean", Rising: true, Format: ratioFigure,
		What:  "the band means moved by %s training standard deviations on average",
		field: func(r *Report) *float64 { return &r.BandShiftMeanSD }},
	{Key: "band_shift_sd_max", Rising: true, Format: ratioFigure,
		What:  "a band's mean moved by %s training standard deviations",
		field: func(r *Report) *float64 { return &r.BandShiftMaxSD }},
}

// Figures lists the scalar figures of Report, in the order reports
// print them.
func Figures() []Figure { return slices.Clone(figures) }

// FigureByKey is the figure named key.
func FigureByKey(key string) (Figure, bool) {
	for _, f := range figures {
		if f.Key == key {
			return f, true
		}
	}
	return Figure{}, false
}

// Verdict applies the thresholds to the figures of r: the worst verdict of
// the limits; fail for a judged figure that is not finite and at least warn
// for any other figure that is not (a figure that could not be measured is
// never ok); unknown without a valid pixel.
func (t Thresholds) Verdict(r Report) (Verdict, []string) {
	if r.ValidPixels == 0 {
		return Unknown, []string{"no valid pixel"}
	}
	v := OK
	var reasons []string
	raise := func(to Verdict, why string) {
		if to == Fail || v == OK {
			v = to
		}
		reasons = append(reasons, why)
	}
	for _, f := range figures {
		x := f.Value(r)
		l, judged := t.Limit(f.Key)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			to := Warn
			if judged {
				to = Fail
			}
			raise(to, fmt.Sprintf("%s is %g: it could not be measured on this scene", f.Key, x))
			continue
		}
		if !judged {
			continue
		}
		what := fmt.Sprintf(f.What, f.Format(x))
		switch {
		case l.Fail > 0 && f.reaches(x, l.Fail):
			raise(Fail, fmt.Sprintf("%s (fail at %s)", what, f.Format(l.Fail)))
		case l.Warn > 0 && f.reaches(x, l.Warn):
			raise(Warn, fmt.Sprintf("%s (warn at %s)", what, f.Format(l.Warn)))
		}
	}
	if b := r.RecalibrationBandShift; t.BandShiftBands > 0 && math.Abs(b) > t.BandShiftBands {
		raise(Warn, fmt.Sprintf("the probe finds the scene's bands %s from the training scene's (warn beyond %g: the shift the augmentation trains the model to tolerate)", bandsFigure(b), t.BandShiftBands))
	}
	return v, reasons
}

// Summary is the verdict and its reasons in one line.
func (r Report) Summary() string {
	if len(r.Reasons) == 0 {
		return string(r.Verdict)
	}
	return string(r.Verdict) + ": " + strings.Join(r.Reasons, "; ")
}
