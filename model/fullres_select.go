package model

// fullResInput says whether a model of cfg runs the paper encoder's
// full-resolution stage on pnec's kernels (fullRes) instead of the graph
// when it predicts: for the input modes with one channel per band (fullRes
// makes the input rows itself; stretch+shape's two channels per band are
// not built in), where the CPU has the kernels (fullResAvailable).
func fullResInput(cfg Config) bool {
	return cfg.Encoder == EncoderPaper && fullResMode(cfg.Input) && fullResAvailable(cfg.Hidden)
}

// fullResMode says whether fullRes can make the input of mode.
func fullResMode(mode string) bool {
	switch mode {
	case "", InputStretch, InputShape, InputSNV:
		return true
	}
	return false
}

// fullResTraining says whether training with cfg runs the full-resolution
// stage on fullRes: as fullResInput, without radiometric augmentation or
// with augmented steps normalised with their own statistics
// (Augment.ImageNorm, the default): fullRes then takes each step's scene
// as it comes. Augmented steps normalised with the clean scene's
// statistics (the gradient flowing through them) stay in the graph.
func fullResTraining(cfg Config) bool {
	return fullResInput(cfg) && (!cfg.Augment.On() || cfg.Augment.ImageNorm)
}
