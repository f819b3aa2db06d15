package processor

import (
	"errors"
	"fmt"

	"github.com/pnec/pnec/geo"
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
// generic estimate is used. It returns the plan and the budget it was made
// for. The scene's samples are taken as 4 bytes in 256 x 256 blocks for the
// block cache; PlanSceneInfo uses what a geo.Info says.
func PlanScene(rows, cols, bands int, m *model.Model, opts Options) (tiling.Plan, int64, error) {
	return planScene(assumedInfo(rows, cols, bands), m, opts, false)
}

// PlanSceneInfo is PlanScene for a scene described by info (its sample
// size and block layout size the block cache).
func PlanSceneInfo(info geo.Info, m *model.Model, opts Options) (tiling.Plan, int64, error) {
	return planScene(info, m, opts, false)
}

// PlanSceneLazy is PlanSceneInfo with a lazy plan (tiling.Options.Lazy):
// its Tiles are not listed, Plan.Tile(i) gives each. It describes plans of
// any size at once, for pnec tiles.
func PlanSceneLazy(info geo.Info, m *model.Model, opts Options) (tiling.Plan, int64, error) {
	return planScene(info, m, opts, true)
}

func assumedInfo(rows, cols, bands int) geo.Info {
	return geo.Info{Rows: rows, Cols: cols, Bands: bands, SampleBytes: 4, BlockCols: 256, BlockRows: 256}
}

// PlannedBytes is the calibrated memory model's estimate of the peak
// resident memory of running plan on a scene of info's shape with m and
// opts (see MemoryModel).
func PlannedBytes(plan tiling.Plan, info geo.Info, m *model.Model, opts Options) int64 {
	c := newSceneCost(info, m, opts).tiling()
	if plan.Whole {
		return c.WholeBytes(plan.Rows, plan.Cols)
	}
	return c.TiledBytes(plan.TileRows, plan.TileCols, plan.Cols, plan.Overlap, recoveryWindow(m))
}

func recoveryWindow(m *model.Model) int {
	if m != nil {
		return m.Recovery().Window
	}
	return model.DefaultConfig().Recovery.Window
}

func planScene(info geo.Info, m *model.Model, opts Options, lazy bool) (tiling.Plan, int64, error) {
	rows, cols := info.Rows, info.Cols
	budget := opts.MaxMemoryBytes
	if budget == 0 {
		budget = DefaultMaxMemoryBytes()
	}
	sc := newSceneCost(info, m, opts)
	cost := sc.tiling()
	window := recoveryWindow(m)
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
	if errors.Is(err, tiling.ErrBudget) {
		// The smallest plan: tiles of tiling.MinTile, one row of them
		// across the whole width (the canvas stripe).
		t := min(tiling.MinTile, rows)
		ov := tiling.DefaultOverlap(tiling.MinTile, model.Stride, window)
		need := cost.TiledBytes(t, min(tiling.MinTile, cols), cols, ov, window)
		return p, budget, fmt.Errorf("%w: a %dx%d scene (cols x rows) of %d bands needs at least %s (one row of %d px tiles across its width%s), the budget is %s: give --max-memory %s or more",
			tiling.ErrBudget, cols, rows, sc.bands, FormatBytes(need), tiling.MinTile, sc.writeNote(), FormatBytes(budget), ceilSize(need))
	}
	if err != nil {
		return p, budget, err
	}
	// A forced tile is held to the budget like the planner's own, also when
	// it is at least the scene's size and the plan is its one tile.
	if opts.TileSize > 0 {
		if need := PlannedBytes(p, info, m, opts); need > budget {
			what := fmt.Sprintf("%d px tiles of a scene %d px wide with %d bands need", opts.TileSize, cols, sc.bands)
			if p.Whole {
				what = fmt.Sprintf("%d px tiles hold the whole %dx%d scene (cols x rows) of %d bands, which needs", opts.TileSize, cols, rows, sc.bands)
			}
			return p, budget, fmt.Errorf("%w: %s about %s%s, the budget is %s: give --max-memory %s or more, or smaller tiles",
				tiling.ErrBudget, what, FormatBytes(need), sc.writeNote(), FormatBytes(budget), ceilSize(need))
		}
	}
	return p, budget, nil
}

// writeNote says how much of a plan's need is the COG's large tiles (a
// BLOCKSIZE creation option above the default), "" when none.
func (c *sceneCost) writeNote() string {
	if c.write <= 0 {
		return ""
	}
	return fmt.Sprintf(", %s of it to compress the COG's tiles of the BLOCKSIZE creation option", FormatBytes(c.write))
}

// ceilSize writes n rounded up to a tenth of a GiB (or a MiB below 1 GiB),
// as --max-memory takes it.
func ceilSize(n int64) string {
	if n >= 1<<30 {
		tenths := (n*10 + 1<<30 - 1) >> 30
		return fmt.Sprintf("%d.%dG", tenths/10, tenths%10)
	}
	return fmt.Sprintf("%dM", (n+1<<20-1)>>20)
}
