package tiling

import "github.com/paulmach/orb"

// Footprint is r's outline in the coordinates of the affine geotransform gt
// (GDAL's: x = gt[0] + col*gt[1] + row*gt[2], y = gt[3] + col*gt[4] +
// row*gt[5]), traced along pixel edges: a closed ring counter-clockwise in
// a north-up projected CRS, as GeoJSON wants for exterior rings.
func (r Rect) Footprint(gt [6]float64) orb.Polygon {
	at := func(col, row int) orb.Point {
		c, w := float64(col), float64(row)
		return orb.Point{gt[0] + c*gt[1] + w*gt[2], gt[3] + c*gt[4] + w*gt[5]}
	}
	c0, r0, c1, r1 := r.Col, r.Row, r.Col+r.Cols, r.Row+r.Rows
	// Down the left edge, along the bottom, up the right, back along the top:
	// counter-clockwise when y grows northwards and rows grow southwards.
	ring := orb.Ring{at(c0, r0), at(c0, r1), at(c1, r1), at(c1, r0), at(c0, r0)}
	return orb.Polygon{ring}
}
