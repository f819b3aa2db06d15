package tiling

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// checkPlan verifies every invariant a plan promises.
func checkPlan(t *testing.T, p Plan) {
	t.Helper()
	scene := Rect{Rows: p.Rows, Cols: p.Cols}
	if len(p.Tiles) != p.TilesDown*p.TilesAcross {
		t.Fatalf("%v: got %d tiles, want %d x %d", p, len(p.Tiles), p.TilesDown, p.TilesAcross)
	}
	cover := make([]uint8, p.Rows*p.Cols)
	for i, tl := range p.Tiles {
		if tl.Index != i || tl.Row != i/p.TilesAcross || tl.Col != i%p.TilesAcross {
			t.Fatalf("%v: tile %d has index %d at grid %d,%d", p, i, tl.Index, tl.Row, tl.Col)
		}
		if tl.Input.Col%p.Stride != 0 || tl.Input.Row%p.Stride != 0 {
			t.Fatalf("%v: tile %d origin %v not a multiple of stride %d", p, i, tl.Input, p.Stride)
		}
		if tl.Input.Rows != p.TileRows || tl.Input.Cols != p.TileCols {
			t.Fatalf("%v: tile %d input %v, want %dx%d", p, i, tl.Input, p.TileCols, p.TileRows)
		}
		if !p.Whole && (p.TileRows%p.Stride != 0 && p.TileRows != p.Rows || p.TileCols%p.Stride != 0 && p.TileCols != p.Cols) {
			t.Fatalf("%v: tile shape %dx%d not a multiple of stride %d", p, p.TileCols, p.TileRows, p.Stride)
		}
		if got := tl.Input.Intersect(scene); got != tl.Read {
			t.Fatalf("%v: tile %d read %v, want %v", p, i, tl.Read, got)
		}
		// Tiles that follow each other overhang by less than the stride;
		// one tile spanning an axis by less than a ladder step.
		if over, most := tl.Input.Row+tl.Input.Rows-p.Rows, maxOverhang(p, p.TilesDown); over >= most {
			t.Fatalf("%v: tile %d overhangs the bottom by %d px, want < %d", p, i, over, most)
		}
		if over, most := tl.Input.Col+tl.Input.Cols-p.Cols, maxOverhang(p, p.TilesAcross); over >= most {
			t.Fatalf("%v: tile %d overhangs the right by %d px, want < %d", p, i, over, most)
		}
		if tl.Core.Intersect(tl.Read) != tl.Core || tl.Core.Empty() {
			t.Fatalf("%v: tile %d core %v not inside read %v", p, i, tl.Core, tl.Read)
		}
		for r := tl.Core.Row; r < tl.Core.Row+tl.Core.Rows; r++ {
			for c := tl.Core.Col; c < tl.Core.Col+tl.Core.Cols; c++ {
				cover[r*p.Cols+c]++
			}
		}
	}
	for i, n := range cover {
		if n != 1 {
			t.Fatalf("%v: pixel row %d col %d covered by %d cores, want 1", p, i/p.Cols, i%p.Cols, n)
		}
	}
	// Blending weights: tiles form a product grid, so the total weight at
	// (r, c) is (sum of row weights at r) * (sum of column weights at c).
	rowSum := make([]float64, p.Rows)
	colSum := make([]float64, p.Cols)
	for _, tl := range p.Tiles {
		wr, wc := p.Weights(tl)
		if tl.Col == 0 {
			for i, w := range wr {
				if r := tl.Input.Row + i; r < p.Rows {
					rowSum[r] += float64(w)
				}
			}
		}
		if tl.Row == 0 {
			for i, w := range wc {
				if c := tl.Input.Col + i; c < p.Cols {
					colSum[c] += float64(w)
				}
			}
		}
		// Interior edges give no weight; scene borders full weight.
		if p.Margin > 0 {
			if tl.Input.Row > 0 && wr[0] != 0 {
				t.Fatalf("%v: tile %d top edge weight %v, want 0", p, tl.Index, wr[0])
			}
			if tl.Input.Col+tl.Input.Cols < p.Cols && wc[len(wc)-1] != 0 {
				t.Fatalf("%v: tile %d right edge weight %v, want 0", p, tl.Index, wc[len(wc)-1])
			}
		}
		if tl.Input.Row == 0 && wr[0] != 1 && p.Overlap-2*p.Margin >= 1 {
			t.Fatalf("%v: tile %d scene-border weight %v, want 1", p, tl.Index, wr[0])
		}
	}
	for r, s := range rowSum {
		if s <= 0 {
			t.Fatalf("%v: row %d gets total weight %v, want > 0", p, r, s)
		}
	}
	for c, s := range colSum {
		if s <= 0 {
			t.Fatalf("%v: col %d gets total weight %v, want > 0", p, c, s)
		}
	}
	// Row bands: FinalRows is where the next tile row begins.
	bands := p.RowBands()
	for i, b := range bands {
		if i+1 < len(bands) {
			if tl := bands[i+1].Tiles[0]; tl.Read.Row != b.FinalRows {
				t.Fatalf("%v: tile %d starts at row %d, want band %d's final row %d", p, tl.Index, tl.Read.Row, i, b.FinalRows)
			}
		}
	}
	if bands[len(bands)-1].FinalRows != p.Rows {
		t.Fatalf("%v: last band final rows %d, want %d", p, bands[len(bands)-1].FinalRows, p.Rows)
	}
}

// maxOverhang is what a tile may overhang the scene by along an axis of
// tiles tiles (less than): the stride where tiles follow each other, a
// ladder step where one tile spans the axis.
func maxOverhang(p Plan, tiles int) int {
	if tiles == 1 {
		return max(p.Ladder, p.Stride)
	}
	return p.Stride
}

func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 600
	if testing.Short() {
		n = 150
	}
	for i := 0; i < n; i++ {
		stride := []int{1, 2, 4, 8}[rng.IntN(4)]
		rows, cols := 1+rng.IntN(700), 1+rng.IntN(700)
		tile := 8 + rng.IntN(250)
		overlap := OverlapAuto
		if rng.IntN(4) > 0 {
			overlap = rng.IntN(tile)
			if overlap == 0 {
				overlap = OverlapNone
			}
		}
		ladder := 0
		if rng.IntN(2) == 0 {
			ladder = AlignUp(LadderStep, stride)
		}
		p, err := New(rows, cols, Options{Stride: stride, TileSize: tile, Overlap: overlap, Ladder: ladder})
		if err != nil {
			if errors.Is(err, ErrInvalid) && AlignUp(max(overlap, 0), stride) >= AlignUp(tile, stride) {
				continue // overlap rounded up to the tile: a refused request
			}
			t.Fatalf("New(%d, %d, stride %d tile %d overlap %d): %v", rows, cols, stride, tile, overlap, err)
		}
		checkPlan(t, p)
	}
}

func TestPlanTable(t *testing.T) {
	tests := []struct {
		name                    string
		rows, cols              int
		opts                    Options
		wantDown, wantAcross    int
		wantTileRows, wantTCols int
		wantWhole               bool
	}{
		{"no tile is whole", 610, 340, Options{Stride: 4}, 1, 1, 610, 340, true},
		{"no tile is whole, on the ladder", 610, 340, Options{Stride: 4, Ladder: 64}, 1, 1, 640, 384, true},
		{"below the tile is whole, on the ladder", 83, 86, Options{Stride: 4, TileSize: 384, Ladder: 64}, 1, 1, 128, 128, true},
		{"the tile is the top rung", 380, 300, Options{Stride: 4, TileSize: 384, Ladder: 64}, 1, 1, 384, 320, true},
		{"a larger tile pads the same", 380, 300, Options{Stride: 4, TileSize: 400, Ladder: 64}, 1, 1, 384, 320, true},
		{"a tile spanning a short axis is on the ladder", 349, 1905, Options{Stride: 4, TileSize: 384, Ladder: 64}, 1, 6, 384, 384, false},
		{"a user's tile off the ladder", 90, 300, Options{Stride: 4, TileSize: 100, Overlap: 16, Ladder: 64}, 1, 4, 128, 100, false},
		{"tile larger than scene", 100, 90, Options{Stride: 4, TileSize: 256, Overlap: 32}, 1, 1, 100, 90, true},
		{"exact fit", 256, 256, Options{Stride: 4, TileSize: 128, Overlap: OverlapNone}, 2, 2, 128, 128, false},
		{"not dividing", 610, 340, Options{Stride: 4, TileSize: 128, Overlap: 32}, 7, 4, 128, 128, false},
		{"narrow scene keeps its width", 1000, 60, Options{Stride: 4, TileSize: 128, Overlap: 32}, 11, 1, 128, 60, false},
		{"overlap rounded to stride", 300, 300, Options{Stride: 4, TileSize: 100, Overlap: 10}, 4, 4, 100, 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.rows, tt.cols, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, p)
			if p.TilesDown != tt.wantDown || p.TilesAcross != tt.wantAcross {
				t.Errorf("got %d x %d tiles, want %d x %d", p.TilesDown, p.TilesAcross, tt.wantDown, tt.wantAcross)
			}
			if p.TileRows != tt.wantTileRows || p.TileCols != tt.wantTCols {
				t.Errorf("got tile %dx%d (rows x cols), want %dx%d", p.TileRows, p.TileCols, tt.wantTileRows, tt.wantTCols)
			}
			if p.Whole != tt.wantWhole {
				t.Errorf("got whole %v, want %v", p.Whole, tt.wantWhole)
			}
			if p.Overlap%tt.opts.Stride != 0 {
				t.Errorf("got overlap %d, want a multiple of %d", p.Overlap, tt.opts.Stride)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name       string
		rows, cols int
		opts       Options
		want       error
	}{
		{"empty scene", 0, 10, Options{Stride: 4}, ErrInvalid},
		{"no stride", 10, 10, Options{}, ErrInvalid},
		{"overlap too wide", 500, 500, Options{Stride: 4, TileSize: 64, Overlap: 64}, ErrInvalid},
		{"negative tile", 500, 500, Options{Stride: 4, TileSize: -3}, ErrInvalid},
		{"ladder off the stride", 500, 500, Options{Stride: 4, TileSize: 64, Ladder: 30}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.rows, tt.cols, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDefaultOverlap(t *testing.T) {
	for _, tile := range []int{8, 16, 20, 24, 64, 128, 384, 1024} {
		o := DefaultOverlap(tile, 4)
		if o%4 != 0 || o*2 > tile {
			t.Errorf("DefaultOverlap(%d, 4) = %d, want a multiple of 4 at most half the tile", tile, o)
		}
		if tile >= 2*DefaultOverlapPixels && o != DefaultOverlapPixels {
			t.Errorf("DefaultOverlap(%d, 4) = %d, want %d", tile, o, DefaultOverlapPixels)
		}
	}
}

// TestResolveOverlap: the one convention for an overlap request (tiling,
// processor; cmd/pnec's --overlap translates into it): zero asks for the
// default, a negative for none, pixels are rounded up to the stride.
func TestResolveOverlap(t *testing.T) {
	for _, tc := range []struct{ overlap, tile, stride, want int }{
		{OverlapAuto, 256, 4, DefaultOverlap(256, 4)},
		{OverlapAuto, 256, 4, 12},
		{OverlapAuto, 20, 4, 8}, // at most half the tile
		{OverlapNone, 256, 4, 0},
		{-7, 256, 4, 0},
		{10, 256, 4, 12},
		{16, 256, 4, 16},
	} {
		if got := ResolveOverlap(tc.overlap, tc.tile, tc.stride); got != tc.want {
			t.Errorf("ResolveOverlap(%d, tile %d, stride %d) = %d, want %d", tc.overlap, tc.tile, tc.stride, got, tc.want)
		}
	}
}
