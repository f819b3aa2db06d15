package drift

// Report is how far a scene is from a model's training scene, and the
// verdict on it.
type Report struct {
	Verdict Verdict
	Reasons []string // why the verdict is not ok, one phrase each
	// BandShiftSD is each band's mean over the scene's valid pixels minus
	// the training scene's, in the training scene's standard deviations;
	// BandShiftMeanSD is the mean of its absolute values, BandShiftMaxSD the
	// largest absolute value.
	BandShiftSD                     []float64
	BandShiftMeanSD, BandShiftMaxSD float64
	// BrightnessRatio is the median over bands of the scene's band mean
	// over the training scene's.
	BrightnessRatio float64
	// FarShare is the share of valid pixels farther from every class (by
	// spectral angle to its nearest training spectrum) than 99% of the
	// training scene's pixels of that class.
	FarShare float64
	// DistanceRatio compares the distances themselves: per class, the
	// median distance of the scene's pixels nearest that class over the
	// training scene's, averaged over the classes (geometric mean weighted
	// by pixels). A change of every spectrum's shape (a tilt, a band shift)
	// raises it; another mix of the same classes does not.
	DistanceRatio float64
	// Reliability is the mean spectral reliability of the valid pixels'
	// final labels, 0..1; ReliabilityBaseline what the training scene gave
	// for the same mix of labels (its per-class means weighted by this
	// scene's label counts), and ReliabilityRatio their ratio.
	Reliability, ReliabilityBaseline, ReliabilityRatio float64
	ValidPixels                                        int64

	// The figures in the network's own terms, each against what the
	// training scene gave. FeatureFarShare is the share of valid cells of
	// the network's stride-4 grid whose fused features are farther from
	// their nearest prototype than 90% of the training scene's cells
	// nearest that prototype (0.1 on the training scene);
	// FeatureDistanceRatio the class-wise median feature distance over the
	// training scene's (geometric mean weighted by cells, as DistanceRatio).
	FeatureFarShare, FeatureDistanceRatio float64
	// PrototypeMarginRatio is the mean margin between the nearest and the
	// second prototype's cosine over the training scene's for the same mix
	// of nearest prototypes.
	PrototypeMarginRatio float64
	// UncertaintyRatio is the mean G~ (the reliability gate's uncertainty)
	// of the valid pixels over the training scene's for the same mix of
	// labels; MarginRatio the mean margin of the recovered probabilities
	// (largest minus second) over the training scene's likewise.
	UncertaintyRatio, MarginRatio float64
	ValidCells                    int64

	// RecalibrationChangeShare is the share of the probe window's valid
	// pixels whose class changes when the scene is brought back to the
	// training scene's calibration (ProbeRecalibration): about what the
	// map lost to the calibration the network did not see past.
	// RecalibrationBandShift is the band shift the probe estimated,
	// bands; ProbePixels the window's valid pixels.
	RecalibrationChangeShare, RecalibrationBandShift float64
	ProbePixels                                      int64
}
