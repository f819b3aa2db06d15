package processor

import (
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/buffers"
	"github.com/pnec/pnec/tiling"
)

// tileMask reads whether each pixel of t's read window lies inside mk
// into inside (grown as needed) and reports whether any does.
func tileMask(mk *geo.Mask, t tiling.Tile, inside []bool) ([]bool, bool, error) {
	w := geo.Window{Col: t.Read.Col, Row: t.Read.Row, Cols: t.Read.Cols, Rows: t.Read.Rows}
	inside = buffers.Resize(inside, w.Cols*w.Rows)
	any, err := mk.Read(w, inside)
	return inside, any, err
}

// applyMask makes the pixels of blk outside the mask invalid (all bands 0,
// as geo reads nodata), so that the network and the recovery treat them
// as the scene's own nodata: whole-image and tiled runs see the same.
func applyMask(blk geo.Block, inside []bool) {
	for i, in := range inside {
		if in {
			continue
		}
		blk.Valid[i] = false
		clear(blk.Data[i*blk.Bands : (i+1)*blk.Bands])
	}
}

// skippedOutput is what the stitcher adds for a tile wholly outside the
// mask: every pixel invalid (validity 0, probabilities 0), as the network
// would leave a tile of nodata.
func (s *stitcher) skippedOutput(t tiling.Tile) []float32 {
	n := t.Input.Rows * t.Input.Cols * s.depth()
	if cap(s.buf) < n {
		s.buf = make([]float32, n)
	}
	buf := s.buf[:n]
	clear(buf)
	return buf
}
