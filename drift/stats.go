package drift

import (
	"errors"
	"fmt"
)

// ErrNoStats is returned (wrapped) when drift is asked of a model without
// training statistics (one trained without its spectra).
var ErrNoStats = errors.New("model holds no training statistics for drift")

// ErrNoProbeStats is returned (wrapped) when a model's drift statistics
// lack the class mean spectra the recalibration probe needs.
var ErrNoProbeStats = errors.New("model drift statistics hold no class mean spectra")

// Stats are the statistics of the training scene that a new scene's
// drift is measured against (Meter): the model learns them in training
// and stores them in its file.
type Stats struct {
	// BandMean and BandStd are each band's mean and standard deviation of
	// the raw values over the training scene's valid pixels.
	BandMean []float32 `json:"band_mean"`
	BandStd  []float32 `json:"band_std"`
	// ClassShare is the share of the training scene's valid pixels the
	// model labels with each class (dense index), after recovery.
	ClassShare []float32 `json:"class_share"`
	// ClassDistanceP99 is, per class, the 99th percentile of the cosine
	// distance (1 - cos) from a training-scene pixel to the nearest
	// training spectrum of that class, over the valid pixels whose nearest
	// class it is (the training pixels left out).
	ClassDistanceP99 []float32 `json:"class_distance_p99"`
	// DistanceQuantiles are the 50th, 90th, 99th and 99.9th percentiles
	// of the distance to the nearest training spectrum of any class over the
	// same pixels: the spectral-distance distribution of the training scene.
	DistanceQuantiles []float32 `json:"distance_quantiles"`
	// ClassDistanceP50 is, per class, the median of the same distances: a
	// new scene's are compared with it class by class (Report.DistanceRatio).
	ClassDistanceP50 []float32 `json:"class_distance_p50"`
	// Reliability is the mean spectral reliability (SpectralReference
	// agreement of the final label, 0..1) over the training scene's valid
	// pixels, and ClassReliability its mean over the pixels labelled with
	// each class: a new scene's is compared with what its own mix of labels
	// gave on the training scene.
	Reliability      float64   `json:"reliability_mean"`
	ClassReliability []float32 `json:"class_reliability"`
	// Pixels is the number of valid pixels these statistics are over.
	Pixels int64 `json:"pixels"`

	// The network's own terms (file format 4). FeatureDistanceP50 and
	// FeatureDistanceP90 are, per class, the median and 90th percentile of
	// the feature distance (1 - cos between a cell's fused features and
	// its nearest prototype) over the training scene's valid cells of the
	// network's stride-4 grid whose nearest prototype is that class's;
	// ClassPrototypeMargin is the mean over the same cells of the nearest
	// prototype's cosine minus the second's. Cells is their number.
	FeatureDistanceP50   []float32 `json:"feature_distance_p50"`
	FeatureDistanceP90   []float32 `json:"feature_distance_p90"`
	ClassPrototypeMargin []float32 `json:"class_prototype_margin"`
	Cells                int64     `json:"cells"`
	// ClassUncertainty is the mean G~ (the reliability gate's fused
	// uncertainty) and ClassMargin the mean margin of the recovered
	// probabilities (largest minus second, over their sum) of the valid
	// pixels labelled with each class.
	ClassUncertainty []float32 `json:"class_uncertainty"`
	ClassMargin      []float32 `json:"class_margin"`
	// ClassMeanSpectrum is, per class, the mean raw spectrum of the
	// training scene's valid pixels labelled with it ([classes][bands]):
	// what the recalibration probe estimates a scene's calibration against
	// (EstimateCalibration).
	ClassMeanSpectrum []float32 `json:"class_mean_spectrum"`
}

// Quantiles are the percentiles of Stats.DistanceQuantiles.
var Quantiles = []float64{50, 90, 99, 99.9}

// NewStats is empty statistics for bands bands and k classes.
func NewStats(bands, k int) *Stats {
	return &Stats{BandMean: make([]float32, bands), BandStd: make([]float32, bands), ClassShare: make([]float32, k),
		ClassDistanceP99: make([]float32, k), ClassDistanceP50: make([]float32, k), ClassReliability: make([]float32, k),
		FeatureDistanceP50: make([]float32, k), FeatureDistanceP90: make([]float32, k), ClassPrototypeMargin: make([]float32, k),
		ClassUncertainty: make([]float32, k), ClassMargin: make([]float32, k), ClassMeanSpectrum: make([]float32, k*bands)}
}

// Check verifies statistics read from a model file of bands bands and k
// classes.
func (st *Stats) Check(bands, k int) error {
	switch {
	case len(st.BandMean) != bands || len(st.BandStd) != bands:
		return fmt.Errorf("drift statistics for %d/%d bands, want %d", len(st.BandMean), len(st.BandStd), bands)
	case len(st.ClassShare) != k || len(st.ClassDistanceP99) != k || len(st.ClassDistanceP50) != k || len(st.ClassReliability) != k:
		return fmt.Errorf("drift statistics for %d/%d/%d/%d classes, want %d", len(st.ClassShare), len(st.ClassDistanceP99), len(st.ClassDistanceP50), len(st.ClassReliability), k)
	case len(st.FeatureDistanceP50) != k || len(st.FeatureDistanceP90) != k || len(st.ClassPrototypeMargin) != k || len(st.ClassUncertainty) != k || len(st.ClassMargin) != k:
		return fmt.Errorf("feature drift statistics for %d/%d/%d/%d/%d classes, want %d", len(st.FeatureDistanceP50), len(st.FeatureDistanceP90), len(st.ClassPrototypeMargin), len(st.ClassUncertainty), len(st.ClassMargin), k)
	case len(st.ClassMeanSpectrum) == 0:
		return fmt.Errorf("drift statistics without the class mean spectra the recalibration probe needs (a model file of an earlier build of format 4): train the model again with this version: %w", ErrNoProbeStats)
	case len(st.ClassMeanSpectrum) != k*bands:
		return fmt.Errorf("class mean spectra of %d values, want %d classes x %d bands", len(st.ClassMeanSpectrum), k, bands)
	case len(st.DistanceQuantiles) != len(Quantiles):
		return fmt.Errorf("%d distance quantiles, want %d", len(st.DistanceQuantiles), len(Quantiles))
	case !(st.Reliability >= 0 && st.Reliability <= 1):
		return fmt.Errorf("reliability baseline %g outside 0..1", st.Reliability)
	}
	return nil
}
