package model

// fullResInput says whether a model of cfg runs the paper encoder's
// full-resolution stage on pnec's kernels (fullRes) instead of the graph
// when it predicts: fullRes computes the reference's per-band stretch
// itself, so only models with that input (InputStretch) can use it, and
// only where the CPU has the kernels (fullResAvailable).
func fullResInput(cfg Config) bool {
	return cfg.Encoder == EncoderPaper && (cfg.Input == "" || cfg.Input == InputStretch) && fullResAvailable(cfg.Hidden)
}

// fullResTraining says whether training with cfg runs the full-resolution
// stage on fullRes: as fullResInput, and without radiometric augmentation,
// whose steps each feed the graph another scene (fullRes is set up for
// one).
func fullResTraining(cfg Config) bool {
	return fullResInput(cfg) && !cfg.Augment.On()
}
