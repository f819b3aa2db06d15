// Package grid holds Rect, the rectangle of pixels that every other package
// shares: the windows geo reads and writes, the tiles and cores of a tiling
// plan, and the regions the recovery works on. It imports nothing of the
// project, so that geo (GDAL), tiling (pure planning) and model (GoMLX)
// can all use it without depending on one another.
package grid

import (
	"fmt"

	"github.com/paulmach/orb"
)

// Rect is a rectangle of pixels: Col, Row is its top-left corner (0-based),
// Cols x Rows its size.
type Rect struct{ Col, Row, Cols, Rows int }

// Empty reports whether r holds no pixel.
func (r Rect) Empty() bool { return r.Cols <= 0 || r.Rows <= 0 }

// Contains reports whether pixel (col, row) lies in r.
func (r Rect) Contains(col, row int) bool {
	return col >= r.Col && col < r.Col+r.Cols && row >= r.Row && row < r.Row+r.Rows
}

// Intersect returns the part of r inside s (empty when they do not meet).
func (r Rect) Intersect(s Rect) Rect {
	c0, r0 := max(r.Col, s.Col), max(r.Row, s.Row)
	c1, r1 := min(r.Col+r.Cols, s.Col+s.Cols), min(r.Row+r.Rows, s.Row+s.Rows)
	if c1 <= c0 || r1 <= r0 {
		return Rect{}
	}
	return Rect{Col: c0, Row: r0, Cols: c1 - c0, Rows: r1 - r0}
}

// String is r as cols x rows + col + row, as GDAL's -srcwin reads it backwards.
func (r Rect) String() string { return fmt.Sprintf("%dx%d+%d+%d", r.Cols, r.Rows, r.Col, r.Row) }

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
