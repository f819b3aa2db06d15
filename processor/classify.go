package processor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/resources"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/tiling"
	"github.com/pnec/pnec/version"
)

// finalizeChunkRows bounds how many rows one recovery call and one write
// take, so that a whole-image run streams its product too.
const finalizeChunkRows = 128

// tileIn is a tile read and padded to the network's input shape.
type tileIn struct {
	tile  tiling.Tile
	scene model.Scene
	skip  bool // wholly outside the mask: not read, not run
}

// tileOut is the network's output for a tile.
type tileOut struct {
	tile  tiling.Tile
	pred  model.Prediction
	valid []bool    // input validity, TileRows x TileCols (padding replicated)
	dist  []float32 // [TileRows*TileCols][K] class distances of the spectra (spectral kinds only)
	ddist []float32 // [TileRows*TileCols][K] class distances to the decision reference (fused decision only)
	skip  bool      // wholly outside the mask: no prediction, every pixel invalid
}

// rowsOut is a run of final product rows.
type rowsOut struct {
	row0  int
	class []uint16
	rel   []float32
	prob  []uint16 // [rows][cols][probability bands], nil without probabilities
}

// classify is the work of Run: open and check the scene, plan it within
// the budget, create the product, run the four stages, commit; within
// req.Mask ("" = everywhere).
func (c *Classifier) classify(parent context.Context, req Request) (res Result, err error) {
	sceneName, mask, out := req.Scene, req.Mask, req.Out
	start := time.Now()
	res = Result{Scene: sceneName, Product: out, ModelChecksum: c.m.Checksum(), Backend: c.backend, Mask: mask}
	sc, info, err := c.openScene(sceneName, mask, out, &res)
	if err != nil {
		return res, err
	}
	defer sc.Close()
	if req.SceneCheck != nil {
		if err := req.SceneCheck(info); err != nil {
			return res, err
		}
	}
	if c.pred == nil {
		if err := c.openDefaultPredictor(info); err != nil {
			return res, err
		}
	}
	res.Backend = c.pred.Backend()
	res.Rows, res.Cols, res.SceneInfo = info.Rows, info.Cols, info
	plan, flight, release, err := c.planRun(sceneName, info, &res)
	if err != nil {
		return res, err
	}
	defer release()
	var mk *geo.Mask
	if mask != "" {
		if mk, err = geo.OpenMaskWithin(parent, mask, info, res.MaxMemoryBytes); err != nil {
			return res, fmt.Errorf("%s: %w", sceneName, err)
		}
		defer mk.Close()
		res.MaskPixels = mk.Inside()
	}
	pw, err := geo.CreateProduct(out, c.productSpec(sceneName, info, plan, res))
	if err != nil {
		return res, err
	}
	defer pw.Close()
	r := &sceneRun{sc: sc, mk: mk, name: sceneName, out: out, info: info, plan: &plan, flight: flight, pw: pw, start: start, report: req.Progress}
	st, times, skipped, err := c.runStages(parent, r)
	res.TilesSkipped = skipped
	if err != nil {
		return res, err
	}
	if err := parent.Err(); err != nil {
		return res, err
	}
	if st.written != info.Rows {
		return res, fmt.Errorf("classify %s: wrote %d of %d rows", sceneName, st.written, info.Rows)
	}
	if meter := st.drift; meter != nil {
		t0 := time.Now()
		if err := c.probeDrift(parent, sc, mk, info, st, c.recoversWhole(&plan)); err != nil {
			return res, fmt.Errorf("%s: %w", sceneName, err)
		}
		probe := time.Since(t0)
		times.Network += probe // the network on the probe's window, once or twice
		rep := meter.Report()
		res.Drift = &rep
		c.log.Info("drift", "scene", sceneName, "verdict", rep.Verdict, "probe_s", probe.Seconds(), "feature_far_share", rep.FeatureFarShare,
			"prototype_margin_ratio", rep.PrototypeMarginRatio, "margin_ratio", rep.MarginRatio,
			"recalibration_change_share", rep.RecalibrationChangeShare, "brightness_ratio", rep.BrightnessRatio)
		if c.opts.DriftCheck != nil {
			if err := c.opts.DriftCheck(rep); err != nil {
				return res, err
			}
		}
		if err := pw.AddMetadata(drift.Metadata(rep)); err != nil {
			return res, err
		}
	}
	t0 := time.Now()
	if err := pw.Commit(parent); err != nil {
		return res, err // geo names the product
	}
	res.Stats = pw.Stats()
	times.Write += time.Since(t0)
	res.Times = times
	res.ValidPixels, res.ClassCounts = st.valid, st.counts()
	res.Elapsed = time.Since(start)
	c.log.Info("classified", "scene", sceneName, "product", out, "tiles", res.Tiles,
		"read", times.Read, "network", times.Network, "stitch", times.Stitch, "write", times.Write, "elapsed", res.Elapsed,
		"pixels_per_s", int64(res.PixelsPerSecond()))
	return res, nil
}

// openScene opens the scene (Run has checked the output path), matches its
// bands to the model's (selecting or resampling them, or refusing the
// scene), applies the quality masks, and checks the output's free space.
// It records the band plan, its warnings and the masks in res.
func (c *Classifier) openScene(sceneName, mask, out string, res *Result) (*geo.Scene, geo.Info, error) {
	sc, err := geo.Open(sceneName)
	if err != nil {
		return nil, geo.Info{}, err
	}
	info := sc.Info()
	rad := info.Radiometry
	if !rad.Known() {
		rad = c.opts.Radiometry
	}
	bp, err := c.m.BandPlan(info.BandSet(), rad, c.opts.ResampleBands)
	if err != nil {
		sc.Close()
		return nil, info, fmt.Errorf("%s: %w", sceneName, err)
	}
	res.Bands, res.Warnings = DescribeBandPlan(bp, info.Bands), bp.Warnings
	for _, w := range bp.Warnings {
		c.log.Warn(w, "scene", sceneName)
	}
	if !bp.Identity(info.Bands) {
		if err := sc.SetBandPlan(&bp); err != nil {
			sc.Close()
			return nil, info, err
		}
	}
	if res.QualityMasks, err = c.applyQualityMasks(sc); err != nil {
		sc.Close()
		return nil, info, err
	}
	if err := checkSpace(sceneName, out, geo.ProductSpec{Cols: info.Cols, Rows: info.Rows, Classes: productClasses(c.m),
		ReliabilityFloat32: c.opts.ReliabilityFloat32, CreationOptions: c.opts.CreationOptions,
		Probabilities: probabilitySpec(c.opts)}); err != nil {
		sc.Close()
		return nil, info, err
	}
	return sc, info, nil
}

// planRun plans the scene on the model's grid, decides how many tiles
// the budget and the device (when the predictor runs on one) hold in
// flight, records the plan in res, and holds the Go heap and GDAL's block
// cache to the plan's shares of the budget (see MemoryModel) until release
// is called.
func (c *Classifier) planRun(sceneName string, info geo.Info, res *Result) (plan tiling.Plan, flight tiling.Flight, release func(), err error) {
	plan, budget, err := PlanSceneInfo(info, c.m, c.opts)
	if err != nil {
		return plan, flight, nil, fmt.Errorf("%s: plan: %w", sceneName, err)
	}
	dev, err := deviceMemory(c.pred, plan)
	if err != nil {
		return plan, flight, nil, fmt.Errorf("%s: plan: %w", sceneName, err)
	}
	flight, planned, err := PlanFlight(plan, info, c.m, c.opts, budget, dev)
	if err != nil {
		return plan, flight, nil, fmt.Errorf("%s: plan: %w", sceneName, err)
	}
	if d, ok := c.pred.(deviceSizer); ok {
		d.SetDeviceTiles(flight.Device)
	}
	res.Tiles, res.Plan, res.MaxMemoryBytes = len(plan.Tiles), plan.String(), budget
	res.TileRows, res.TileCols, res.Overlap = plan.TileRows, plan.TileCols, plan.Overlap
	res.PlannedBytes, res.Flight = planned, flight
	cost := newSceneCost(info, c.m, c.opts)
	release = resources.Reserve(geo.Knobs{}, cost.run(budget, plan, backendOf(c.pred)))
	c.log.Info("plan", "scene", sceneName, "plan", plan.String(), "budget_mib", budget>>20, "planned_mib", res.PlannedBytes>>20,
		"in_flight", flight.Host, "device_tiles", flight.Device)
	return plan, flight, release, nil
}

// productSpec is the product of the scene: its size and georeference, the
// model's classes, and the run's metadata (with res's band plan and
// quality masks).
func (c *Classifier) productSpec(sceneName string, info geo.Info, plan tiling.Plan, res Result) geo.ProductSpec {
	ci := productClasses(c.m)
	rp := c.m.Recovery()
	geoRef := info.GeoRef
	if !info.HasGeoTransform {
		// No georeference in, none out: Info's pixel-coordinate default is
		// not written as a fake geotransform.
		geoRef.GeoTransform = [6]float64{}
	}
	spec := geo.ProductSpec{
		Cols: info.Cols, Rows: info.Rows,
		GeoRef:             geoRef,
		Classes:            ci,
		ReliabilityFloat32: c.opts.ReliabilityFloat32,
		NoThumbnail:        c.opts.NoThumbnail,
		Probabilities:      probabilitySpec(c.opts),
		CreationOptions:    c.opts.CreationOptions,
		Metadata: map[string]string{
			"MODEL_CHECKSUM":   c.m.Checksum(),
			"SOFTWARE_VERSION": version.String,
			"RELIABILITY":      string(c.kind),
			"SCENE":            sceneName,
			"BACKEND":          c.pred.Backend(),
			"PLAN":             plan.String(),
			"RECOVERY_WINDOW":  strconv.Itoa(rp.Window),
			"RECOVERY_ETA":     strconv.FormatFloat(rp.Eta, 'g', -1, 64),
			"BANDS":            res.Bands,
		},
	}
	if res.QualityMasks != "" {
		spec.Metadata["QUALITY_MASKS"] = res.QualityMasks
	}
	if c.dref != nil {
		// Only a fused decision is said: products of the network's
		// decision keep the metadata they had.
		spec.Metadata["DECISION"] = model.DecisionFused
		spec.Metadata["DECISION_TEMPERATURE_RAD"] = strconv.FormatFloat(c.m.Decision().TemperatureRad, 'g', 6, 64)
		spec.Metadata["DECISION_COPY_PENALTY_RAD"] = strconv.FormatFloat(c.m.Decision().CopyPenaltyRad, 'g', 6, 64)
		spec.Metadata["DECISION_SPECTRAL_WEIGHT"] = strconv.FormatFloat(c.m.Decision().Weight(), 'g', 6, 64)
		spec.Metadata["DECISION_LOCAL_MEAN"] = strconv.Itoa(max(1, c.m.Decision().LocalMean))
	}
	return spec
}

// sceneRun is one Run's scene as its stages share it: what was opened,
// planned and created before they start.
type sceneRun struct {
	sc     *geo.Scene
	mk     *geo.Mask // the area of interest; nil: none
	name   string    // the scene's name
	out    string    // the product's path
	info   geo.Info
	plan   *tiling.Plan
	flight tiling.Flight
	pw     *geo.ProductWriter
	start  time.Time
	report progress.Func // each tile stitched; nil: none
}

// runStages runs the four stages as one group (the first to fail cancels
// the others' context, and the group returns its error): the reader, the
// network, the stitcher and the writer of the product's rows. It returns
// the stitcher (rows written, class counts), each stage's busy time and the
// tiles skipped as wholly outside r's mask, and reports each tile
// stitched to r.report. At most
// flight.Host tiles are read and not yet through the network, and at most
// flight.Device of them are in the network's calls at once.
func (c *Classifier) runStages(parent context.Context, r *sceneRun) (*stitcher, StageTimes, int, error) {
	info, plan, flight := r.info, r.plan, r.flight
	var times StageTimes
	var skipped int
	g, ctx := errgroup.WithContext(parent)
	// Unbuffered: one tile is read while the network runs another, and no
	// more are held (the memory model counts these).
	tiles := make(chan tileIn)
	// Up to StitchAhead finished tiles wait for the stitcher: when a tile
	// row is complete it finalises the row's product rows (recovery,
	// classes, reliability; one goroutine), and the network, blocked on an
	// unbuffered hand-over, stood still meanwhile: on a 10,000 px wide
	// scene of 384 px tiles that left one of the two cores idle about 2 s
	// a tile row. The memory model counts the waiting outputs.
	preds := make(chan tileOut, StitchAhead)
	// The network hands each tile's input buffer back for the next read
	// (at most one waits here, so no more buffers live than without it).
	free := make(chan []float32, 1)
	// A slot per tile in flight: the reader takes one before it reads a
	// tile, the network gives it back when it is done with the tile's
	// input (the budget decides how many; see Flight).
	slots := make(chan struct{}, max(flight.Host, 1))
	rows := make(chan rowsOut, 2)
	classes := c.m.Classes()
	// The drift figures: band means from the reader (each pixel once, in
	// its tile's core), class distances and final labels from the stitcher.
	var meter *drift.Meter
	if c.ref != nil && c.m.HasDriftStats() {
		var err error
		if meter, err = drift.NewMeter(c.m.DriftStats(), drift.DefaultThresholds); err != nil {
			return nil, times, 0, err
		}
	}
	st := &stitcher{plan: plan, classes: classes, recovery: c.m.Recovery(), kind: c.kind, spectral: c.ref != nil,
		decision: c.m.Decision(), fused: c.dref != nil, netRecovery: c.m.NetworkRecovery(),
		out: rows, byClass: make([]int64, len(classes)), drift: meter, near: drift.NewNearestValid(info.Rows, info.Cols),
		probStage: c.opts.Probabilities, probBands: probabilityBands(c.opts, len(classes))}
	if meter != nil && reusableProbeLabels(plan, info, c.m) {
		st.probeLabels = make([]int, plan.TileRows*plan.TileCols)
		for i := range st.probeLabels {
			st.probeLabels[i] = -1
		}
	}
	if st.probBands > 0 {
		values := make([]int, len(classes))
		for i, k := range classes {
			values[i] = k.Value
		}
		st.quant = newQuantizer(values, c.opts.TopK)
	}
	if r.report != nil {
		var done int64
		all := int64(info.Rows) * int64(info.Cols)
		st.tileDone = func(t tiling.Tile, n int) {
			done += int64(t.Core.Rows) * int64(t.Core.Cols)
			r.report(tileProgress{Tile: n, Tiles: len(plan.Tiles), Pixels: done, PixelsAll: all, Elapsed: time.Since(r.start)}.event(r.name))
		}
	}
	g.Go(func() (err error) {
		defer close(tiles)
		times.Read, skipped, err = c.readTiles(ctx, r, meter, &st.near, slots, free, tiles)
		return err
	})
	g.Go(func() (err error) {
		defer close(preds)
		times.Network, err = c.runTiles(ctx, r.name, plan, min(flight.Device, flight.Host), tiles, slots, free, preds)
		return err
	})
	g.Go(func() (err error) {
		defer close(rows)
		times.Stitch, err = st.run(ctx, preds)
		return err
	})
	g.Go(func() (err error) {
		times.Write, err = writeRows(ctx, r.pw, r.out, info.Cols, rows)
		return err
	})
	err := g.Wait()
	return st, times, skipped, err
}

// writeRows writes the product rows it receives to pw (the product out,
// and its probabilities file when the rows carry them) until rows closes,
// or until ctx is done (stopping: the stitcher's sends give up too). It
// returns the time spent writing.
func writeRows(ctx context.Context, pw *geo.ProductWriter, out string, cols int, rows <-chan rowsOut) (time.Duration, error) {
	var busy time.Duration
	for r := range rows {
		if ctx.Err() != nil {
			return busy, nil
		}
		t0 := time.Now()
		if err := pw.WriteRows(r.row0, r.class, r.rel); err != nil {
			return busy, fmt.Errorf("write %s rows %d..%d: %w", out, r.row0, r.row0+len(r.class)/cols, err)
		}
		if r.prob != nil {
			if err := pw.WriteProbabilities(r.row0, r.prob); err != nil {
				return busy, err // geo names the file and the rows
			}
		}
		busy += time.Since(t0)
	}
	return busy, nil
}

// applyQualityMasks applies the product's quality masks and the quality
// mask rasters of the options to sc, and names what it applied.
func (c *Classifier) applyQualityMasks(sc *geo.Scene) (string, error) {
	var names []string
	if c.opts.ProductQualityMasks {
		if err := sc.UseProductQualityMasks(); err != nil {
			return "", err
		}
		names = append(names, sc.ProductQualityMasks()...)
	}
	for _, m := range c.opts.QualityMasks {
		if err := sc.AddQualityMask(m.Path, m.Bands); err != nil {
			return "", fmt.Errorf("%s: %w", sc.Name(), err)
		}
		names = append(names, m.Path)
	}
	return strings.Join(names, ", "), nil
}

// readTiles reads every tile of plan in order and sends it padded to the
// network's input shape. It returns the time spent reading. A scene without
// a valid pixel, or whose valid pixels are all 0, fails when its last tile
// is read, before that tile goes to the network (see signalCheck). Tiles
// are read into the buffers the network hands back on free when there is
// one, each once a slot is free.
func (c *Classifier) readTiles(ctx context.Context, r *sceneRun, meter *drift.Meter, near *drift.NearestValid, slots chan<- struct{}, free <-chan []float32, out chan<- tileIn) (time.Duration, int, error) {
	sc, mk, name, info, plan := r.sc, r.mk, r.name, r.info, r.plan
	var busy time.Duration
	var sig signalCheck
	var inside []bool
	skipped := 0
	cr := carryReader{sc: sc, bands: sc.Bands(), sceneCols: info.Cols, blockCols: carryBlockCols(info)}
	for i, t := range plan.Tiles {
		t0 := time.Now()
		if mk != nil {
			var any bool
			var err error
			if inside, any, err = tileMask(mk, t, inside); err != nil {
				return busy, skipped, fmt.Errorf("%w (tile %d)", err, t.Index)
			}
			if !any {
				skipped++
				if i == len(plan.Tiles)-1 {
					if err := sig.verdict(name, info); err != nil {
						return busy, skipped, err
					}
				}
				busy += time.Since(t0)
				select {
				case out <- tileIn{tile: t, skip: true}:
				case <-ctx.Done():
					return busy, skipped, nil
				}
				continue
			}
		}
		busy += time.Since(t0) // waiting for a slot is not reading
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return busy, skipped, nil
		}
		t0 = time.Now()
		var buf []float32
		select {
		case buf = <-free:
		default:
		}
		var next *tiling.Tile
		if i+1 < len(plan.Tiles) {
			next = &plan.Tiles[i+1]
		}
		blk, err := cr.read(ctx, t, next, buf)
		if err != nil {
			// geo's error names the scene and the window already.
			return busy, skipped, fmt.Errorf("%w (tile %d)", err, t.Index)
		}
		if mk != nil {
			applyMask(blk, inside)
		}
		sig.add(blk.Data, blk.Valid, blk.Bands)
		if meter != nil {
			addCoreSpectra(meter, near, blk, t.Core)
		}
		if i == len(plan.Tiles)-1 {
			if err := sig.verdict(name, info); err != nil {
				return busy, skipped, err
			}
		}
		s := padTile(blk, t)
		busy += time.Since(t0)
		select {
		case out <- tileIn{tile: t, scene: s}:
		case <-ctx.Done():
			return busy, skipped, nil // the group's error, or the caller's stop, says why
		}
	}
	return busy, skipped, nil
}

// runTiles runs the network on every tile it receives. All tiles share one
// input shape, so the predictor compiles once. It returns the time spent in
// the network. Each tile's input data goes back to the reader on free once
// the network and the spectral distances are done with it, and its slot
// with it. With deviceTiles 2 (tiling.Flight.Device: the device holds two
// tiles' buffers) the next tile's call starts while the current one runs,
// so that its scene is uploaded meanwhile (model.Predictor.SetDeviceTiles);
// the outputs go on in order.
func (c *Classifier) runTiles(ctx context.Context, name string, plan *tiling.Plan, deviceTiles int, in <-chan tileIn, slots <-chan struct{}, free chan<- []float32, out chan<- tileOut) (time.Duration, error) {
	var busy time.Duration
	var lastDone time.Time
	recovered := c.recoversWhole(plan)
	var pending []*tileCall
	// A stop or a failure leaves no call running behind the stage: the
	// classifier (and its predictor) may be closed next.
	defer func() {
		for _, tc := range pending {
			<-tc.done
		}
	}()
	// finish waits for the oldest call and sends its output.
	finish := func() error {
		tc := pending[0]
		pending = pending[1:]
		<-tc.done
		// The network's time: calls in flight together count once.
		busy += tc.end.Sub(later(tc.start, lastDone))
		lastDone = tc.end
		select {
		case free <- tc.in.scene.Data:
		default:
		}
		<-slots
		if tc.err != nil {
			return fmt.Errorf("classify %s tile %d %v: %w", name, tc.in.tile.Index, tc.in.tile.Input, tc.err)
		}
		select {
		case out <- tileOut{tile: tc.in.tile, pred: tc.pred, valid: tc.in.scene.Valid, dist: tc.dist, ddist: tc.ddist}:
		case <-ctx.Done():
		}
		return nil
	}
	for t := range in {
		if ctx.Err() != nil {
			return busy, nil
		}
		if t.skip {
			for len(pending) > 0 {
				if err := finish(); err != nil {
					return busy, err
				}
			}
			select {
			case out <- tileOut{tile: t.tile, skip: true}:
				continue
			case <-ctx.Done():
				return busy, nil
			}
		}
		pending = append(pending, c.startTile(ctx, t, recovered))
		if len(pending) >= max(deviceTiles, 1) {
			if err := finish(); err != nil {
				return busy, err
			}
		}
	}
	for len(pending) > 0 {
		if ctx.Err() != nil {
			return busy, nil
		}
		if err := finish(); err != nil {
			return busy, err
		}
	}
	return busy, nil
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// recoversWhole reports whether a scene planned as plan is recovered in
// the compiled graph: run as one tile (the whole image, padded to the
// ladder or not: the padding is no-data, which the recovery leaves out of
// every window exactly as the scene's border clips the canvas's) by a
// predictor that prepares its input in the graph (model.Predictor on XLA,
// model.Prep), unless the product writes the network's probabilities
// (P_up, before recovery). Tiles are stitched first and recovered on the
// canvas (stitcher.rows).
func (c *Classifier) recoversWhole(plan *tiling.Plan) bool {
	// A fused decision weighs the spectral evidence in before the
	// recovery, which the graph does not hold.
	if c.dref != nil || len(plan.Tiles) != 1 || !recoveredWhole(*plan, c.opts) {
		return false
	}
	if _, ok := c.pred.(wholeRecoverer); !ok {
		return false
	}
	if g, ok := c.pred.(interface{ PrepInGraph() bool }); ok {
		return g.PrepInGraph()
	}
	return backendOf(c.pred).PrepInGraph()
}

// wholeRecoverer is a predictor that recovers a whole scene itself
// (model.Predictor.PredictRecovered).
type wholeRecoverer interface {
	PredictRecovered(context.Context, model.Scene) (model.Prediction, error)
}

// tileCall is one tile's network call and spectral distances, run by
// startTile; done is closed when both are over.
type tileCall struct {
	in         tileIn
	pred       model.Prediction
	dist       []float32
	ddist      []float32 // the decision reference's distances (fused decision)
	err        error
	start, end time.Time
	done       chan struct{}
}

// startTile starts the network on t (recovered: the whole scene,
// recovered by the predictor) and, beside it, the spectral class
// distances, which depend on the tile's spectra only (the stitcher blends
// them like the probabilities and takes the final label's agreement).
func (c *Classifier) startTile(ctx context.Context, t tileIn, recovered bool) *tileCall {
	tc := &tileCall{in: t, start: time.Now(), done: make(chan struct{})}
	k := len(c.m.Classes())
	go func() {
		defer close(tc.done)
		var distErr error
		var distDone sync.WaitGroup
		if c.ref != nil {
			tc.dist = make([]float32, t.scene.Rows*t.scene.Cols*k)
			distDone.Go(func() { distErr = c.ref.ClassDistances(t.scene.Data, t.scene.Valid, tc.dist) })
		}
		var ddistErr error
		if c.dref != nil {
			tc.ddist = make([]float32, t.scene.Rows*t.scene.Cols*k)
			distDone.Go(func() { ddistErr = c.dref.ClassDistances(t.scene.Data, t.scene.Valid, tc.ddist) })
		}
		if recovered {
			tc.pred, tc.err = c.pred.(wholeRecoverer).PredictRecovered(ctx, t.scene)
		} else {
			tc.pred, tc.err = c.pred.Predict(ctx, t.scene)
		}
		distDone.Wait()
		tc.end = time.Now()
		p := tc.pred
		switch {
		case tc.err != nil:
		case distErr != nil:
			tc.err = fmt.Errorf("spectral reliability: %w", distErr)
		case ddistErr != nil:
			tc.err = fmt.Errorf("fused decision: %w", ddistErr)
		case p.Rows != t.scene.Rows || p.Cols != t.scene.Cols || p.Classes != k ||
			len(p.Prob) != p.Rows*p.Cols*k || len(p.Uncertainty) != p.Rows*p.Cols:
			tc.err = fmt.Errorf("prediction %dx%dx%d for a %dx%d tile of %d classes", p.Rows, p.Cols, p.Classes, t.scene.Rows, t.scene.Cols, k)
		}
	}()
	return tc
}

// addCoreSpectra adds the pixels of b (read for a tile) inside its core to
// the drift's band means and to near's search: the cores partition the
// scene, so each pixel counts once.
func addCoreSpectra(d *drift.Meter, near *drift.NearestValid, b geo.Block, core tiling.Rect) {
	for r := core.Row; r < core.Row+core.Rows; r++ {
		i := (r-b.Row)*b.Cols + core.Col - b.Col
		var valid []bool
		if b.Valid != nil {
			valid = b.Valid[i : i+core.Cols]
		}
		d.AddSpectra(b.Data[i*b.Bands:(i+core.Cols)*b.Bands], valid)
		near.AddRow(r, core.Col, core.Cols, valid)
	}
}
