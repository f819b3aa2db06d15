package processor

import (
	"context"
	"fmt"
	"math"
	"time"

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
	out      chan<- rowsOut
	tileDone func(t tiling.Tile, done int) // after each tile is stitched

	drift *model.DriftMeter // nil: no drift figures (needs spectral)
	// probeLabels, when not nil, receives each pixel's label (a dense
	// class index, -1 where invalid or padding), row-major over the plan's
	// padded input (TileRows x TileCols): the drift probe's first run when
	// its window is the whole scene run whole (reusableProbeLabels), laid
	// out as padToLadder lays out that window.
	probeLabels []int
	// near is where the valid pixel nearest the scene's centre lies, found
	// by the tile reader (the probe's last candidate window).
	near model.NearestValid

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
	if s.drift != nil {
		addCoreCells(s.drift, t.pred, t.tile)
	}
	return nil
}

// addCoreCells adds the tile's cells of the network's grid whose first
// pixel lies in the tile's core to the drift's figures in the network's
// terms: the cores partition the scene and tile origins are multiples of
// the stride, so each scene cell counts once.
func addCoreCells(d *model.DriftMeter, p model.Prediction, t tiling.Tile) {
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
			d.AddCells(p, i*p.CellCols+j0, j1-j0)
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
	rec := prob
	if !s.recovered {
		var err error
		if rec, err = tiling.RecoverRows(prob, valid, inLo, inHi-inLo, cols, k, lo, hi-lo, s.recovery); err != nil {
			return rowsOut{}, fmt.Errorf("recover rows %d..%d: %w", lo, hi, err)
		}
	}
	out := rowsOut{row0: lo, class: make([]uint16, (hi-lo)*cols), rel: make([]float32, (hi-lo)*cols)}
	nb := s.probBands
	if nb > 0 {
		out.prob = make([]uint16, (hi-lo)*cols*nb)
	}
	off := (lo - inLo) * cols
	for i := range out.class {
		if !valid[off+i] {
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
			s.quant.put(out.prob[i*nb:(i+1)*nb], prob[(off+i)*k:(off+i+1)*k])
		}
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
				s.drift.AddPixel(dist[i*k:(i+1)*k], px, unc[i], best)
			}
		} else {
			out.rel[i] = s.kind.Pixel(px, unc[i])
		}
		s.valid++
		s.byClass[best]++
		if s.probeLabels != nil {
			s.probeLabels[(lo+i/cols)*s.plan.TileCols+i%cols] = best
		}
	}
	return out, nil
}
