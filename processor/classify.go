package processor

import (
	"context"
	"fmt"
	"math"
	"strconv"
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
}

// tileOut is the network's output for a tile.
type tileOut struct {
	tile  tiling.Tile
	pred  model.Prediction
	valid []bool    // input validity, TileRows x TileCols (padding replicated)
	dist  []float32 // [TileRows*TileCols][K] class distances of the spectra (spectral kinds only)
}

// rowsOut is a run of final product rows.
type rowsOut struct {
	row0  int
	class []uint16
	rel   []float32
}

func (c *Classifier) classify(parent context.Context, sceneName, out string) (res Result, err error) {
	start := time.Now()
	res = Result{Scene: sceneName, Product: out, ModelChecksum: c.m.Checksum(), Backend: c.pred.Backend()}
	if err := CheckOutput(out); err != nil {
		return res, err
	}
	sc, err := geo.Open(sceneName)
	if err != nil {
		return res, err
	}
	defer sc.Close()
	info := sc.Info()
	res.Rows, res.Cols, res.SceneInfo = info.Rows, info.Cols, info
	if info.Bands != c.m.Bands() {
		return res, fmt.Errorf("%s: %d bands, the model takes %d: %w", sceneName, info.Bands, c.m.Bands(), model.ErrBandCount)
	}
	if err := checkSpace(sceneName, out, info, productSampleBytes(c.m, c.opts)); err != nil {
		return res, err
	}
	plan, budget, err := PlanSceneInfo(info, c.m, c.opts)
	if err != nil {
		return res, fmt.Errorf("%s: plan: %w", sceneName, err)
	}
	res.Tiles, res.Plan, res.MaxMemoryBytes = len(plan.Tiles), plan.String(), budget
	res.TileRows, res.TileCols, res.Overlap = plan.TileRows, plan.TileCols, plan.Overlap
	res.PlannedBytes = PlannedBytes(plan, info, c.m, c.opts)
	// The Go heap and GDAL's block cache are held to the plan's shares of
	// the budget (see MemoryModel).
	release := reserveMemory(newSceneCost(info, c.m, c.opts).limit(budget, plan, c.pred.Backend()), blockCacheBytes(info, plan.TileCols))
	defer release()
	c.log.Info("plan", "scene", sceneName, "plan", plan.String(), "budget_mib", budget>>20, "planned_mib", res.PlannedBytes>>20)

	classes := c.m.Classes()
	ci := make([]geo.ClassInfo, len(classes))
	for i, k := range classes {
		ci[i] = geo.ClassInfo{Value: k.Value, Name: k.Name, Color: k.Color}
	}
	rp := c.m.Recovery()
	geoRef := info.GeoRef
	if !info.HasGeoTransform {
		// No georeference in, none out: Info's pixel-coordinate default is
		// not written as a fake geotransform.
		geoRef.GeoTransform = [6]float64{}
	}
	pw, err := geo.CreateProduct(out, geo.ProductSpec{
		Cols: info.Cols, Rows: info.Rows,
		GeoRef:             geoRef,
		Classes:            ci,
		ReliabilityFloat32: c.opts.ReliabilityFloat32,
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
		},
	})
	if err != nil {
		return res, err
	}
	defer pw.Close()

	// The stages run as a group: the first to fail cancels the others'
	// context, and Wait returns its error.
	g, ctx := errgroup.WithContext(parent)
	// Unbuffered: one tile is read (and one stitched) while the network
	// runs another, and no more are held (the memory model counts these).
	tiles := make(chan tileIn)
	preds := make(chan tileOut)
	// The network hands each tile's input buffer back for the next read
	// (at most one waits here, so no more buffers live than without it).
	free := make(chan []float32, 1)
	rows := make(chan rowsOut, 2)
	var readT, netT, stitchT, writeT time.Duration
	// The drift figures: band means from the reader (each pixel once, in
	// its tile's core), class distances and final labels from the stitcher.
	var drift *model.DriftMeter
	if c.ref != nil && c.m.HasDriftStats() {
		if drift, err = c.m.NewDriftMeter(); err != nil {
			return res, err
		}
	}
	st := &stitcher{plan: &plan, classes: classes, recovery: rp, kind: c.kind, spectral: c.ref != nil,
		out: rows, progress: c.opts.Progress, byClass: make([]int64, len(classes)), drift: drift}
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
		readT, err = c.readTiles(ctx, sc, sceneName, info, &plan, drift, free, tiles)
		return err
	})
	g.Go(func() (err error) {
		defer close(preds)
		netT, err = c.runTiles(ctx, sceneName, &plan, tiles, free, preds)
		return err
	})
	g.Go(func() (err error) {
		defer close(rows)
		stitchT, err = st.run(ctx, preds)
		return err
	})
	g.Go(func() error {
		for r := range rows {
			if ctx.Err() != nil {
				return nil // stopping: the stitcher's sends give up too
			}
			t0 := time.Now()
			if err := pw.WriteRows(r.row0, r.class, r.rel); err != nil {
				return fmt.Errorf("write %s rows %d..%d: %w", out, r.row0, r.row0+len(r.class)/info.Cols, err)
			}
			writeT += time.Since(t0)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return res, err
	}
	if err := parent.Err(); err != nil {
		return res, err
	}
	if st.written != info.Rows {
		return res, fmt.Errorf("classify %s: wrote %d of %d rows", sceneName, st.written, info.Rows)
	}
	if drift != nil {
		rep := drift.Report()
		res.Drift = &rep
		c.log.Info("drift", "scene", sceneName, "verdict", rep.Verdict, "far_share", rep.FarShare,
			"reliability_ratio", rep.ReliabilityRatio, "brightness_ratio", rep.BrightnessRatio)
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
	writeT += time.Since(t0)
	res.Times = StageTimes{Read: readT, Network: netT, Stitch: stitchT, Write: writeT}
	res.ValidPixels, res.ClassCounts = st.valid, st.counts()
	res.Elapsed = time.Since(start)
	c.log.Info("classified", "scene", sceneName, "product", out, "tiles", res.Tiles,
		"read", readT, "network", netT, "stitch", stitchT, "write", writeT, "elapsed", res.Elapsed,
		"pixels_per_s", int64(res.PixelsPerSecond()))
	return res, nil
}

// readTiles reads every tile of plan in order and sends it padded to the
// network's input shape. It returns the time spent reading. A scene without
// a valid pixel, or whose valid pixels are all 0, fails when its last tile
// is read, before that tile goes to the network (see signalCheck). Tiles
// are read into the buffers the network hands back on free when there is
// one.
func (c *Classifier) readTiles(ctx context.Context, sc *geo.Scene, name string, info geo.Info, plan *tiling.Plan, drift *model.DriftMeter, free <-chan []float32, out chan<- tileIn) (time.Duration, error) {
	var busy time.Duration
	var sig signalCheck
	cr := carryReader{sc: sc, bands: info.Bands, sceneCols: info.Cols, blockCols: carryBlockCols(info)}
	for i, t := range plan.Tiles {
		t0 := time.Now()
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
			return busy, fmt.Errorf("%w (tile %d)", err, t.Index)
		}
		sig.add(blk.Data, blk.Valid, blk.Bands)
		if drift != nil {
			addCoreSpectra(drift, blk, t.Core)
		}
		if i == len(plan.Tiles)-1 {
			if err := sig.verdict(name, info); err != nil {
				return busy, err
			}
		}
		s := padTile(blk, t)
		busy += time.Since(t0)
		select {
		case out <- tileIn{tile: t, scene: s}:
		case <-ctx.Done():
			return busy, nil // the group's error, or the caller's stop, says why
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

// carryReader reads the tiles of a row of tiles so that each column of the
// scene's blocks is decoded once per row of tiles rather than once per tile
// that touches it. A compressed block is decoded whole (every band of a
// pixel-interleaved one), and a tile's read window reaches a block column
// into its right neighbour's, so neighbours decoded their shared block
// columns twice: 25 blocks per tile of 800 x 800 px over 256 x 256 blocks
// where 15 are new. Each read goes on to the next block boundary when the
// next tile in the row starts before it, and keeps the columns the next
// tile needs (the carry) for it.
type carryReader struct {
	sc        *geo.Scene
	bands     int
	sceneCols int
	blockCols int // decoding's block width; 0: no carrying
	carry     geo.Block
}

// carryBlockCols is the block width reads align to for carrying: the
// scene's blocks, taken as at least 256 wide as blockCacheBytes does (a VRT
// reports 128 x 128 over sources of larger blocks); 0 (no carrying) for
// strips or blocks wider than 1024, whose carry would cost more memory than
// a decode.
func carryBlockCols(info geo.Info) int {
	bw := max(info.BlockCols, 256)
	if bw > 1024 || bw >= info.Cols {
		return 0
	}
	return bw
}

// carryColumns is the widest carry a tile tileCols wide may keep for a
// scene of info's shape (0 without carrying): up to a block past its
// right edge plus the overlap the next tile reads from it.
func carryColumns(info geo.Info, tileCols int) int {
	bw := carryBlockCols(info)
	if bw == 0 || tileCols >= info.Cols {
		return 0
	}
	return bw + min(tileCols, 2*bw)
}

// read reads t's window into buf's storage when it is large enough; next
// is the tile after t (nil for the last).
func (r *carryReader) read(ctx context.Context, t tiling.Tile, next *tiling.Tile, buf []float32) (geo.Block, error) {
	w := geo.Window{Col: t.Read.Col, Row: t.Read.Row, Cols: t.Read.Cols, Rows: t.Read.Rows}
	nb := r.bands
	end := w.Col + w.Cols
	ext := end // the read goes on to ext for the next tile
	if r.blockCols > 0 && next != nil && next.Read.Row == w.Row && next.Read.Rows == w.Rows &&
		next.Read.Col > w.Col && next.Read.Col < end {
		ext = min((end+r.blockCols-1)/r.blockCols*r.blockCols, r.sceneCols)
	}
	wide := ext - w.Col // row width of the buffer while reading
	if n := wide * w.Rows * nb; cap(buf) >= n {
		buf = buf[:n]
	} else {
		// Room for the widest read of a tile this size, so that the
		// buffer, recycled from tile to tile, is not made again for the
		// next tile that reads a block further (fresh pages cost the
		// kernel's zeroing).
		buf = make([]float32, n, max(n, (w.Cols+r.blockCols)*w.Rows*nb))
	}
	valid := make([]bool, wide*w.Rows)
	from := w.Col // first column not yet in buf
	if c := r.carry; c.Data != nil && c.Row == w.Row && c.Rows == w.Rows && c.Col <= w.Col && c.Col+c.Cols > w.Col {
		k := min(c.Col+c.Cols, ext) - w.Col
		copyColumns(buf, wide, 0, c.Data, c.Cols, w.Col-c.Col, k, w.Rows, nb)
		copyColumns(valid, wide, 0, c.Valid, c.Cols, w.Col-c.Col, k, w.Rows, 1)
		from = w.Col + k
	}
	if from < ext {
		part := geo.Window{Col: from, Row: w.Row, Cols: ext - from, Rows: w.Rows}
		if err := r.sc.ReadWindowAt(ctx, part, buf[(from-w.Col)*nb:], valid[from-w.Col:], wide); err != nil {
			return geo.Block{}, err
		}
	}
	// The next tile's columns [next.Read.Col, ext) stay for it.
	if ext > end {
		c0 := next.Read.Col
		cc := ext - c0
		data, vld := resize(r.carry.Data, cc*w.Rows*nb), resize(r.carry.Valid, cc*w.Rows)
		copyColumns(data, cc, 0, buf, wide, c0-w.Col, cc, w.Rows, nb)
		copyColumns(vld, cc, 0, valid, wide, c0-w.Col, cc, w.Rows, 1)
		r.carry = geo.Block{Window: geo.Window{Col: c0, Row: w.Row, Cols: cc, Rows: w.Rows}, Bands: nb, Data: data, Valid: vld}
	} else {
		r.carry.Window = geo.Window{} // nothing to hand on (keeps the buffers)
	}
	if wide > w.Cols {
		// Close up the rows to the tile's width (moving left: each row's
		// destination starts at or before its source).
		copyColumns(buf, w.Cols, 0, buf, wide, 0, w.Cols, w.Rows, nb)
		copyColumns(valid, w.Cols, 0, valid, wide, 0, w.Cols, w.Rows, 1)
	}
	return geo.Block{Window: w, Bands: nb, Data: buf[:w.Cols*w.Rows*nb], Valid: valid[:w.Cols*w.Rows]}, nil
}

// copyColumns copies cols pixels (per values each) of each of rows rows
// from src, rows srcCols pixels wide from column srcCol, to dst, rows
// dstCols wide from column dstCol. Rows go top to bottom, so dst may be src
// itself when no row's destination lies after its source.
func copyColumns[T any](dst []T, dstCols, dstCol int, src []T, srcCols, srcCol, cols, rows, per int) {
	for r := range rows {
		d, s := (r*dstCols+dstCol)*per, (r*srcCols+srcCol)*per
		copy(dst[d:d+cols*per], src[s:s+cols*per])
	}
}

// resize is buf resliced to n, or a new slice when buf is shorter.
func resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// padTile turns a block read for t.Read into a model scene of t.Input's
// shape. The few rows and columns t.Input overhangs the scene are invalid
// (zero, Valid false): a partial 4x4 cell then averages only the scene's
// pixels, exactly as in a whole-scene run.
func padTile(b geo.Block, t tiling.Tile) model.Scene {
	in := t.Input
	if b.Rows == in.Rows && b.Cols == in.Cols {
		return model.Scene{Rows: b.Rows, Cols: b.Cols, Bands: b.Bands, Data: b.Data, Valid: b.Valid}
	}
	s := model.Scene{Rows: in.Rows, Cols: in.Cols, Bands: b.Bands,
		Data: make([]float32, in.Rows*in.Cols*b.Bands), Valid: make([]bool, in.Rows*in.Cols)}
	for r := 0; r < min(in.Rows, b.Rows); r++ {
		n := min(in.Cols, b.Cols)
		src, dst := r*b.Cols, r*in.Cols
		copy(s.Data[dst*b.Bands:(dst+n)*b.Bands], b.Data[src*b.Bands:(src+n)*b.Bands])
		if b.Valid == nil {
			for c := range n {
				s.Valid[dst+c] = true
			}
		} else {
			copy(s.Valid[dst:dst+n], b.Valid[src:src+n])
		}
	}
	return s
}

// runTiles runs the network on every tile it receives. All tiles share one
// input shape, so the predictor compiles once. It returns the time spent in
// the network. Each tile's input data goes back to the reader on free once
// the network and the spectral distances are done with it.
func (c *Classifier) runTiles(ctx context.Context, name string, plan *tiling.Plan, in <-chan tileIn, free chan<- []float32, out chan<- tileOut) (time.Duration, error) {
	var busy time.Duration
	k := len(c.m.Classes())
	for t := range in {
		if ctx.Err() != nil {
			return busy, nil
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
		p, err := c.pred.Predict(ctx, t.scene)
		distDone.Wait()
		busy += time.Since(t0)
		select {
		case free <- t.scene.Data:
		default:
		}
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

// stitcher blends tile outputs into the canvas and turns final rows into
// product rows.
type stitcher struct {
	plan     *tiling.Plan
	classes  []model.Class
	recovery model.RecoveryParams
	kind     model.ReliabilityKind
	spectral bool // tiles carry class distances (K more canvas channels)
	out      chan<- rowsOut
	progress func(done, total int)
	tileDone func(t tiling.Tile, done int) // after each tile is stitched

	drift *model.DriftMeter // nil: no drift figures (needs spectral)

	canvas  *tiling.Canvas
	buf     []float32 // interleaved tile output, reused
	written int       // product rows sent
	valid   int64
	byClass []int64 // pixels per dense class (a map per pixel cost 0.7% of the run)
}

// Canvas channels per pixel after the K class probabilities; with a
// spectral reliability, K class distances follow them.
const (
	chUncertainty = iota
	chValid
	extraChannels
)

// depth is the number of canvas channels per pixel.
func (s *stitcher) depth() int {
	k := len(s.classes)
	if s.spectral {
		return 2*k + extraChannels
	}
	return k + extraChannels
}

func (s *stitcher) run(ctx context.Context, in <-chan tileOut) (time.Duration, error) {
	var busy time.Duration
	s.canvas = tiling.NewCanvas(s.plan.Cols, s.depth())
	bands := s.plan.RowBands()
	done := 0
	for t := range in {
		if ctx.Err() != nil {
			return busy, nil
		}
		t0 := time.Now()
		if err := s.add(t); err != nil {
			return busy, err
		}
		done++
		band := bands[t.tile.Row]
		if t.tile.Index == band.Tiles[len(band.Tiles)-1].Index {
			// The tile row is complete: rows no later tile touches, and whose
			// recovery window lies in such rows too, are final.
			limit := band.FinalRows - s.recovery.Halo()
			if band.Row == len(bands)-1 {
				limit = s.plan.Rows
			}
			if err := s.finalize(ctx, limit); err != nil {
				if ctx.Err() != nil {
					return busy, nil
				}
				return busy, err
			}
		}
		busy += time.Since(t0)
		if s.progress != nil {
			s.progress(done, len(s.plan.Tiles))
		}
		if s.tileDone != nil {
			s.tileDone(t.tile, done)
		}
	}
	return busy, nil
}

// counts is the pixels per class value of the classified pixels (classes
// with none left out).
func (s *stitcher) counts() map[int]int64 {
	m := make(map[int]int64)
	for i, n := range s.byClass {
		if n > 0 {
			m[s.classes[i].Value] += n
		}
	}
	return m
}

// add blends one tile's probabilities, uncertainty and validity.
func (s *stitcher) add(t tileOut) error {
	k := len(s.classes)
	d := s.depth()
	n := t.pred.Rows * t.pred.Cols
	if s.spectral && len(t.dist) != n*k {
		return fmt.Errorf("stitch tile %d: %d class distances for %d pixels of %d classes", t.tile.Index, len(t.dist), n, k)
	}
	if cap(s.buf) < n*d {
		s.buf = make([]float32, n*d)
	}
	buf := s.buf[:n*d]
	for i := 0; i < n; i++ {
		px := buf[i*d : (i+1)*d]
		copy(px, t.pred.Prob[i*k:(i+1)*k])
		px[k+chUncertainty] = t.pred.Uncertainty[i]
		px[k+chValid] = 0
		if t.valid == nil || t.valid[i] {
			px[k+chValid] = 1
		}
		if s.spectral {
			copy(px[k+extraChannels:], t.dist[i*k:(i+1)*k])
		}
	}
	if err := s.canvas.Add(s.plan, t.tile, buf); err != nil {
		return fmt.Errorf("stitch tile %d: %w", t.tile.Index, err)
	}
	return nil
}

// finalize recovers, classifies and sends rows [s.written, limit) in chunks,
// then drops the canvas rows no later chunk needs.
func (s *stitcher) finalize(ctx context.Context, limit int) error {
	h := s.recovery.Halo()
	for s.written < limit {
		lo := s.written
		hi := min(lo+finalizeChunkRows, limit)
		r, err := s.rows(lo, hi, h)
		if err != nil {
			return err
		}
		select {
		case s.out <- r:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.written = hi
		s.canvas.Drop(hi - h)
	}
	return nil
}

// rows computes product rows [lo, hi) from canvas rows [lo-h, hi+h) clipped to the scene.
func (s *stitcher) rows(lo, hi, h int) (rowsOut, error) {
	k := len(s.classes)
	d := s.depth()
	cols := s.plan.Cols
	inLo, inHi := max(lo-h, 0), min(hi+h, s.plan.Rows)
	prob := make([]float32, (inHi-inLo)*cols*k)
	valid := make([]bool, (inHi-inLo)*cols)
	unc := make([]float32, (hi-lo)*cols)
	var dist []float32 // [hi-lo rows][cols][k]
	if s.spectral {
		dist = make([]float32, (hi-lo)*cols*k)
	}
	for r := inLo; r < inHi; r++ {
		row, err := s.canvas.Row(r)
		if err != nil {
			return rowsOut{}, fmt.Errorf("stitch row %d: %w", r, err)
		}
		for c := 0; c < cols; c++ {
			px := row[c*d : (c+1)*d]
			i := (r-inLo)*cols + c
			// Every tile covering a pixel read the same validity, so the
			// blend is 1 or 0 (NaN where no tile reached it, which the plan rules out).
			valid[i] = px[k+chValid] > 0.5
			if valid[i] {
				copy(prob[i*k:(i+1)*k], px[:k])
			}
			if r >= lo && r < hi {
				j := (r-lo)*cols + c
				unc[j] = px[k+chUncertainty]
				if dist != nil {
					copy(dist[j*k:(j+1)*k], px[k+extraChannels:])
				}
			}
		}
	}
	rec, err := tiling.RecoverRows(prob, valid, inLo, inHi-inLo, cols, k, lo, hi-lo, s.recovery)
	if err != nil {
		return rowsOut{}, fmt.Errorf("recover rows %d..%d: %w", lo, hi, err)
	}
	out := rowsOut{row0: lo, class: make([]uint16, (hi-lo)*cols), rel: make([]float32, (hi-lo)*cols)}
	off := (lo - inLo) * cols
	for i := range out.class {
		if !valid[off+i] {
			out.rel[i] = float32(math.NaN())
			continue
		}
		px := rec[i*k : (i+1)*k]
		best := 0
		for j, v := range px {
			if v > px[best] {
				best = j
			}
		}
		v := s.classes[best].Value
		out.class[i] = uint16(v)
		if dist != nil {
			out.rel[i] = s.kind.PixelSpectral(px, unc[i], model.AgreementOf(dist[i*k:(i+1)*k], best))
			if s.drift != nil {
				s.drift.AddPixel(dist[i*k:(i+1)*k], best)
			}
		} else {
			out.rel[i] = s.kind.Pixel(px, unc[i])
		}
		s.valid++
		s.byClass[best]++
	}
	return out, nil
}
