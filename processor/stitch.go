package processor

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
)

// stitcher blends tile outputs into the canvas and turns final rows into
// product rows.
type stitcher struct {
	plan     *tiling.Plan
	classes  []model.Class
	recovery model.RecoveryParams
	kind     model.ReliabilityKind
	spectral bool // tiles carry class distances (K more canvas channels)
	// fused: tiles carry the decision reference's distances (K more
	// canvas channels, after the spectral ones), and decision weighs them
	// into the probabilities before the recovery.
	fused       bool
	decision    model.Decision
	netRecovery model.RecoveryParams // the network's own recovery, for the drift figures (fused only)
	out         chan<- rowsOut
	tileDone    func(t tiling.Tile, done int) // after each tile is stitched

	drift *drift.Meter // nil: no drift figures (needs spectral)
	// probeLabels, when not nil, receives each pixel's label (a dense
	// class index, -1 where invalid or padding), row-major over the plan's
	// padded input (TileRows x TileCols): the drift probe's first run when
	// its window is the whole scene run whole (reusableProbeLabels), laid
	// out as padToLadder lays out that window.
	probeLabels []int
	// near is where the valid pixel nearest the scene's centre lies, found
	// by the tile reader (the probe's last candidate window).
	near drift.NearestValid

	probStage ProbabilityStage // the probabilities sent with the rows (ProbabilitiesOff: none)
	probBands int              // values per pixel of rowsOut.prob
	quant     *quantizer

	// recovered: the tiles came recovered (a scene run whole, recovered in
	// the graph: model.Prediction.Recovered), so the canvas is not.
	recovered bool

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
	if s.fused {
		return s.fusedOffset() + len(s.classes)
	}
	return s.fusedOffset()
}

// fusedOffset is the first canvas channel of the decision distances (the
// depth without them).
func (s *stitcher) fusedOffset() int {
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
			limit := band.FinalRows - s.halo()
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

// halo is the rows a product row's recovery reads beyond it (none when
// the tiles came recovered).
func (s *stitcher) halo() int {
	if s.recovered {
		return 0
	}
	if s.fused && s.drift != nil {
		return max(s.recovery.Halo(), s.netRecovery.Halo())
	}
	return s.recovery.Halo()
}

// add blends one tile's probabilities, uncertainty and validity.
func (s *stitcher) add(t tileOut) error {
	if t.pred.Recovered {
		s.recovered = true
	}
	if t.skip {
		if err := s.canvas.Add(s.plan, t.tile, s.skippedOutput(t.tile)); err != nil {
			return fmt.Errorf("stitch tile %d: %w", t.tile.Index, err)
		}
		return nil
	}
	k := len(s.classes)
	d := s.depth()
	n := t.pred.Rows * t.pred.Cols
	if s.spectral && len(t.dist) != n*k {
		return fmt.Errorf("stitch tile %d: %d class distances for %d pixels of %d classes", t.tile.Index, len(t.dist), n, k)
	}
	if s.fused && len(t.ddist) != n*k {
		return fmt.Errorf("stitch tile %d: %d decision distances for %d pixels of %d classes", t.tile.Index, len(t.ddist), n, k)
	}
	fo := s.fusedOffset()
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
		if s.fused {
			copy(px[fo:fo+k], t.ddist[i*k:(i+1)*k])
		}
	}
	if err := s.canvas.Add(s.plan, t.tile, buf); err != nil {
		return fmt.Errorf("stitch tile %d: %w", t.tile.Index, err)
	}
	if s.drift != nil {
		addCoreCells(s.drift, t.pred, t.tile)
	}
	return nil
}

// addCoreCells adds the tile's cells of the network's grid whose first
// pixel lies in the tile's core to the drift's figures in the network's
// terms: the cores partition the scene and tile origins are multiples of
// the stride, so each scene cell counts once.
func addCoreCells(d *drift.Meter, p model.Prediction, t tiling.Tile) {
	k := p.Classes
	if len(p.PrototypeCos) != p.CellRows*p.CellCols*k {
		return
	}
	core := t.Core
	for i := range p.CellRows {
		r := t.Input.Row + model.Stride*i
		if r < core.Row || r >= core.Row+core.Rows {
			continue
		}
		// Cells of this row whose first column lies in the core.
		j0 := max(0, (core.Col-t.Input.Col+model.Stride-1)/model.Stride)
		j1 := min(p.CellCols, (core.Col+core.Cols-t.Input.Col+model.Stride-1)/model.Stride)
		if j1 > j0 {
			d.AddCells(p.PrototypeCos[(i*p.CellCols+j0)*k : (i*p.CellCols+j1)*k])
		}
	}
}

// finalize recovers, classifies and sends rows [s.written, limit) in chunks,
// then drops the canvas rows no later chunk needs.
func (s *stitcher) finalize(ctx context.Context, limit int) error {
	h := s.halo()
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

// canvasRows are canvas rows [inLo, inHi) taken out for the product rows
// [lo, hi) among them.
type canvasRows struct {
	inLo, inHi int
	prob       []float32 // [inHi-inLo rows][cols][k] the network's blended probabilities (0 where invalid)
	valid      []bool    // [inHi-inLo rows][cols]
	unc        []float32 // [hi-lo rows][cols]
	dist       []float32 // [hi-lo rows][cols][k] spectral class distances (spectral only)
	ddist      []float32 // [inHi-inLo rows][cols][k] decision distances, NaN first where invalid (fused only)
}

// gather takes canvas rows [lo-h, hi+h) clipped to the scene.
func (s *stitcher) gather(lo, hi, h int) (canvasRows, error) {
	k := len(s.classes)
	d := s.depth()
	cols := s.plan.Cols
	cr := canvasRows{inLo: max(lo-h, 0), inHi: min(hi+h, s.plan.Rows)}
	n := (cr.inHi - cr.inLo) * cols
	cr.prob, cr.valid, cr.unc = make([]float32, n*k), make([]bool, n), make([]float32, (hi-lo)*cols)
	if s.spectral {
		cr.dist = make([]float32, (hi-lo)*cols*k)
	}
	if s.fused {
		cr.ddist = make([]float32, n*k)
	}
	fo := s.fusedOffset()
	for r := cr.inLo; r < cr.inHi; r++ {
		row, err := s.canvas.Row(r)
		if err != nil {
			return canvasRows{}, fmt.Errorf("stitch row %d: %w", r, err)
		}
		for c := 0; c < cols; c++ {
			px := row[c*d : (c+1)*d]
			i := (r-cr.inLo)*cols + c
			// Every tile covering a pixel read the same validity, so the
			// blend is 1 or 0 (NaN where no tile reached it, which the plan rules out).
			cr.valid[i] = px[k+chValid] > 0.5
			switch {
			case cr.valid[i]:
				copy(cr.prob[i*k:(i+1)*k], px[:k])
				if cr.ddist != nil {
					copy(cr.ddist[i*k:(i+1)*k], px[fo:fo+k])
				}
			case cr.ddist != nil:
				cr.ddist[i*k] = float32(math.NaN())
			}
			if r >= lo && r < hi {
				j := (r-lo)*cols + c
				cr.unc[j] = px[k+chUncertainty]
				if cr.dist != nil {
					copy(cr.dist[j*k:(j+1)*k], px[k+extraChannels:])
				}
			}
		}
	}
	return cr, nil
}

// decided is the recovered probabilities of product rows [lo, hi) that
// the class band is the argmax of (fused first under a fused decision)
// and, under a fused decision with drift figures, the network's own
// recovered ones, which the drift figures judge (nil otherwise: the same).
func (s *stitcher) decided(cr canvasRows, lo, hi int) (rec, netRec []float32, err error) {
	k, cols := len(s.classes), s.plan.Cols
	recover := func(prob []float32, p model.RecoveryParams) ([]float32, error) {
		if s.recovered {
			return prob, nil
		}
		out, err := tiling.RecoverRows(prob, cr.valid, cr.inLo, cr.inHi-cr.inLo, cols, k, lo, hi-lo, p)
		if err != nil {
			return nil, fmt.Errorf("recover rows %d..%d: %w", lo, hi, err)
		}
		return out, nil
	}
	prob := cr.prob
	if cr.ddist != nil {
		prob = slices.Clone(cr.prob)
		if err := s.decision.Fuse(prob, cr.ddist, k); err != nil {
			return nil, nil, fmt.Errorf("stitch rows %d..%d: %w", lo, hi, err)
		}
		if s.drift != nil {
			if netRec, err = recover(cr.prob, s.netRecovery); err != nil {
				return nil, nil, err
			}
		}
	}
	rec, err = recover(prob, s.recovery)
	return rec, netRec, err
}

// argmax is the first largest value's index of px.
func argmax(px []float32) int {
	best := 0
	for j, v := range px {
		if v > px[best] {
			best = j
		}
	}
	return best
}

// rows computes product rows [lo, hi) from canvas rows [lo-h, hi+h) clipped to the scene.
func (s *stitcher) rows(lo, hi, h int) (rowsOut, error) {
	k := len(s.classes)
	cols := s.plan.Cols
	cr, err := s.gather(lo, hi, h)
	if err != nil {
		return rowsOut{}, err
	}
	rec, netRec, err := s.decided(cr, lo, hi)
	if err != nil {
		return rowsOut{}, err
	}
	out := rowsOut{row0: lo, class: make([]uint16, (hi-lo)*cols), rel: make([]float32, (hi-lo)*cols)}
	nb := s.probBands
	if nb > 0 {
		out.prob = make([]uint16, (hi-lo)*cols*nb)
	}
	off := (lo - cr.inLo) * cols
	for i := range out.class {
		if !cr.valid[off+i] {
			out.rel[i] = float32(math.NaN())
			if nb > 0 {
				noData(out.prob[i*nb : (i+1)*nb])
			}
			continue
		}
		px := rec[i*k : (i+1)*k]
		switch s.probStage {
		case ProbabilitiesRecovered:
			s.quant.put(out.prob[i*nb:(i+1)*nb], px)
		case ProbabilitiesNetwork:
			s.quant.put(out.prob[i*nb:(i+1)*nb], cr.prob[(off+i)*k:(off+i+1)*k])
		}
		best := argmax(px)
		out.class[i] = uint16(s.classes[best].Value)
		if cr.dist != nil {
			dist := cr.dist[i*k : (i+1)*k]
			out.rel[i] = s.kind.PixelSpectral(px, cr.unc[i], model.AgreementOf(dist, best))
			if s.drift != nil {
				npx, nbest := px, best
				if netRec != nil {
					npx = netRec[i*k : (i+1)*k]
					nbest = argmax(npx)
				}
				s.drift.AddPixel(model.DriftPixel(dist, npx, cr.unc[i], nbest))
			}
		} else {
			out.rel[i] = s.kind.Pixel(px, cr.unc[i])
		}
		s.valid++
		s.byClass[best]++
		if s.probeLabels != nil {
			s.probeLabels[(lo+i/cols)*s.plan.TileCols+i%cols] = best
		}
	}
	return out, nil
}
