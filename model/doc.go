// Package model is the PNEC-Mamba classifier: the network, its training,
// model files and the compute backends. It is the only package that imports
// GoMLX.
//
// The network (network.go) works on the whole scene at once. Each pixel's
// spectrum becomes the input channels (prep.go: by default divided by its
// mean over the bands, Config.Input; the paper's stretch per band to its
// 2nd-98th percentiles is InputStretch) and is averaged over 4x4 cells (the
// 1x1 spectral embedding is linear, so this equals pooling after the
// embedding); a 1x1 embedding, GroupNorm and SiLU, a 3x3 convolution
// (one matmul over nine shifted views), GroupNorm and SiLU give F0 on the
// stride-4 grid. Two Mamba blocks run over the row-major token sequence:
// the spatial-context branch on F0 and the differential branch on
// F0 - a*avgpool5(F0) along channels. Their selective scans use the chunked
// matrix (SSD) form (ssdScan), checked against a sequential recurrence in
// the tests. Prototype-guided evidence, three uncertainty sources, the gate
// and the shared head give the calibrated logits Z_cal and the fused
// uncertainty G~; Predict returns softmax(bilinear_up(Z_cal)) and G~ at full
// resolution. Metrics and reliability candidates are plain Go in
// metrics.go and reliability.go; the AvgPool recovery, which works on
// stitched probabilities, is package tiling's (tiling.Recover), beside the
// canvas it runs on.
//
// Training (train.go) is one full-scene step per epoch, with the weights,
// Adam moments and prototype bank kept as tensors that each step consumes
// and returns; radiometric augmentation (radiometric.go, Config.Augment)
// changes the whole scene of a step. A model stores its training scene's
// drift statistics (drift.go), against which DriftMeter measures new scenes. Backends: "go" (pure Go, SIMD matmuls with GOEXPERIMENT=simd)
// and XLA through a PJRT plugin (see ResolveBackend).
package model
