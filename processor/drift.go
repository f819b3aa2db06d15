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
)

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
	t := model.DefaultDriftThresholds
	thresholds, _ := json.Marshal(map[string]float64{
		"warn_far_share": t.WarnFarShare, "fail_far_share": t.FailFarShare,
		"warn_reliability_ratio": t.WarnReliabilityRatio, "fail_reliability_ratio": t.FailReliabilityRatio,
		"warn_distance_ratio": t.WarnDistanceRatio,
	})
	return map[string]string{
		MetaDriftVerdict:             string(d.Verdict),
		MetaDriftReasons:             strings.Join(d.Reasons, "; "),
		MetaDriftFarShare:            f(d.FarShare),
		MetaDriftDistanceRatio:       f(d.DistanceRatio),
		MetaDriftReliability:         f(d.Reliability),
		MetaDriftReliabilityBaseline: f(d.ReliabilityBaseline),
		MetaDriftReliabilityRatio:    f(d.ReliabilityRatio),
		MetaDriftBrightnessRatio:     f(d.BrightnessRatio),
		MetaDriftBandShiftMean:       f(d.BandShiftMeanSD),
		MetaDriftBandShiftMax:        f(d.BandShiftMaxSD),
		MetaDriftBandShift:           string(perBand),
		MetaDriftThresholds:          string(thresholds),
	}
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
