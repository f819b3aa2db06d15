package tiling

// Weights returns tile t's blending weights along its input's rows and
// columns (len TileRows and TileCols, index 0 at t.Input's origin). The
// weight of input pixel (r, c) is rows[r] * cols[c].
//
// Along an axis the weight is 1 except towards an edge that lies inside the
// scene (a neighbour's territory): over the first Margin pixels from that
// edge it is 0, then it rises linearly to 1 at Overlap-Margin pixels. Two
// neighbours' ramps mirror each other across their overlap, so where both
// ramp their weights sum to 1; the Canvas renormalises anyway, which also
// covers the wider overlap of a shifted last tile. Edges on the scene's
// border keep weight 1: nothing else covers those pixels.
//
// When the overlap is too narrow for a ramp (Overlap-2*Margin < 1), weights
// are 1 on the tile's Core and 0 elsewhere: a plain crop.
func (p *Plan) Weights(t Tile) (rows, cols []float32) {
	rows = p.axisWeights(t.Input.Row, p.TileRows, p.Rows, t.Core.Row, t.Core.Rows)
	cols = p.axisWeights(t.Input.Col, p.TileCols, p.Cols, t.Core.Col, t.Core.Cols)
	return rows, cols
}

func (p *Plan) axisWeights(origin, n, size, coreFrom, coreLen int) []float32 {
	w := make([]float32, n)
	ramp := p.Overlap - 2*p.Margin
	leftInner := origin > 0
	rightInner := origin+n < size
	for i := range w {
		pos := origin + i
		if ramp < 1 {
			if pos >= coreFrom && pos < coreFrom+coreLen {
				w[i] = 1
			}
			continue
		}
		if !leftInner && !rightInner {
			w[i] = 1
			continue
		}
		d := n // distance to the nearest interior edge
		if leftInner {
			d = min(d, i)
		}
		if rightInner {
			d = min(d, n-1-i)
		}
		w[i] = rampWeight(d, p.Margin, ramp)
	}
	return w
}

// rampWeight is 0 for the first margin pixels from an edge (distance d, 0 at
// the edge pixel), then rises linearly over ramp pixels to 1.
func rampWeight(d, margin, ramp int) float32 {
	x := (float64(d-margin) + 0.5) / float64(ramp)
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	return float32(x)
}
