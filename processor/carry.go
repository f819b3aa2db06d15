package processor

import (
	"context"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/buffers"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
)

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
// scene's blocks, taken as at least 256 wide as BlockCacheBytes does (a VRT
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
		data, vld := buffers.Resize(r.carry.Data, cc*w.Rows*nb), buffers.Resize(r.carry.Valid, cc*w.Rows)
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
