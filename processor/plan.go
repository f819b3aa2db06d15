package processor

import (
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
)

// genericNetworkBytesPerPixel stands in for model.Model.EstimatePredictBytes
// when a plan is made without a model (pnec tiles without --model): the
// order of a default-configuration network's inference peak per input pixel.
const genericNetworkBytesPerPixel = 8 << 10

// genericClasses and genericBands size the buffers of a plan made without a model.
const genericClasses = 16

// PlanScene plans how a rows x cols scene with bands bands runs: the whole
// image when it fits opts.MaxMemoryBytes (0 = DefaultMaxMemoryBytes), else
// the largest tiles that fit; opts.TileSize > 0 forces tiles. m supplies the
// network's memory estimate, class count and recovery window; with m nil a
// generic estimate is used. It returns the plan and the budget it was made for.
func PlanScene(rows, cols, bands int, m *model.Model, opts Options) (tiling.Plan, int64, error) {
	return planScene(rows, cols, bands, m, opts, false)
}

// PlanSceneLazy is PlanScene with a lazy plan (tiling.Options.Lazy): its
// Tiles are not listed, Plan.Tile(i) gives each. It describes plans of any
// size at once, for pnec tiles.
func PlanSceneLazy(rows, cols, bands int, m *model.Model, opts Options) (tiling.Plan, int64, error) {
	return planScene(rows, cols, bands, m, opts, true)
}

func planScene(rows, cols, bands int, m *model.Model, opts Options, lazy bool) (tiling.Plan, int64, error) {
	budget := opts.MaxMemoryBytes
	if budget == 0 {
		budget = DefaultMaxMemoryBytes()
	}
	cost := &tiling.Cost{Bands: bands, Classes: genericClasses,
		NetworkBytes: func(r, c int) int64 { return int64(r) * int64(c) * genericNetworkBytesPerPixel }}
	window := model.DefaultConfig().Recovery.Window
	if m != nil {
		cost.Bands = m.Bands()
		cost.Classes = len(m.Classes())
		if _, ref, err := ResolveReliability(m, opts.Reliability, nil); err == nil && ref != nil {
			// The spectral reliability adds one class cosine per class to
			// every tile output and canvas pixel: count them as classes.
			cost.Classes *= 2
		}
		cost.NetworkBytes = m.EstimatePredictBytes
		window = m.Recovery().Window
	}
	if err := checkTile(opts, window); err != nil {
		return tiling.Plan{}, budget, err
	}
	overlap := opts.Overlap
	switch {
	case overlap == 0:
		overlap = -1 // tiling's "default"
	case overlap < 0:
		overlap = 0
	}
	p, err := tiling.New(rows, cols, tiling.Options{
		Stride:         model.Stride,
		TileSize:       opts.TileSize,
		Overlap:        overlap,
		RecoveryWindow: window,
		MaxMemoryBytes: budget,
		Cost:           cost,
		Lazy:           lazy,
	})
	return p, budget, err
}
