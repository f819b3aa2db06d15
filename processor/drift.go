package processor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pnec/pnec/model"
)

// Keys of the drift figures in the product's PNEC metadata (PNEC_DRIFT_*
// in the TIFF's default domain); docs/acquisitions.md describes them.
// Every scalar figure (model.DriftFigures) is DRIFT_ and its key in upper
// case (MetaDriftFigure); the constants name those tests and callers use.
const (
	MetaDriftVerdict             = "DRIFT_VERDICT"              // ok, warn or fail
	MetaDriftReasons             = "DRIFT_REASONS"              // why not ok, "; "-separated ("" when ok)
	MetaDriftFarShare            = "DRIFT_FAR_SHARE"            // 0..1
	MetaDriftDistanceRatio       = "DRIFT_DISTANCE_RATIO"       // class-wise median distance over the training scene's
	MetaDriftReliability         = "DRIFT_RELIABILITY"          // mean spectral reliability, 0..1
	MetaDriftReliabilityBaseline = "DRIFT_RELIABILITY_BASELINE" // the training scene's for the same labels, 0..1
	MetaDriftReliabilityRatio    = "DRIFT_RELIABILITY_RATIO"    // their ratio
	MetaDriftBrightnessRatio     = "DRIFT_BRIGHTNESS_RATIO"     // median over bands of the band mean ratio
	MetaDriftBandShiftMean       = "DRIFT_BAND_SHIFT_SD_MEAN"   // mean |band mean shift|, training standard deviations
	MetaDriftBandShiftMax        = "DRIFT_BAND_SHIFT_SD_MAX"    // largest |band mean shift|
	MetaDriftBandShift           = "DRIFT_BAND_SHIFT_SD"        // JSON array, per band (1-based order), 2 decimals
	MetaDriftThresholds          = "DRIFT_THRESHOLDS"           // JSON object of the verdict's thresholds
	// The figures in the network's own terms.
	MetaDriftFeatureFarShare      = "DRIFT_FEATURE_FAR_SHARE"      // 0..1 of the valid cells
	MetaDriftFeatureDistanceRatio = "DRIFT_FEATURE_DISTANCE_RATIO" // class-wise median feature distance over the training scene's
	MetaDriftPrototypeMarginRatio = "DRIFT_PROTOTYPE_MARGIN_RATIO" // mean nearest-prototype margin over the training scene's
	MetaDriftUncertaintyRatio     = "DRIFT_UNCERTAINTY_RATIO"      // mean G~ over the training scene's for the same labels
	MetaDriftMarginRatio          = "DRIFT_MARGIN_RATIO"           // mean probability margin over the training scene's
	// The recalibration probe (model.ProbeRecalibration).
	MetaDriftRecalibrationChangeShare = "DRIFT_RECALIBRATION_CHANGE_SHARE" // 0..1 of the probe window's valid pixels
	MetaDriftRecalibrationBandShift   = "DRIFT_RECALIBRATION_BAND_SHIFT"   // estimated band shift, bands
)

// MetaDriftFigure is the metadata key of a drift figure (model.DriftFigure.Key).
func MetaDriftFigure(key string) string { return "DRIFT_" + strings.ToUpper(key) }

// DriftThresholdsJSON is the verdict's thresholds as one flat JSON object,
// warn_KEY and fail_KEY per limit (model.DriftLimit; a limit not used is
// left out) and warn_abs_recalibration_band_shift for the band shift rule
// (model.DriftThresholds.BandShiftBands): the DRIFT_THRESHOLDS metadata
// and the STAC Item's fields.
func DriftThresholdsJSON(t model.DriftThresholds) map[string]float64 {
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

// DriftMetadata is the product metadata of a scene's drift.
func DriftMetadata(d model.Drift) map[string]string {
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
	thresholds, _ := json.Marshal(DriftThresholdsJSON(model.DefaultDriftThresholds))
	md := map[string]string{
		MetaDriftVerdict:             string(d.Verdict),
		MetaDriftReasons:             strings.Join(d.Reasons, "; "),
		MetaDriftReliability:         f(d.Reliability),
		MetaDriftReliabilityBaseline: f(d.ReliabilityBaseline),
		MetaDriftBandShift:           string(perBand),
		MetaDriftThresholds:          string(thresholds),
	}
	for _, fig := range model.DriftFigures() {
		md[MetaDriftFigure(fig.Key)] = f(fig.Value(d))
	}
	return md
}

// DriftJSON is a scene's drift as a JSON object (the STAC Item's
// pnec:drift): the figures of the verdict (ratios 0..1, band shifts in
// training standard deviations; null where undefined), the thresholds and
// the reasons it is not ok.
func DriftJSON(d model.Drift) map[string]any {
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
	for _, f := range model.DriftFigures() {
		props[f.Key] = num(f.Value(d))
	}
	for k, v := range DriftThresholdsJSON(model.DefaultDriftThresholds) {
		props[k] = v
	}
	return props
}

// ErrDrift is wrapped by DriftError.
var ErrDrift = errors.New("scene too far from the training data")

// DriftError is what a DriftCheck returns to withhold a product: the
// scene's drift, whose verdict the caller refused.
type DriftError struct{ Drift model.Drift }

func (e *DriftError) Error() string {
	return fmt.Sprintf("drift verdict %s", e.Drift.Summary())
}

// Unwrap makes errors.Is(err, ErrDrift) true.
func (e *DriftError) Unwrap() error { return ErrDrift }

// RefuseDrift is a DriftCheck that refuses scenes whose verdict is at
// least as bad as worst (model.DriftWarn or model.DriftFail) with a
// *DriftError.
func RefuseDrift(worst model.DriftVerdict) func(model.Drift) error {
	return func(d model.Drift) error {
		if d.Verdict == model.DriftFail || (worst == model.DriftWarn && d.Verdict == model.DriftWarn) {
			return &DriftError{Drift: d}
		}
		return nil
	}
}
