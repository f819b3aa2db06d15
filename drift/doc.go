// Package drift says how far a scene is from the scene a model was
// trained on, and whether its map can be trusted: the figures (Report),
// the meter that gathers them from a scene's pixels and the network's
// cells (Meter), the thresholds and the verdict rule (Thresholds,
// Verdict), the recalibration probe's windows and calibration maths
// (ProbeWindows, EstimateCalibration) and the figures' names in products
// and STAC Items (Metadata, JSON).
//
// It is plain arithmetic on plain data: the model learns the training
// scene's statistics (Stats) and runs the network for the probe; this
// package holds no network and imports no other part of pnec but tiling
// and the shared percentile (internal/quantile).
// docs/acquisitions.md says how the thresholds were chosen and what they
// give.
package drift
