package processor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
)

// genericNetworkBytesPerPixel stands in for model.Model.EstimatePredictBytes
// when a plan is made without a model (pnec tiles without --model): the
// order of a default-configuration network's inference peak per input pixel.
const genericNetworkBytesPerPixel = 8 << 10

// genericClasses sizes the buffers of a plan made without a model.
const genericClasses = 16

// CanonicalTile is the tile side, pixels, of the grid every model's plans
// follow (tiling.CanonicalTile, where its choice is explained): a scene
// whose sides are both at most CanonicalTile runs as one tile, a larger
// one on CanonicalTile x CanonicalTile tiles. Training windows follow the
// same grid (model.TrainOptions.Tile).
const CanonicalTile = tiling.CanonicalTile

// gridTile is the tile side, pixels, of the grid a plan with opts follows:
// the user's Options.TileSize when set (another grid, and so another map,
// than the model's), else CanonicalTile, for models of either encoder.
func gridTile(opts Options) int {
	if opts.TileSize > 0 {
		return opts.TileSize
	}
	return CanonicalTile
}

// PlanSceneInfo plans how the scene info describes runs: on the
// model's grid (the whole image up to CanonicalTile a side, else
// tiles of that side; opts.TileSize > 0 gives another grid), network
// inputs padded to the ladder (tiling.LadderStep). m supplies the
// network's memory estimate, class count and recovery window; with m nil a
// generic estimate is used. The budget (opts.MaxMemoryBytes, 0 =
// memory.DefaultBudget) never changes the plan: one that cannot hold one
// tile in flight is refused with a *BudgetError naming the smallest budget
// that works. It returns the plan and the budget. The info's sample size
// and block layout size the block cache.
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
// opts with tiling.MaxInFlight tiles in flight (see MemoryModel); Flight
// says how many a budget holds and their peak.
func PlannedBytes(plan tiling.Plan, info geo.Info, m *model.Model, opts Options) int64 {
	return newSceneCost(info, m, opts).planBytes(plan, tiling.MaxInFlight)
}

// PlanFlight is how many tiles of plan the budget (0 = memory.DefaultBudget)
// holds in flight on the host, at most tiling.MaxInFlight, and the memory
// model's peak for that many; with dev (the zero value: no accelerator)
// also how many the device holds. The plan was refused before when not
// even one fits (planScene); a device that cannot hold one tile is an
// error wrapping tiling.ErrDevice.
func PlanFlight(plan tiling.Plan, info geo.Info, m *model.Model, opts Options, budget int64, dev tiling.DeviceMemory) (tiling.Flight, int64, error) {
	budget = memory.Budget(budget)
	c := newSceneCost(info, m, opts)
	f, err := tiling.PlanFlight(budget, func(n int) int64 { return c.planBytes(plan, n) }, dev)
	if errors.Is(err, tiling.ErrBudget) {
		return f, 0, budgetError(plan, info, c, opts, budget)
	}
	planned := c.planBytes(plan, max(f.Host, 1))
	if err != nil {
		return f, planned, fmt.Errorf("%dx%d tiles: %w", plan.TileCols, plan.TileRows, err)
	}
	if f.Device > 1 {
		// Two calls at once need the next tile read ahead, and hold one
		// more tile's outputs on the host (runTiles): else one at a time.
		if extra := c.outputBytes(plan); f.Host < f.Device || planned+extra > budget {
			f.Device = 1
		} else {
			planned += extra
		}
	}
	return f, planned, nil
}

// The predictor hears the planner's device tiles through deviceSizer.
var _ deviceSizer = (*model.Predictor)(nil)

// deviceSizer is what a predictor whose network runs on an accelerator
// (model.Predictor on an XLA device backend) tells the planner and hears
// back: DeviceMemory is the device's memory and what one call on a rows x
// cols input needs there; SetDeviceTiles is how many such calls' buffers
// the planner decided the device holds at once (tiling.Flight.Device: 2
// lets the next tile upload while one runs, 1 frees a tile's buffers
// before the next). A predictor without it runs in host memory.
type deviceSizer interface {
	DeviceMemory(rows, cols int) (tiling.DeviceMemory, error)
	SetDeviceTiles(n int)
}

// deviceMemory is what pred's device holds for plan's input shape (the
// zero value without an accelerator).
func deviceMemory(pred predictor, plan tiling.Plan) (tiling.DeviceMemory, error) {
	d, ok := pred.(deviceSizer)
	if !ok {
		return tiling.DeviceMemory{}, nil
	}
	dev, err := d.DeviceMemory(plan.TileRows, plan.TileCols)
	if err != nil {
		return dev, fmt.Errorf("device memory for %dx%d tiles: %w", plan.TileCols, plan.TileRows, err)
	}
	return dev, nil
}

func recoveryWindow(m *model.Model) int {
	if m != nil {
		// The drift figures recover the network's own decision too.
		return max(m.Recovery().Window, m.NetworkRecovery().Window)
	}
	return model.PaperRecoveryWindow
}

func planScene(info geo.Info, m *model.Model, opts Options, lazy bool) (tiling.Plan, int64, error) {
	budget := memory.Budget(opts.MaxMemoryBytes)
	p, err := planGrid(info, m, opts, lazy)
	if err != nil {
		return p, budget, err
	}
	// The budget only decides how many tiles are in flight: one is the
	// least a run can hold.
	c := newSceneCost(info, m, opts)
	if c.planBytes(p, 1) > budget {
		return p, budget, budgetError(p, info, c, opts, budget)
	}
	return p, budget, nil
}

// planGrid is the plan of a scene described by info on the grid of m and
// opts, whatever the budget.
func planGrid(info geo.Info, m *model.Model, opts Options, lazy bool) (tiling.Plan, error) {
	if err := checkTile(opts, recoveryWindow(m)); err != nil {
		return tiling.Plan{}, err
	}
	return tiling.New(info.Rows, info.Cols, tiling.Options{
		Stride:   model.Stride,
		TileSize: gridTile(opts),
		Overlap:  opts.Overlap,
		Ladder:   tiling.LadderStep,
		Lazy:     lazy,
	})
}

// SmallestBudget is the smallest budget, bytes, in which a rows x cols
// scene with bands bands runs with m and opts (one tile of its plan in
// flight; opts.MaxMemoryBytes plays no part): what a *BudgetError names
// as NeedBytes. The scene's samples are taken as 4 bytes in 256 x 256
// blocks for the block cache.
func SmallestBudget(rows, cols, bands int, m *model.Model, opts Options) (int64, error) {
	info := assumedInfo(rows, cols, bands)
	p, err := planGrid(info, m, opts, true)
	if err != nil {
		return 0, err
	}
	return newSceneCost(info, m, opts).planBytes(p, 1), nil
}

// SceneShape is the network input shape the plan of a rows x cols scene
// runs on with m and opts (all its tiles share one): Recovered when the
// scene runs whole, its product is recovered and m decides by the network
// alone (what a predictor that recovers in the graph then compiles;
// Classifier.recoversWhole: a fused decision recovers on the host).
func SceneShape(rows, cols int, m *model.Model, opts Options) (model.CallShape, error) {
	p, err := planGrid(assumedInfo(rows, cols, 1), m, opts, true)
	if err != nil {
		return model.CallShape{}, err
	}
	return model.CallShape{Rows: p.TileRows, Cols: p.TileCols, Recovered: recoveredWhole(p, opts) && !m.Decision().Fused()}, nil
}

// recoveredWhole says whether plan p runs the scene whole, in one call whose
// product is recovered: the whole image, unless the product writes the
// network's probabilities (P_up, before recovery). Whether the predictor
// then recovers it in the graph is Classifier.recoversWhole's to say.
func recoveredWhole(p tiling.Plan, opts Options) bool {
	return p.Whole && opts.Probabilities != ProbabilitiesNetwork
}

// GridShapes is every network input shape the grid of m and opts (the
// model's, CanonicalTile, unless opts.TileSize) gives scenes of any size,
// each once in ladder order: with the default grid the 36 shapes of 64 to
// 384 px a side that scenes up to 384 px a side run whole on, and the 11
// of them with a 384 px side that tiles run on (a tile is 384 px along an
// axis longer than the tile, on the ladder across a shorter one). They are
// what pnec backends --precompile compiles for a node image. Each shape
// comes from the planner itself (SceneShape), for a scene one rung of the
// ladder a side (or the tile, where the top rung exceeds it) and one
// pixel beyond the tile; TestGridShapesAreThePlanners checks that no
// scene size gives any other.
func GridShapes(m *model.Model, opts Options) ([]model.CallShape, error) {
	if err := checkTile(opts, recoveryWindow(m)); err != nil {
		return nil, err
	}
	tile := tiling.AlignUp(gridTile(opts), model.Stride)
	var sides []int
	for r := tiling.LadderStep; r < tiling.Rung(tile, tiling.LadderStep); r += tiling.LadderStep {
		sides = append(sides, r)
	}
	sides = append(sides, tile, tile+1)
	var out []model.CallShape
	seen := map[model.CallShape]bool{}
	for _, rows := range sides {
		for _, cols := range sides {
			sh, err := SceneShape(rows, cols, m, opts)
			if err != nil {
				return nil, err
			}
			if !seen[sh] {
				seen[sh] = true
				out = append(out, sh)
			}
		}
	}
	return out, nil
}

// budgetError is the refusal of plan p under budget: the smallest budget
// that works is the peak with one tile in flight.
func budgetError(p tiling.Plan, info geo.Info, c *sceneCost, opts Options, budget int64) *BudgetError {
	return &BudgetError{Cols: info.Cols, Rows: info.Rows, Bands: c.bands, TileSize: opts.TileSize, Whole: p.Whole,
		TileRows: p.TileRows, TileCols: p.TileCols,
		NeedBytes: c.planBytes(p, 1), BudgetBytes: budget, WriteBytes: c.write,
		ChunkBytes: chunkCacheBytes(info, p.TileCols), Chunks: info.Chunks}
}

// BudgetError is a plan refused for memory (errors.Is(err,
// tiling.ErrBudget) holds): one tile in flight needs NeedBytes, the
// smallest budget that works, and the budget is BudgetBytes. cmd/pnec adds
// the flags that change either.
type BudgetError struct {
	Cols, Rows, Bands int
	// TileSize is the forced tile side, pixels; 0 for the model's grid.
	TileSize int
	// Whole: the plan is one tile, the whole scene.
	Whole bool
	// TileRows x TileCols is the plan's network input.
	TileRows, TileCols     int
	NeedBytes, BudgetBytes int64
	// WriteBytes is the part of NeedBytes that compressing the COG's
	// large tiles (a BLOCKSIZE creation option above the default) takes.
	WriteBytes int64
	// ChunkBytes is the part of NeedBytes that the decoded chunks of a
	// multidimensional scene's arrays (Chunks) take: the chunks a tile
	// row's reads span.
	ChunkBytes int64
	Chunks     geo.Chunking
}

func (e *BudgetError) Error() string {
	note := ""
	if e.WriteBytes > 0 {
		note = fmt.Sprintf(", %s of it to compress the COG's tiles of the BLOCKSIZE creation option", memory.FormatBytes(e.WriteBytes))
	}
	if e.ChunkBytes > 0 {
		ch := e.Chunks
		note += fmt.Sprintf(", %s of it to hold the decoded chunks a tile row reads (the scene's arrays are stored in chunks of %d cols x %d rows x %d bands, %s each once decoded; smaller chunks need less, e.g. nccopy -c)",
			memory.FormatBytes(e.ChunkBytes), ch.Cols, ch.Rows, ch.Bands, memory.FormatBytes(ch.Bytes))
	}
	// The need is rounded up, as NeedSize: "at least 2.0 GiB, the budget
	// is 2.0 GiB" read as a contradiction where 2.02 GiB were needed.
	need := strings.TrimSuffix(e.NeedSize(), "G") + " GiB"
	if strings.HasSuffix(e.NeedSize(), "M") {
		need = strings.TrimSuffix(e.NeedSize(), "M") + " MiB"
	}
	if e.Whole {
		return fmt.Sprintf("%v: the whole %dx%d scene (cols x rows) of %d bands runs as one %dx%d tile, which needs at least %s%s, the budget is %s",
			tiling.ErrBudget, e.Cols, e.Rows, e.Bands, e.TileCols, e.TileRows, need, note, memory.FormatBytes(e.BudgetBytes))
	}
	return fmt.Sprintf("%v: %dx%d tiles of a scene %d px wide with %d bands need at least %s (one tile in flight%s), the budget is %s",
		tiling.ErrBudget, e.TileCols, e.TileRows, e.Cols, e.Bands, need, note, memory.FormatBytes(e.BudgetBytes))
}

func (e *BudgetError) Unwrap() error { return tiling.ErrBudget }

// NeedSize is NeedBytes rounded up as a budget is written (4.2G, 512M).
func (e *BudgetError) NeedSize() string { return ceilSize(e.NeedBytes) }

// ceilSize writes n rounded up to a tenth of a GiB (or a MiB below 1 GiB),
// as --max-memory takes it.
func ceilSize(n int64) string {
	if n >= 1<<30 {
		tenths := (n*10 + 1<<30 - 1) >> 30
		return fmt.Sprintf("%d.%dG", tenths/10, tenths%10)
	}
	return fmt.Sprintf("%dM", (n+1<<20-1)>>20)
}
