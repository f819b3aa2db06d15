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
// Training is one full-scene step per epoch, with the weights, Adam
// moments and prototype bank kept as tensors that each step consumes and
// returns. Its files, apart from the network's: train.go (Train: its
// inputs, classes, split and the trained Model), train_config.go (the
// defaults and validation of a Config), train_run.go (the epoch loop),
// train_data.go (a step's tensors), train_step.go (the compiled step, its
// loss and the prototype bank), train_adam.go (Adam, in the graph and on
// the host), train_augment.go and train_augment_graph.go (radiometric
// augmentation on the host and in the graph; radiometric.go, shared with
// the acquisition-shift protocol, holds the transforms and Config.Augment).
// A model stores its training scene's drift statistics (drift.go), against
// which DriftMeter measures new scenes. Backends: "go" (pure Go, SIMD
// matmuls with GOEXPERIMENT=simd) and XLA through a PJRT plugin (see
// backend.Resolve).
//
// pnec's own CPU kernels (the paper encoder's full-resolution stage beside
// the graph, its sgemm, the spectral score's dot products) are in
// model/internal/kernels, free of GoMLX; fullres_select.go decides when
// the stage runs there and adapts the model's scene and input to it.
package model
