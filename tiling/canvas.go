package tiling

import (
	"fmt"
	"math"
)

// Canvas blends tiles' outputs into scene rows, holding only a stripe of
// rows: rows enter when the first tile touching them is added and leave
// with Drop. Each pixel carries Depth float32 values (class probabilities,
// uncertainty, ...) and the sum of the weights that reached it.
//
// Rows must be added in non-decreasing order of their first row (tiles in
// row-major order); a Canvas is not safe for concurrent use.
type Canvas struct {
	Cols, Depth int
	base        int         // scene row of rows[0]
	rows        [][]float32 // per held row: Cols*Depth sums, then Cols weights
	normal      []bool      // per held row: already normalised
	free        [][]float32 // dropped row buffers for reuse
}

// NewCanvas makes an empty canvas for scenes cols pixels wide with depth values per pixel.
func NewCanvas(cols, depth int) *Canvas { return &Canvas{Cols: cols, Depth: depth} }

// Held is the range of scene rows in memory, [from, to).
func (c *Canvas) Held() (from, to int) { return c.base, c.base + len(c.rows) }

func (c *Canvas) ensure(row int) error {
	if len(c.rows) == 0 {
		c.base = row
	}
	if row < c.base {
		return fmt.Errorf("tiling: canvas row %d already dropped (held from %d)", row, c.base)
	}
	for c.base+len(c.rows) <= row {
		var buf []float32
		if n := len(c.free); n > 0 {
			buf, c.free = c.free[n-1], c.free[:n-1]
			clear(buf)
		} else {
			buf = make([]float32, c.Cols*(c.Depth+1))
		}
		c.rows = append(c.rows, buf)
		c.normal = append(c.normal, false)
	}
	return nil
}

// Add blends one tile's output into the canvas. data is the network output
// for t.Input, [t.Input.Rows][t.Input.Cols][Depth]; only the part inside
// the scene (t.Read) is used, weighted by p.Weights(t).
func (c *Canvas) Add(p *Plan, t Tile, data []float32) error {
	if want := t.Input.Rows * t.Input.Cols * c.Depth; len(data) != want {
		return fmt.Errorf("tiling: tile %d output has %d values, want %d", t.Index, len(data), want)
	}
	if t.Read.Col+t.Read.Cols > c.Cols {
		return fmt.Errorf("tiling: tile %d reaches column %d of a %d-column canvas", t.Index, t.Read.Col+t.Read.Cols, c.Cols)
	}
	wr, wc := p.Weights(t)
	d := c.Depth
	for r := t.Read.Row; r < t.Read.Row+t.Read.Rows; r++ {
		ir := r - t.Input.Row
		if wr[ir] == 0 {
			continue
		}
		if err := c.ensure(r); err != nil {
			return err
		}
		if c.normal[r-c.base] {
			return fmt.Errorf("tiling: tile %d adds to row %d after it was normalised", t.Index, r)
		}
		row := c.rows[r-c.base]
		sums, weights := row[:c.Cols*d], row[c.Cols*d:]
		src := data[ir*t.Input.Cols*d:]
		for col := t.Read.Col; col < t.Read.Col+t.Read.Cols; col++ {
			ic := col - t.Input.Col
			w := wr[ir] * wc[ic]
			if w == 0 {
				continue
			}
			weights[col] += w
			s := src[ic*d : ic*d+d]
			dst := sums[col*d : col*d+d]
			for k, v := range s {
				dst[k] += w * v
			}
		}
	}
	return nil
}

// Row returns scene row r normalised ([Cols][Depth]): the weighted sums
// divided by their weights. Pixels no tile reached (total weight 0) are NaN.
// The slice stays valid until Drop releases the row; adding to a row after
// it was returned is an error.
func (c *Canvas) Row(r int) ([]float32, error) {
	if r < c.base || r >= c.base+len(c.rows) {
		return nil, fmt.Errorf("tiling: canvas row %d not held (held %d..%d)", r, c.base, c.base+len(c.rows))
	}
	i := r - c.base
	row := c.rows[i]
	d := c.Depth
	sums := row[:c.Cols*d]
	if !c.normal[i] {
		weights := row[c.Cols*d:]
		for col, w := range weights {
			px := sums[col*d : col*d+d]
			if w == 0 {
				for k := range px {
					px[k] = float32(math.NaN())
				}
				continue
			}
			inv := 1 / w
			for k := range px {
				px[k] *= inv
			}
		}
		c.normal[i] = true
	}
	return sums, nil
}

// Weight returns the total blending weight of scene row r (valid until Drop or Row).
func (c *Canvas) Weight(r int) ([]float32, error) {
	if r < c.base || r >= c.base+len(c.rows) {
		return nil, fmt.Errorf("tiling: canvas row %d not held", r)
	}
	return c.rows[r-c.base][c.Cols*c.Depth:], nil
}

// Drop releases every held row above row below (exclusive); their buffers are reused.
func (c *Canvas) Drop(below int) {
	n := min(max(below-c.base, 0), len(c.rows))
	c.free = append(c.free, c.rows[:n]...)
	c.rows = append(c.rows[:0], c.rows[n:]...)
	c.normal = append(c.normal[:0], c.normal[n:]...)
	c.base += n
	// Keep a bounded free list: the stripe's height, not the scene's.
	if len(c.free) > len(c.rows)+1 {
		c.free = c.free[:len(c.rows)+1]
	}
}
