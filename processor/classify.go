package processor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
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
	skip  bool      // wholly outside the mask: no prediction, every pixel invalid
}

// rowsOut is a run of final product rows.
type rowsOut struct {
	row0  int
	class []uint16
	rel   []float32
	prob  []uint16 // [rows][cols][probability bands], nil without probabilities
}

// classifyIn is the work of Classify and ClassifyMasked (run): open and
// check the scene, plan it within the budget, create the product, run the
// four stages, commit; within mask ("" = everywhere).
func (c *Classifier) classifyIn(parent context.Context, sceneName, mask, out string) (res Result, err error) {
	start := time.Now()
	res = Result{Scene: sceneName, Product: out, ModelChecksum: c.m.Checksum(), Backend: c.pred.Backend(), Mask: mask}
	sc, info, err := c.openScene(sceneName, mask, out, &res)
	if err != nil {
		return res, err
	}
	defer sc.Close()
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
	st, times, skipped, err := c.runStages(parent, sc, mk, sceneName, out, info, &plan, flight.Host, pw, start)
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
	if drift := st.drift; drift != nil {
		rep := drift.Report()
		res.Drift = &rep
		c.log.Info("drift", "scene", sceneName, "verdict", rep.Verdict, "feature_far_share", rep.FeatureFarShare,
			"prototype_margin_ratio", rep.PrototypeMarginRatio, "margin_ratio", rep.MarginRatio, "brightness_ratio", rep.BrightnessRatio)
		if c.opts.DriftCheck != nil {
			if err := c.opts.DriftCheck(rep); err != nil {
				return res, err
			}
		}
		if err := pw.AddMetadata(DriftMetadata(rep)); err != nil {
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

// openScene checks the output path, opens the scene, matches its bands to
// the model's (selecting or resampling them, or refusing the scene),
// applies the quality masks, and checks the output's free space. It
// records the band plan, its warnings and the masks in res.
func (c *Classifier) openScene(sceneName, mask, out string, res *Result) (*geo.Scene, geo.Info, error) {
	if err := CheckProductOutput(out, c.opts.ReliabilityFloat32); err != nil {
		return nil, geo.Info{}, err
	}
	if err := checkNotInput(sceneName, out, c.opts.ReliabilityFloat32, c.maskInputs(mask)...); err != nil {
		return nil, geo.Info{}, fmt.Errorf("%s: %w", sceneName, err)
	}
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
	flight, planned, err := Flight(plan, info, c.m, c.opts, budget, dev)
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
	release = reserveMemory(cost.limit(budget, plan, backendOf(c.pred)), blockCacheBytes(info, plan.TileCols)+cost.probCache)
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
		Probabilities:      probabilitySpec(c.opts),
		CreationOptions:    c.opts.CreationOptions,
		Metadata: map[string]string{
			"MODEL_CHECKSUM":   c.m.Checksum(),
			"SOFTWARE_VERSION": model.Version,
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
	return spec
}

// runStages runs the four stages as one group (the first to fail cancels
// the others' context, and the group returns its error): the reader, the
// network, the stitcher and the writer of the product's rows. It returns
// the stitcher (rows written, class counts), each stage's busy time and the
// tiles skipped as wholly outside the mask mk (nil: none). At most inFlight
// tiles are read and not yet through the network.
func (c *Classifier) runStages(parent context.Context, sc *geo.Scene, mk *geo.Mask, sceneName, out string, info geo.Info, plan *tiling.Plan, inFlight int, pw *geo.ProductWriter, start time.Time) (*stitcher, StageTimes, int, error) {
	var times StageTimes
	var skipped int
	g, ctx := errgroup.WithContext(parent)
	// Unbuffered: one tile is read (and one stitched) while the network
	// runs another, and no more are held (the memory model counts these).
	tiles := make(chan tileIn)
	preds := make(chan tileOut)
	// The network hands each tile's input buffer back for the next read
	// (at most one waits here, so no more buffers live than without it).
	free := make(chan []float32, 1)
	// A slot per tile in flight: the reader takes one before it reads a
	// tile, the network gives it back when it is done with the tile's
	// input (the budget decides how many; see Flight).
	slots := make(chan struct{}, max(inFlight, 1))
	rows := make(chan rowsOut, 2)
	classes := c.m.Classes()
	// The drift figures: band means from the reader (each pixel once, in
	// its tile's core), class distances and final labels from the stitcher.
	var drift *model.DriftMeter
	if c.ref != nil && c.m.HasDriftStats() {
		var err error
		if drift, err = c.m.NewDriftMeter(); err != nil {
			return nil, times, 0, err
		}
	}
	st := &stitcher{plan: plan, classes: classes, recovery: c.m.Recovery(), kind: c.kind, spectral: c.ref != nil,
		out: rows, progress: c.opts.Progress, byClass: make([]int64, len(classes)), drift: drift,
		probStage: c.opts.Probabilities, probBands: probabilityBands(c.opts, len(classes))}
	if st.probBands > 0 {
		values := make([]int, len(classes))
		for i, k := range classes {
			values[i] = k.Value
		}
		st.quant = newQuantizer(values, c.opts.TopK)
	}
	if c.opts.OnProgress != nil {
		var done int64
		all := int64(info.Rows) * int64(info.Cols)
		st.tileDone = func(t tiling.Tile, n int) {
			done += int64(t.Core.Rows) * int64(t.Core.Cols)
			c.opts.OnProgress(Progress{Scene: sceneName, Tile: n, Tiles: len(plan.Tiles), Pixels: done, PixelsAll: all, Elapsed: time.Since(start)})
		}
	}
	g.Go(func() (err error) {
		defer close(tiles)
		times.Read, skipped, err = c.readTiles(ctx, sc, mk, sceneName, info, plan, drift, slots, free, tiles)
		return err
	})
	g.Go(func() (err error) {
		defer close(preds)
		times.Network, err = c.runTiles(ctx, sceneName, plan, tiles, slots, free, preds)
		return err
	})
	g.Go(func() (err error) {
		defer close(rows)
		times.Stitch, err = st.run(ctx, preds)
		return err
	})
	g.Go(func() (err error) {
		times.Write, err = writeRows(ctx, pw, out, info.Cols, rows)
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
func (c *Classifier) readTiles(ctx context.Context, sc *geo.Scene, mk *geo.Mask, name string, info geo.Info, plan *tiling.Plan, drift *model.DriftMeter, slots chan<- struct{}, free <-chan []float32, out chan<- tileIn) (time.Duration, int, error) {
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
		if drift != nil {
			addCoreSpectra(drift, blk, t.Core)
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
// with it.
func (c *Classifier) runTiles(ctx context.Context, name string, plan *tiling.Plan, in <-chan tileIn, slots <-chan struct{}, free chan<- []float32, out chan<- tileOut) (time.Duration, error) {
	var busy time.Duration
	k := len(c.m.Classes())
	// A scene run as one tile is recovered in the compiled graph where the
	// backend prepares its input there (model.Backend.PrepInGraph); tiles
	// are stitched first and recovered on the canvas (stitcher.rows).
	wholeTile := len(plan.Tiles) == 1 && plan.Tiles[0].Input == (tiling.Rect{Rows: plan.Rows, Cols: plan.Cols})
	recoverer, _ := c.pred.(interface {
		PredictRecovered(context.Context, model.Scene) (model.Prediction, error)
	})
	recoverInGraph := wholeTile && recoverer != nil && backendOf(c.pred).PrepInGraph() && c.opts.Probabilities != ProbabilitiesNetwork
	for t := range in {
		if ctx.Err() != nil {
			return busy, nil
		}
		if t.skip {
			select {
			case out <- tileOut{tile: t.tile, skip: true}:
				continue
			case <-ctx.Done():
				return busy, nil
			}
		}
		t0 := time.Now()
		// The spectral class distances depend on the tile's spectra only, so
		// they run beside the network; the stitcher blends them like the
		// probabilities and takes the final label's agreement.
		var dist []float32
		var distErr error
		var distDone sync.WaitGroup
		if c.ref != nil {
			dist = make([]float32, t.scene.Rows*t.scene.Cols*k)
			distDone.Go(func() { distErr = c.ref.ClassDistances(t.scene.Data, t.scene.Valid, dist) })
		}
		var p model.Prediction
		var err error
		if recoverInGraph {
			p, err = recoverer.PredictRecovered(ctx, t.scene)
		} else {
			p, err = c.pred.Predict(ctx, t.scene)
		}
		distDone.Wait()
		busy += time.Since(t0)
		select {
		case free <- t.scene.Data:
		default:
		}
		<-slots
		if err == nil && distErr != nil {
			err = fmt.Errorf("spectral reliability: %w", distErr)
		}
		if err != nil {
			return busy, fmt.Errorf("classify %s tile %d %v: %w", name, t.tile.Index, t.tile.Input, err)
		}
		if p.Rows != t.scene.Rows || p.Cols != t.scene.Cols || p.Classes != k ||
			len(p.Prob) != p.Rows*p.Cols*k || len(p.Uncertainty) != p.Rows*p.Cols {
			return busy, fmt.Errorf("classify %s tile %d: prediction %dx%dx%d for a %dx%d tile of %d classes",
				name, t.tile.Index, p.Rows, p.Cols, p.Classes, t.scene.Rows, t.scene.Cols, k)
		}
		select {
		case out <- tileOut{tile: t.tile, pred: p, valid: t.scene.Valid, dist: dist}:
		case <-ctx.Done():
			return busy, nil
		}
	}
	return busy, nil
}

// addCoreSpectra adds the pixels of b (read for a tile) inside its core to
// the drift's band means: the cores partition the scene, so each pixel
// counts once.
func addCoreSpectra(d *model.DriftMeter, b geo.Block, core tiling.Rect) {
	for r := core.Row; r < core.Row+core.Rows; r++ {
		i := (r-b.Row)*b.Cols + core.Col - b.Col
		var valid []bool
		if b.Valid != nil {
			valid = b.Valid[i : i+core.Cols]
		}
		d.AddSpectra(b.Data[i*b.Bands:(i+core.Cols)*b.Bands], valid)
	}
}
