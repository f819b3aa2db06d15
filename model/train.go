package model

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/tiling"
	"github.com/pnec/pnec/version"
)

// Train fits a model on scene s. labels holds class values (row-major,
// Rows*Cols, 0 = unlabelled); the training pixels are picked from them
// (or given by opts.TrainMask) and all other labelled pixels are test pixels.
func Train(ctx context.Context, s Scene, labels []int32, opts TrainOptions) (m *Model, err error) {
	start := time.Now()
	opts = opts.withDefaults()
	cfg := opts.Config
	setup, err := newTrainSetup(s, labels, opts)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	// A step runs on one tile of a windowed run: its size decides.
	desc, err := backend.Decide(opts.Backend, backend.Job{Task: backend.TaskTrain, Pixels: int64(setup.plan.TileRows * setup.plan.TileCols), Epochs: cfg.Epochs})
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	b, err := desc.Open()
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	closeBackend := sync.OnceFunc(b.Finalize)
	defer closeBackend()
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("train on %s: %v", desc.Label(), r)
		}
	}()

	run := &trainRun{s: s, cfg: cfg, desc: desc, where: opts.AugmentWhere, setup: setup}
	defer run.finalize()
	if err := run.prepare(b, opts.Seed); err != nil {
		return nil, err
	}
	loss, acc, err := run.fit(ctx, opts.Progress, start)
	if err != nil {
		return nil, err
	}
	params, protos, err := run.weights()
	if err != nil {
		return nil, fmt.Errorf("train: read weights: %w", err)
	}
	// The step's state and compiled graph are done with: release them
	// before the statistics passes below, which compile and run inference
	// graphs of their own (held together they made the peak), and the
	// collector frees the steps' garbage before those passes allocate
	// (1000 x 1000 x 224 on 384 px tiles: peak RSS 2.78 GB at this point
	// without it).
	run.finalize()
	runtime.GC()
	m = newTrainedModel(run, opts, params, protos, loss, acc, start)
	if err := m.meta.setBandRecord(opts.Bands); err != nil {
		return nil, fmt.Errorf("train: band record: %w", err)
	}
	m.meta.setProvenance(opts.Provenance)
	m.meta.spectralSpectra, m.meta.SpectralClasses = trainSpectra(s, setup.trainIdx, setup.ytrain, len(setup.values), opts.Seed)
	if cfg.Decision.Mode == DecisionFused {
		c := &m.meta.Config
		if c.Decision, c.Recovery.Window, err = chooseDecision(s, setup.trainIdx, setup.ytrain,
			len(setup.values), cfg.Augment, cfg.Recovery.Window, opts.Seed); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	if err := s.readErr(); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if m.meta.GroupNormStats, err = groupNormStats(b, m, s, run.fr); err == nil {
		err = s.readErr()
	}
	if err != nil {
		return nil, fmt.Errorf("train: group norm statistics on %s: %w", desc.Label(), err)
	}
	// The drift pass predicts on a backend of its own: the training
	// backend's buffers go first, so that its memory is reused rather than
	// added to (measured at Pavia size, cell encoder: peak RSS 2065 ->
	// 2004 MB; the drift pass still adds about 300 MB to training's peak).
	closeBackend()
	runtime.GC()
	if m.meta.Drift, err = trainDriftStats(ctx, m, s, desc.Name); err == nil {
		err = s.readErr()
	}
	if err != nil {
		return nil, fmt.Errorf("train: drift statistics on %s: %w", desc.Label(), err)
	}
	if _, sum, err := m.fileBytes(); err == nil {
		m.checksum = sum
	}
	// The kernels compiled here serve the next processes; a cache that
	// cannot be written only costs a later run time.
	_ = backend.PublishCompileCache()
	return m, nil
}

// trainSetup is what Train takes from its inputs before it opens a
// backend: the classes, the training pixels and the network's sizes.
type trainSetup struct {
	values   []int32 // the class values, ascending
	classes  []Class
	trainIdx []int   // the training pixels, row-major
	ytrain   []int32 // their dense classes
	split    string  // "seed" or "mask"
	// plan is the grid the scene trains on (trainGrid): one image, or the
	// tiles of side tile px, those owning training pixels in win.
	plan   tiling.Plan
	tile   int
	win    *trainWindows
	d      dims
	lo, hi []float32 // the per-band stretch
}

// newTrainSetup checks Train's inputs and derives its setup; its errors
// are Train's without the "train: " prefix.
func newTrainSetup(s Scene, labels []int32, opts TrainOptions) (*trainSetup, error) {
	cfg := opts.Config
	if err := checkTrainInputs(s, labels, opts); err != nil {
		return nil, err
	}
	st := &trainSetup{values: trainClassValues(s, labels, opts.TrainMask)}
	if len(st.values) < 2 {
		return nil, fmt.Errorf("labels hold %d classes among valid pixels, need at least 2", len(st.values))
	}
	var denseOf map[int32]int32
	denseOf, st.classes = trainClasses(st.values, opts)
	st.trainIdx, st.split = trainSplit(s, labels, opts, denseOf, len(st.values))
	if len(st.trainIdx) == 0 {
		return nil, fmt.Errorf("no training pixels")
	}
	st.ytrain = trainTargetClasses(st.trainIdx, labels, opts.TrainMask, denseOf)
	var err error
	if st.d, err = makeDims(cfg, s.Bands, len(st.values)); err != nil {
		return nil, err
	}
	if st.plan, err = trainPlan(s, st.d, opts, len(st.trainIdx)); err != nil {
		return nil, err
	}
	if st.plan.Whole && s.Streamed() {
		return nil, fmt.Errorf("training on the whole image: %w; train on tiles", errStreamedWhole)
	}
	if !st.plan.Whole {
		st.tile = cmp.Or(opts.Tile, tiling.CanonicalTile)
		st.win = newTrainWindows(st.plan, s, st.trainIdx, st.ytrain, opts.Seed)
	}
	rows := len(st.trainIdx)
	if st.win != nil {
		rows = st.win.rows
	}
	if err := checkTrainMemory(st.d, cfg, s, st.plan, rows, opts.MaxMemoryBytes); err != nil {
		return nil, err
	}
	if st.lo, st.hi, err = bandStretch(s); err != nil {
		return nil, fmt.Errorf("normalisation statistics: %w", err)
	}
	return st, nil
}

// checkTrainInputs checks the configuration, the scene and that the labels
// and the training mask cover the scene.
func checkTrainInputs(s Scene, labels []int32, opts TrainOptions) error {
	if err := validateConfig(opts.Config); err != nil {
		return err
	}
	if err := checkScene(s); err != nil {
		return err
	}
	npix := s.Rows * s.Cols
	if len(labels) != npix {
		return fmt.Errorf("labels have %d values, scene %d pixels", len(labels), npix)
	}
	if opts.TrainMask != nil && len(opts.TrainMask) != npix {
		return fmt.Errorf("training mask has %d values, scene %d pixels", len(opts.TrainMask), npix)
	}
	return nil
}

// trainClassValues is every value in the labels and the training mask at
// valid pixels, ascending.
func trainClassValues(s Scene, labels, trainMask []int32) []int32 {
	seen := map[int32]bool{}
	for _, vs := range [][]int32{labels, trainMask} {
		for i, v := range vs {
			if v > 0 && s.valid(i) {
				seen[v] = true
			}
		}
	}
	values := make([]int32, 0, len(seen))
	for v := range seen {
		values = append(values, v)
	}
	slices.Sort(values)
	return values
}

// trainClasses numbers the class values densely and names and colours
// them from opts (a class without a name is "class N").
func trainClasses(values []int32, opts TrainOptions) (denseOf map[int32]int32, classes []Class) {
	denseOf = map[int32]int32{}
	classes = make([]Class, len(values))
	for k, v := range values {
		denseOf[v] = int32(k)
		classes[k] = Class{Value: int(v), Name: opts.ClassNames[int(v)], Color: PaletteColor(int(v))}
		if classes[k].Name == "" {
			classes[k].Name = fmt.Sprintf("class %d", v)
		}
		if c, ok := opts.Colors[int(v)]; ok {
			classes[k].Color = c
		}
	}
	return denseOf, classes
}

// trainSplit picks the training pixels: the training mask's valid pixels
// when there is one ("mask"), else opts.TrainPerClass per class drawn with
// opts.SplitSeed ("seed").
func trainSplit(s Scene, labels []int32, opts TrainOptions, denseOf map[int32]int32, classes int) (trainIdx []int, split string) {
	if opts.TrainMask != nil {
		for i, v := range opts.TrainMask {
			if v > 0 && s.valid(i) {
				trainIdx = append(trainIdx, i)
			}
		}
		return trainIdx, "mask"
	}
	dense := make([]int32, len(labels))
	for i, v := range labels {
		dense[i] = -1
		if v > 0 && s.valid(i) {
			dense[i] = denseOf[v]
		}
	}
	return pickSplit(dense, classes, opts.TrainPerClass, opts.SplitSeed), "seed"
}

// trainTargetClasses is the dense class of each training pixel, from the
// training mask when there is one, else from the labels.
func trainTargetClasses(trainIdx []int, labels, trainMask []int32, denseOf map[int32]int32) []int32 {
	ytrain := make([]int32, len(trainIdx))
	for t, i := range trainIdx {
		if trainMask != nil {
			ytrain[t] = denseOf[trainMask[i]]
		} else {
			ytrain[t] = denseOf[labels[i]]
		}
	}
	return ytrain
}

// checkTrainMemory checks the memory budget and that training on plan
// (one step on one of its tiles, or on the whole image) with rows training
// pixels a step fits in it: the scene s itself, the network's estimate
// (trainBytes) and the step's bilinear weights from the cells to the
// pixels ([rows, cells] float32, with its gradient's and product's copies).
func checkTrainMemory(d dims, cfg Config, s Scene, plan tiling.Plan, rows int, maxBytes int64) error {
	if maxBytes < 0 {
		return fmt.Errorf("memory budget %d bytes: must be 0 (default) or positive", maxBytes)
	}
	if need := trainNeedBytes(d, cfg, s, plan, rows); trainOverBudget(need, maxBytes) {
		return &MemoryError{NeedBytes: need, LimitBytes: memory.TrainBudget(maxBytes)}
	}
	return nil
}

// trainOverBudget says a run needing need bytes is refused under maxBytes.
func trainOverBudget(need, maxBytes int64) bool {
	budget := memory.TrainBudget(maxBytes)
	return budget > 0 && need > budget
}

// HeldTrainFits says Train's memory check passes a scene of rows x cols x
// bands held in memory, with at most classes classes, under opts (taking
// a windowed step at its most training pixels): a caller that can read
// the scene by windows instead (NewStreamedScene) holds it only when it
// fits.
func HeldTrainFits(rows, cols, bands, classes int, opts TrainOptions) bool {
	need, _, _ := trainEstimate(Scene{Rows: rows, Cols: cols, Bands: bands}, classes, opts)
	return !trainOverBudget(need, opts.MaxMemoryBytes)
}

// WindowedTrainBytes is Train's memory estimate for s (held or streamed)
// with at most classes classes under opts, taking a step at its most
// training pixels, when s trains on tiles; 0 when it trains whole or may
// (a held scene of at most wholeMaxTiles tiles: trainPlan decides once the
// training pixels are drawn). A
// windowed run's memory is the scene (or a streamed scene's mask and
// strip) and one tile's step, whatever the step: a caller may hold the
// Go heap to it (with the collector's headroom) so that each step's
// garbage, a dense labelled tile's 75 MB weights and their copies, is
// collected before the heap grows past it.
func WindowedTrainBytes(s Scene, classes int, opts TrainOptions) int64 {
	need, plan, ok := trainEstimate(s, classes, opts)
	if !ok || plan.Whole {
		return 0
	}
	if trainsWholeByDefault(plan, opts) && !s.Streamed() {
		// A held scene of at most wholeMaxTiles tiles trains whole where
		// the whole step fits: held without a hold on the heap, as a
		// scene within one tile is.
		return 0
	}
	return need
}

// trainEstimate is checkTrainMemory's estimate for s under opts with at
// most classes classes and a step at its most training pixels, and the
// grid s trains on (trainGrid's); ok false where the configuration or the
// grid is refused (Train reports it).
func trainEstimate(s Scene, classes int, opts TrainOptions) (need int64, plan tiling.Plan, ok bool) {
	opts = opts.withDefaults()
	d, err := makeDims(opts.Config, s.Bands, max(classes, 2))
	if err != nil {
		return 0, tiling.Plan{}, false
	}
	if plan, err = trainGrid(s.Rows, s.Cols, opts); err != nil {
		return 0, tiling.Plan{}, false
	}
	step := trainWindowMaxRows
	if plan.Whole {
		step = s.Rows * s.Cols
	}
	return trainNeedBytes(d, opts.Config, s, plan, step), plan, true
}

// trainNeedBytes is checkTrainMemory's estimate.
func trainNeedBytes(d dims, cfg Config, s Scene, plan tiling.Plan, rows int) int64 {
	cells := int64(lowRes(plan.TileRows, cfg.Encoder)) * int64(lowRes(plan.TileCols, cfg.Encoder))
	scene := int64(s.Rows) * int64(s.Cols) * int64(4*s.Bands+1)
	if s.Streamed() {
		// Its valid mask, the stretch's histograms (the high bits', and at
		// most four buckets' low bits a band), a strip of the whole-scene
		// passes and a tile's read buffer.
		tile := int64(plan.TileRows) * int64(plan.TileCols) * int64(4*s.Bands+1)
		strip := min(streamStripBytes, int64(s.Rows)*int64(s.Cols)*int64(4*s.Bands+1))
		scene = int64(s.Rows)*int64(s.Cols) + 5*4*keyBuckets*int64(s.Bands) + strip + tile
	}
	return scene + trainBytes(d, cfg, plan.TileRows, plan.TileCols) + 3*4*int64(rows)*cells
}

// newTrainedModel is the model of a finished run, before its band record,
// provenance and statistics.
func newTrainedModel(r *trainRun, opts TrainOptions, params paramSet, protos []float32, loss, acc float64, start time.Time) *Model {
	s, setup := r.s, r.setup
	m := &Model{
		meta: modelMeta{
			Version: version.String, Backend: r.desc.Label(), Config: r.cfg, Bands: s.Bands,
			WavelengthsNM: slices.Clone(s.WavelengthsNM), Classes: setup.classes, StretchLo: setup.lo, StretchHi: setup.hi,
			SceneRows: s.Rows, SceneCols: s.Cols, TrainSplit: setup.split, SplitSeed: opts.SplitSeed, Seed: opts.Seed,
			TrainIndices: setup.trainIdx, TrainTile: setup.tile, FinalLoss: loss, TrainAccuracy: acc,
			TrainSeconds: time.Since(start).Seconds(),
		},
		params: params,
		protos: protos,
	}
	if setup.split == "seed" {
		m.meta.TrainPerClass = opts.TrainPerClass
	}
	return m
}

// setBandRecord records the scene's band metadata from br and checks it.
func (m *modelMeta) setBandRecord(br BandRecord) error {
	m.FWHMNM, m.WavelengthUnits = slices.Clone(br.FWHMNM), br.WavelengthUnits
	m.BadBands, m.BandSelection = slices.Clone(br.BadBands), br.Selection
	if len(br.BandsUsed) > 0 {
		m.SceneBands, m.BandsUsed = br.SceneBands, slices.Clone(br.BandsUsed)
	}
	m.Quantity, m.QuantityScale, m.RadiometricUnits = br.Radiometry.Quantity, br.Radiometry.Scale, br.Radiometry.Units
	return m.validateBandRecord()
}

// epochEvent is the progress event after epoch (from 1) of epochs, elapsed
// since training started: the time left at the rate so far, and the
// epoch's loss and training accuracy.
func epochEvent(epoch, epochs int, loss, acc float64, elapsed time.Duration) progress.Event {
	return progress.Event{Stage: "train", Done: int64(epoch), Total: int64(epochs), Unit: "epochs",
		Elapsed: elapsed, ETA: time.Duration(float64(elapsed) / float64(epoch) * float64(epochs-epoch)),
		Message: fmt.Sprintf("epoch %d/%d", epoch, epochs),
		Metrics: []progress.Metric{{Name: "loss", Value: loss}, {Name: "train_acc", Value: acc}}}
}
