package tiling

import (
	"math"
	"testing"
)

// field is a smooth two-value test signal at scene pixel (r, c).
func field(r, c int) (float32, float32) {
	return float32(r)*0.5 + float32(c)*0.25, float32(math.Sin(float64(r)/7) + math.Cos(float64(c)/5))
}

// tileOutput fills a tile's output with f over its input (padding included).
func tileOutput(tl Tile, depth int, f func(r, c int) []float32) []float32 {
	out := make([]float32, tl.Input.Rows*tl.Input.Cols*depth)
	for i := 0; i < tl.Input.Rows; i++ {
		for j := 0; j < tl.Input.Cols; j++ {
			copy(out[(i*tl.Input.Cols+j)*depth:], f(tl.Input.Row+i, tl.Input.Col+j))
		}
	}
	return out
}

// When every tile reports the same field, stitching must reproduce it
// exactly (up to rounding), whatever the weights.
func TestCanvasReproducesAgreeingTiles(t *testing.T) {
	for _, tc := range []struct{ rows, cols, tile, overlap int }{
		{97, 61, 32, 8}, {200, 130, 64, 16}, {64, 64, 64, OverlapNone}, {150, 77, 40, OverlapNone}, {120, 50, 48, 24},
	} {
		p, err := New(tc.rows, tc.cols, Options{Stride: 4, TileSize: tc.tile, Overlap: tc.overlap})
		if err != nil {
			t.Fatal(err)
		}
		cv := NewCanvas(tc.cols, 2)
		for _, tl := range p.Tiles {
			out := tileOutput(tl, 2, func(r, c int) []float32 { a, b := field(r, c); return []float32{a, b} })
			if err := cv.Add(&p, tl, out); err != nil {
				t.Fatal(err)
			}
		}
		for r := 0; r < tc.rows; r++ {
			row, err := cv.Row(r)
			if err != nil {
				t.Fatal(err)
			}
			for c := 0; c < tc.cols; c++ {
				a, b := field(r, c)
				if math.Abs(float64(row[2*c]-a)) > 1e-3 || math.Abs(float64(row[2*c+1]-b)) > 1e-5 {
					t.Fatalf("%v: pixel %d,%d got %v,%v, want %v,%v", p, r, c, row[2*c], row[2*c+1], a, b)
				}
			}
		}
	}
}

// Each tile reports its own index: a pixel must take no value from a tile
// at whose interior edge it lies, and pixels deep inside one tile only (away
// from every overlap) take that tile's value alone.
func TestCanvasWeightsFallToZeroAtTileEdges(t *testing.T) {
	p, err := New(300, 260, Options{Stride: 4, TileSize: 96, Overlap: 32})
	if err != nil {
		t.Fatal(err)
	}
	if p.Margin == 0 {
		t.Fatalf("got margin 0 for overlap %d, want > 0", p.Overlap)
	}
	cv := NewCanvas(p.Cols, 1)
	for _, tl := range p.Tiles {
		v := float32(tl.Index)
		if err := cv.Add(&p, tl, tileOutput(tl, 1, func(int, int) []float32 { return []float32{v} })); err != nil {
			t.Fatal(err)
		}
	}
	rows := make([][]float32, p.Rows)
	for r := range rows {
		if rows[r], err = cv.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	owners := func(r, c int) []int {
		var out []int
		for _, tl := range p.Tiles {
			if tl.Read.Contains(c, r) {
				out = append(out, tl.Index)
			}
		}
		return out
	}
	for _, tl := range p.Tiles {
		// Top interior edge row: the value must come from the other tiles covering it.
		if tl.Input.Row > 0 {
			r, c := tl.Input.Row, tl.Core.Col+tl.Core.Cols/2
			got := rows[r][c]
			if own := owners(r, c); len(own) == 2 && got == float32(tl.Index) {
				t.Errorf("tile %d: pixel on its top edge (%d,%d) got its value %v, want the neighbour's", tl.Index, r, c, got)
			}
		}
		// Core centre covered by this tile alone: exactly its value.
		r, c := tl.Core.Row+tl.Core.Rows/2, tl.Core.Col+tl.Core.Cols/2
		if own := owners(r, c); len(own) == 1 && rows[r][c] != float32(tl.Index) {
			t.Errorf("tile %d: interior pixel %d,%d got %v, want %v", tl.Index, r, c, rows[r][c], tl.Index)
		}
	}
}

func TestCanvasStripeStaysBounded(t *testing.T) {
	const rows, cols = 5000, 40
	p, err := New(rows, cols, Options{Stride: 4, TileSize: 64, Overlap: 16})
	if err != nil {
		t.Fatal(err)
	}
	cv := NewCanvas(cols, 3)
	maxHeld := 0
	next := 0 // first row not yet consumed
	for _, band := range p.RowBands() {
		for _, tl := range band.Tiles {
			if err := cv.Add(&p, tl, make([]float32, tl.Input.Rows*tl.Input.Cols*3)); err != nil {
				t.Fatal(err)
			}
		}
		from, to := cv.Held()
		maxHeld = max(maxHeld, to-from)
		for ; next < band.FinalRows; next++ {
			if _, err := cv.Row(next); err != nil {
				t.Fatal(err)
			}
		}
		cv.Drop(next)
	}
	if next != rows {
		t.Fatalf("consumed %d rows, want %d", next, rows)
	}
	if maxHeld > p.TileRows {
		t.Fatalf("held up to %d rows, want at most a tile row (%d)", maxHeld, p.TileRows)
	}
	if len(cv.free) > p.TileRows+1 {
		t.Fatalf("free list holds %d rows, want at most %d", len(cv.free), p.TileRows+1)
	}
}

func TestCanvasErrors(t *testing.T) {
	p, _ := New(100, 100, Options{Stride: 4, TileSize: 64, Overlap: 16})
	cv := NewCanvas(100, 1)
	if err := cv.Add(&p, p.Tiles[0], make([]float32, 5)); err == nil {
		t.Error("Add with a short buffer: got nil error")
	}
	if err := cv.Add(&p, p.Tiles[2], make([]float32, 64*64)); err != nil {
		t.Fatal(err)
	}
	cv.Drop(90)
	if err := cv.Add(&p, p.Tiles[0], make([]float32, 64*64)); err == nil {
		t.Error("Add to dropped rows: got nil error")
	}
	if _, err := cv.Row(10); err == nil {
		t.Error("Row of a dropped row: got nil error")
	}
}
