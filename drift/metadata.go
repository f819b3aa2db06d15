package drift

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Keys of the drift figures in the product's PNEC metadata (PNEC_DRIFT_*
// in the TIFF's default domain); docs/acquisitions.md describes them.
// Every scalar figure (Figures) is DRIFT_ and its key in upper
// case (MetaFigure); the constants name those tests and callers use.
const (
	MetaVerdict             = "DRIFT_VERDICT"              // ok, warn or fail
	MetaReasons             = "DRIFT_REASONS"              // why not ok, "; "-separated ("" when ok)
	MetaFarShare            = "DRIFT_FAR_SHARE"            // 0..1
	MetaDistanceRatio       = "DRIFT_DISTANCE_RATIO"       // class-wise median distance over the training scene's
	MetaReliability         = "DRIFT_RELIABILITY"          // mean spectral reliability, 0..1
	MetaReliabilityBaseline = "DRIFT_RELIABILITY_BASELINE" // the training scene's for the same labels, 0..1
	MetaReliabilityRatio    = "DRIFT_RELIABILITY_RATIO"    // their ratio
	MetaBrightnessRatio     = "DRIFT_BRIGHTNESS_RATIO"     // median over bands of the band mean ratio
	MetaBandShiftMean       = "DRIFT_BAND_SHIFT_SD_MEAN"   // mean |band mean shift|, training standard deviations
	MetaBandShiftMax        = "DRIFT_BAND_SHIFT_SD_MAX"    // largest |band mean shift|
	MetaBandShift           = "DRIFT_BAND_SHIFT_SD"        // JSON array, per band (1-based order), 2 decimals
	MetaThresholds          = "DRIFT_THRESHOLDS"           // JSON object of the verdict's thresholds
	// The figures in the network's own terms.
	MetaFeatureFarShare      = "DRIFT_FEATURE_FAR_SHARE"      // 0..1 of the valid cells
	MetaFeatureDistanceRatio = "DRIFT_FEATURE_DISTANCE_RATIO" // class-wise median feature distance over the training scene's
	MetaPrototypeMarginRatio = "DRIFT_PROTOTYPE_MARGIN_RATIO" // mean nearest-prototype margin over the training scene's
	MetaUncertaintyRatio     = "DRIFT_UNCERTAINTY_RATIO"      // mean G~ over the training scene's for the same labels
	MetaMarginRatio          = "DRIFT_MARGIN_RATIO"           // mean probability margin over the training scene's
	// The recalibration probe (model's ProbeRecalibration).
	MetaRecalibrationChangeShare = "DRIFT_RECALIBRATION_CHANGE_SHARE" // 0..1 of the probe window's valid pixels
	MetaRecalibrationBandShift   = "DRIFT_RECALIBRATION_BAND_SHIFT"   // estimated band shift, bands
)

// MetaFigure is the metadata key of a drift figure (Figure.Key).
func MetaFigure(key string) string { return "DRIFT_" + strings.ToUpper(key) }

// ThresholdsJSON is the verdict's thresholds as one flat JSON object,
// warn_KEY and fail_KEY per limit (Limit; a limit not used is
// left out) and warn_abs_recalibration_band_shift for the band shift rule
// (Thresholds.BandShiftBands): the DRIFT_THRESHOLDS metadata
// and the STAC Item's fields.
func ThresholdsJSON(t Thresholds) map[string]float64 {
	out := map[string]float64{}
	for _, l := range t.Limits {
		if l.Warn > 0 {
			out["warn_"+l.Figure] = l.Warn
		}
		if l.Fail > 0 {
			out["fail_"+l.Figure] = l.Fail
		}
	}
	if t.BandShiftBands > 0 {
		out["warn_abs_recalibration_band_shift"] = t.BandShiftBands
	}
	return out
}

// JSONFigure is v rounded to decimals places for a JSON document: nil
// (null) where v is not finite, and 0 where it rounds to zero from below
// (not -0, which JSON would print as such).
func JSONFigure(v float64, decimals int) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	scale := math.Pow(10, float64(decimals))
	r := math.Round(v*scale) / scale
	if r == 0 {
		r = 0
	}
	return r
}

// Metadata is the product metadata of a scene's drift.
func Metadata(d Report) map[string]string {
	f := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "nan"
		}
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	bands := make([]any, len(d.BandShiftSD))
	for i, v := range d.BandShiftSD {
		bands[i] = JSONFigure(v, 2)
	}
	perBand, _ := json.Marshal(bands)
	thresholds, _ := json.Marshal(ThresholdsJSON(DefaultThresholds))
	md := map[string]string{
		MetaVerdict:             string(d.Verdict),
		MetaReasons:             strings.Join(d.Reasons, "; "),
		MetaReliability:         f(d.Reliability),
		MetaReliabilityBaseline: f(d.ReliabilityBaseline),
		MetaBandShift:           string(perBand),
		MetaThresholds:          string(thresholds),
	}
	for _, fig := range Figures() {
		md[MetaFigure(fig.Key)] = f(fig.Value(d))
	}
	return md
}

// JSON is a scene's drift as a JSON object (the STAC Item's
// pnec:drift): the figures of the verdict (ratios 0..1, band shifts in
// training standard deviations; null where undefined), the thresholds and
// the reasons it is not ok.
func JSON(d Report) map[string]any {
	num := func(v float64) any { return JSONFigure(v, 4) }
	reasons := d.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	props := map[string]any{
		"reliability":          num(d.Reliability),
		"reliability_baseline": num(d.ReliabilityBaseline),
		"reasons":              reasons,
	}
	for _, f := range Figures() {
		props[f.Key] = num(f.Value(d))
	}
	for k, v := range ThresholdsJSON(DefaultThresholds) {
		props[k] = v
	}
	return props
}

// ErrRefused is wrapped by RefusedError.
var ErrRefused = errors.New("scene too far from the training data")

// RefusedError is what a drift check (processor.Options.DriftCheck)
// returns to withhold a product: the scene's drift, whose verdict the
// caller refused.
type RefusedError struct{ Report Report }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("drift verdict %s", e.Report.Summary())
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Refuse is a drift check (processor.Options.DriftCheck) that refuses
// scenes whose verdict is at least as bad as worst (Warn or Fail) with a
// *RefusedError.
func Refuse(worst Verdict) func(Report) error {
	return func(d Report) error {
		if d.Verdict == Fail || (worst == Warn && d.Verdict == Warn) {
			return &RefusedError{Report: d}
		}
		return nil
	}
}
