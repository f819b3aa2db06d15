package model

import "github.com/pnec/pnec/model/internal/kernels"

// fullResInput says whether a model of cfg runs the paper encoder's
// full-resolution stage on pnec's kernels (kernels.FullRes) instead of the graph
// when it predicts: for the input modes with one channel per band (kernels.FullRes
// makes the input rows itself; stretch+shape's two channels per band are
// not built in), where the CPU has the kernels (kernels.FullResAvailable).
func fullResInput(cfg Config) bool {
	return cfg.Encoder == EncoderPaper && fullResMode(cfg.Input) && kernels.FullResAvailable(cfg.Hidden)
}

// fullResMode says whether kernels.FullRes can make the input of mode.
func fullResMode(mode string) bool {
	switch mode {
	case "", InputStretch, InputShape, InputSNV:
		return true
	}
	return false
}

// fullResTraining says whether training with cfg runs the full-resolution
// stage on kernels.FullRes: as fullResInput, without radiometric augmentation or
// with augmented steps normalised with their own statistics
// (Augment.ImageNorm, the default): kernels.FullRes then takes each step's scene
// as it comes. Augmented steps normalised with the clean scene's
// statistics (the gradient flowing through them) stay in the graph.
func fullResTraining(cfg Config) bool {
	return fullResInput(cfg) && (!cfg.Augment.On() || cfg.Augment.ImageNorm)
}

// The stage's output grid is the network's.
const _ = uint(Stride-kernels.Stride) + uint(kernels.Stride-Stride)

// newFullRes prepares the full-resolution stage of a network of sizes d
// for scene s, turned into the network's input by in.
func newFullRes(d dims, s Scene, in inputSpec, workers int) *kernels.FullRes {
	return kernels.NewFullRes(d.forKernels(), s.forKernels(), in.forKernels(), workers)
}

// newFullResWeights prepares the stage with the model's weights (params by
// name), for scenes given later with setFullResScene.
func newFullResWeights(d dims, params paramSet, workers int) *kernels.FullRes {
	w := map[string][]float32{}
	for _, p := range params {
		w[p.Name] = p.Data
	}
	return kernels.NewFullResWeights(d.forKernels(), w["embed.w"], w["embed.b"], w["embed.gn.g"], w["embed.gn.b"], w["conv.w"], w["conv.b"], workers)
}

// setFullResScene points fr at scene s, turned into the network's input by
// in (fullResMode: one channel per band).
func setFullResScene(fr *kernels.FullRes, s Scene, in inputSpec) {
	fr.SetScene(s.forKernels(), in.forKernels())
}

// forKernels are the sizes the full-resolution stage needs.
func (d dims) forKernels() kernels.Dims {
	return kernels.Dims{Bands: d.Bands, D: d.D, Groups: d.Groups}
}

// forKernels is s as the full-resolution stage reads it.
func (s Scene) forKernels() kernels.Scene {
	return kernels.Scene{Rows: s.Rows, Cols: s.Cols, Bands: s.Bands, Data: s.Data, Valid: s.Valid}
}

// forKernels is p as the full-resolution stage takes it: the per-band
// stretch, vectorised there, or for the other modes p.add.
func (p inputSpec) forKernels() kernels.Input {
	in := kernels.Input{Lo: p.lo, Scale: p.scale, Levels: p.levels}
	if p.mode != InputStretch && p.mode != "" {
		in.Add = p.add
	}
	return in
}
