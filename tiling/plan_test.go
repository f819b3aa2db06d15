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
		if over := tl.Input.Row + tl.Input.Rows - p.Rows; over >= p.Stride {
			t.Fatalf("%v: tile %d overhangs the bottom by %d px, want < stride", p, i, over)
		}
		if over := tl.Input.Col + tl.Input.Cols - p.Cols; over >= p.Stride {
			t.Fatalf("%v: tile %d overhangs the right by %d px, want < stride", p, i, over)
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
		p, err := New(rows, cols, Options{Stride: stride, TileSize: tile, Overlap: overlap, RecoveryWindow: 1 + 2*rng.IntN(7)})
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
		{"no budget is whole", 610, 340, Options{Stride: 4}, 1, 1, 610, 340, true},
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
		{"budget too small", 5000, 5000, Options{Stride: 4, Overlap: OverlapAuto, MaxMemoryBytes: 1 << 20, Cost: &Cost{Bands: 100, Classes: 10}}, ErrBudget},
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

func TestPlanFromBudget(t *testing.T) {
	cost := &Cost{Bands: 103, Classes: 9, NetworkBytes: func(r, c int) int64 { return int64(r) * int64(c) * 2000 }}
	const rows, cols = 4000, 1000
	whole := cost.WholeBytes(rows, cols)
	t.Run("fits whole", func(t *testing.T) {
		p, err := New(rows, cols, Options{Stride: 4, Overlap: OverlapAuto, RecoveryWindow: 9, MaxMemoryBytes: whole, Cost: cost})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Whole {
			t.Fatalf("got %v, want whole image with budget %d = estimate", p, whole)
		}
	})
	for _, budget := range []int64{whole / 2, whole / 8, whole / 30} {
		p, err := New(rows, cols, Options{Stride: 4, Overlap: OverlapAuto, RecoveryWindow: 9, MaxMemoryBytes: budget, Cost: cost})
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		checkPlan(t, p)
		if p.Whole {
			t.Fatalf("budget %d < whole estimate %d: got whole image", budget, whole)
		}
		got := cost.TiledBytes(p.TileRows, p.TileCols, cols, p.Overlap, 9)
		if got > budget {
			t.Errorf("budget %d: plan %v needs %d", budget, p, got)
		}
		// Fewer tiles down would not have fit (the planner takes the
		// largest tile, then shrinks it to the same count of tiles).
		if n := p.TilesDown; n > 1 {
			ov := p.Overlap
			bigger := AlignUp((rows-ov+n-2)/(n-1)+ov, 4)
			if cost.TiledBytes(bigger, min(bigger, cols), cols, DefaultOverlap(bigger, 4, 9), 9) <= budget {
				t.Errorf("budget %d: %d tiles down of %d chosen but %d px tiles (%d down) fit too", budget, n, p.TileRows, bigger, n-1)
			}
		}
	}
}

// The stripe estimate must not depend on the scene's height: that is the
// promise that memory does not grow with the scene.
// TestTiledBytesIndependentOfHeight: under one budget, scenes of one width
// and any height are planned in tiles of the same width whose planned peak
// stays within the budget (the canvas holds a stripe, not the scene), while
// the whole image's cost grows with the height past the budget. A planner
// that counted the scene's height would give taller scenes narrower tiles
// or a peak over the budget here. (It once compared TiledBytes of a forced
// tile, which has no height argument: it could not fail.)
func TestTiledBytesIndependentOfHeight(t *testing.T) {
	cost := &Cost{Bands: 50, Classes: 5}
	const cols = 800
	budget := cost.WholeBytes(1000, cols) / 2 // the smallest scene already needs tiles
	var first Plan
	for i, rows := range []int{1000, 8000, 64000} {
		p, err := New(rows, cols, Options{Stride: 4, RecoveryWindow: 9, MaxMemoryBytes: budget, Cost: cost, Lazy: true})
		if err != nil {
			t.Fatalf("rows %d: %v", rows, err)
		}
		if p.Whole {
			t.Fatalf("rows %d: planned the whole image under %d bytes (it needs %d)", rows, budget, cost.WholeBytes(rows, cols))
		}
		if got := cost.TiledBytes(p.TileRows, p.TileCols, cols, p.Overlap, 9); got > budget {
			t.Errorf("rows %d: planned peak %d over the budget %d", rows, got, budget)
		}
		if i == 0 {
			first = p
			continue
		}
		if p.TileCols != first.TileCols || p.TilesAcross != first.TilesAcross || p.Overlap != first.Overlap {
			t.Errorf("rows %d: %d tiles across of %d px, overlap %d; want %d of %d px, overlap %d as for 1000 rows",
				rows, p.TilesAcross, p.TileCols, p.Overlap, first.TilesAcross, first.TileCols, first.Overlap)
		}
		if p.TilesDown*1000 < first.TilesDown*rows/2 {
			t.Errorf("rows %d: %d tiles down, want about %d times the %d of 1000 rows", rows, p.TilesDown, rows/1000, first.TilesDown)
		}
	}
}

func TestDefaultOverlap(t *testing.T) {
	for _, tile := range []int{64, 128, 256, 512, 1024} {
		for _, win := range []int{1, 9, 13} {
			o := DefaultOverlap(tile, 4, win)
			if o%4 != 0 || o >= tile || o*2 > tile {
				t.Errorf("DefaultOverlap(%d, 4, %d) = %d, want a multiple of 4 at most half the tile", tile, win, o)
			}
			if tile >= 4*(win+16) && o < win+16 {
				t.Errorf("DefaultOverlap(%d, 4, %d) = %d, want >= window+16", tile, win, o)
			}
		}
	}
}

// TestBalanced: budget plans keep the count of tiles of the largest tile
// that fits but no more pixels than that count needs.
func TestBalanced(t *testing.T) {
	for _, tc := range []struct{ size, tile, overlap, want int }{
		{2048, 640, 32, 536}, // 4 tiles: 4*536 - 3*32 = 2048
		{2048, 2048, 32, 2048},
		{100, 640, 32, 640},  // one tile covers the axis
		{1000, 512, 32, 356}, // 3 tiles
	} {
		got := balanced(tc.size, tc.tile, tc.overlap, 4)
		if got != tc.want {
			t.Errorf("balanced(%d, %d, %d) = %d, want %d", tc.size, tc.tile, tc.overlap, got, tc.want)
		}
		n := func(tile int) int {
			o, _, _ := axis(tc.size, tile, tc.overlap, 4)
			return len(o)
		}
		if n(got) != n(tc.tile) {
			t.Errorf("size %d: %d tiles of %d, %d of %d", tc.size, n(got), got, n(tc.tile), tc.tile)
		}
	}
}

// TestResolveOverlap: the one convention for an overlap request (tiling,
// processor; cmd/pnec's --overlap translates into it): zero asks for the
// default, a negative for none, pixels are rounded up to the stride.
func TestResolveOverlap(t *testing.T) {
	for _, tc := range []struct{ overlap, tile, stride, window, want int }{
		{OverlapAuto, 256, 4, 9, DefaultOverlap(256, 4, 9)},
		{OverlapAuto, 256, 4, 9, 32},
		{OverlapAuto, 48, 4, 9, 24}, // at most half the tile
		{OverlapNone, 256, 4, 9, 0},
		{-7, 256, 4, 9, 0},
		{10, 256, 4, 9, 12},
		{16, 256, 4, 9, 16},
	} {
		if got := ResolveOverlap(tc.overlap, tc.tile, tc.stride, tc.window); got != tc.want {
			t.Errorf("ResolveOverlap(%d, tile %d, stride %d, window %d) = %d, want %d", tc.overlap, tc.tile, tc.stride, tc.window, got, tc.want)
		}
	}
}
