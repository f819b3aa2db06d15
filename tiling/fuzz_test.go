package tiling

import (
	"errors"
	"testing"
)

// FuzzNew checks the invariants New promises for any request it accepts:
// the tiles cover the scene, their cores partition it (checkPlan), a lazy
// plan describes the same tiles, and the stitcher's row release (a row band
// makes rows [previous FinalRows, FinalRows) final once every tile of it is
// stitched) finalises every core pixel exactly once, after the last tile
// that reads it. A request New refuses must fail with ErrInvalid, never
// panic. `go test` runs the seeds; `go test -fuzz FuzzNew
// ./tiling` explores further.
func FuzzNew(f *testing.F) {
	for _, s := range []struct {
		rows, cols, stride, tile, overlap, ladder int
		lazy                                      bool
	}{
		{83, 86, 4, 48, 16, 0, false},     // make demo's SalinasA plan
		{128, 128, 4, 64, 16, 0, true},    // make demo's synthetic plan
		{610, 340, 4, 384, -1, 64, false}, // the canonical grid, on the ladder
		{83, 86, 4, 384, -1, 64, false},   // whole image, padded
		{1, 1, 1, 1, 0, 0, false},         // a single pixel
		{5, 700, 16, 32, 31, 0, false},    // overlap just below the tile
		{300, 7, 3, 10, -1, 0, true},      // stride not a power of two
		{64, 64, 4, 16, 16, 0, false},     // overlap = tile: refused
		{0, 10, 4, 16, 4, 0, false},       // empty scene: refused
		{50, 50, 0, 16, 4, 0, false},      // no stride: refused
		{50, 50, 4, 16, 4, 6, false},      // ladder off the stride: refused
		{257, 255, 8, 100, -1, 64, false}, // no overlap, a tile off the ladder
		{400, 399, 4, 0, 12, 0, true},     // no tile: whole image, lazy
		{33, 600, 4, 600, 20, 64, false},  // one tile wider than the scene
	} {
		f.Add(s.rows, s.cols, s.stride, s.tile, s.overlap, s.ladder, s.lazy)
	}
	f.Fuzz(func(t *testing.T, rows, cols, stride, tile, overlap, ladder int, lazy bool) {
		// Small scenes keep each case fast (checkPlan walks every pixel);
		// the planner's arithmetic does not depend on absolute size.
		if rows > 700 || cols > 700 || stride > 64 || tile > 1024 || overlap > 1024 || ladder > 256 {
			t.Skip()
		}
		o := Options{Stride: stride, TileSize: tile, Overlap: overlap, Ladder: ladder}
		p, err := New(rows, cols, o)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("New(%d, %d, %+v): error %v is not ErrInvalid", rows, cols, o, err)
			}
			return
		}
		checkPlan(t, p)
		if lazy {
			o.Lazy = true
			lp, err := New(rows, cols, o)
			if err != nil {
				t.Fatalf("lazy New failed where the full plan succeeded: %v", err)
			}
			if lp.Tiles != nil || lp.NumTiles() != len(p.Tiles) {
				t.Fatalf("lazy plan: %d tiles listed, NumTiles %d, want none listed and %d", len(lp.Tiles), lp.NumTiles(), len(p.Tiles))
			}
			for i, tl := range p.Tiles {
				if got := lp.Tile(i); got != tl {
					t.Fatalf("lazy tile %d = %+v, want %+v", i, got, tl)
				}
			}
		}
		checkFinalisation(t, p)
	})
}

// checkFinalisation replays the stitcher's row release over p's row bands.
func checkFinalisation(t *testing.T, p Plan) {
	t.Helper()
	lastRead := make([]int, p.Rows) // last band whose tiles read each row
	bandOf := make([]int, p.NumTiles())
	bands := p.RowBands()
	for i, b := range bands {
		for _, tl := range b.Tiles {
			bandOf[tl.Index] = i
			for r := tl.Read.Row; r < tl.Read.Row+tl.Read.Rows; r++ {
				lastRead[r] = max(lastRead[r], i)
			}
		}
	}
	finalisedBy := make([]int, p.Rows) // band that made each row final
	times := make([]int, p.Rows)       // how often each row was made final
	next := 0
	for i, b := range bands {
		if b.FinalRows < next || b.FinalRows > p.Rows {
			t.Fatalf("%v: band %d final rows %d after %d (scene %d rows)", p, i, b.FinalRows, next, p.Rows)
		}
		for ; next < b.FinalRows; next++ {
			finalisedBy[next] = i
			times[next]++
		}
	}
	for r := range times {
		if times[r] != 1 {
			t.Fatalf("%v: row %d made final %d times, want once", p, r, times[r])
		}
		if finalisedBy[r] < lastRead[r] {
			t.Fatalf("%v: row %d made final by band %d, but band %d still reads it", p, r, finalisedBy[r], lastRead[r])
		}
	}
	// Every core pixel is final once its own tile is stitched, not before.
	for _, tl := range p.Tiles {
		for r := tl.Core.Row; r < tl.Core.Row+tl.Core.Rows; r++ {
			if finalisedBy[r] < bandOf[tl.Index] {
				t.Fatalf("%v: core row %d of tile %d (band %d) made final by band %d", p, r, tl.Index, bandOf[tl.Index], finalisedBy[r])
			}
		}
	}
}
