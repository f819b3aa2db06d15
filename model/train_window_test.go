package model

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/pnec/pnec/tiling"
)

func TestTrainGrid(t *testing.T) {
	for _, tc := range []struct {
		name            string
		rows, cols      int
		opts            TrainOptions
		whole           bool
		tileRows, tiles int
		wantErr         bool
	}{
		{name: "within one tile", rows: 300, cols: 384, whole: true, tileRows: 300, tiles: 1},
		{name: "odd size within one tile", rows: 83, cols: 86, whole: true, tileRows: 83, tiles: 1},
		{name: "wider than a tile", rows: 300, cols: 1000, tileRows: 320, tiles: 3},
		{name: "satellite scene", rows: 1000, cols: 1000, tileRows: 384, tiles: 9},
		{name: "whole asked", rows: 1000, cols: 1000, opts: TrainOptions{Whole: true}, whole: true, tileRows: 1000, tiles: 1},
		{name: "own tile", rows: 200, cols: 200, opts: TrainOptions{Tile: 64}, tileRows: 64, tiles: 16},
		{name: "negative tile", rows: 200, cols: 200, opts: TrainOptions{Tile: -1}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := trainGrid(tc.rows, tc.cols, tc.opts)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Whole != tc.whole || p.TileRows != tc.tileRows || p.NumTiles() != tc.tiles {
				t.Errorf("plan whole %v, tile rows %d, %d tiles; want %v, %d, %d", p.Whole, p.TileRows, p.NumTiles(), tc.whole, tc.tileRows, tc.tiles)
			}
			if !tc.whole {
				// The classify grid: the same tiles as processor plans.
				want, err := tiling.New(tc.rows, tc.cols, tiling.Options{Stride: Stride, TileSize: max(tc.opts.Tile, 0) + tiling.CanonicalTile*boolInt(tc.opts.Tile == 0), Ladder: tiling.LadderStep})
				if err != nil {
					t.Fatal(err)
				}
				if want.NumTiles() != p.NumTiles() || want.Tile(p.NumTiles()-1) != p.Tile(p.NumTiles()-1) {
					t.Errorf("training grid %v, classify's %v", p, want)
				}
			}
		})
	}
}

// TestTrainPlanWholeByDefault: a held scene the default grid covers with
// one or two tiles trains whole, unless a tile side is asked for, the
// scene is read by windows or the whole step does not fit the budget;
// three tiles or more train on the tiles.
func TestTrainPlanWholeByDefault(t *testing.T) {
	cfg := DefaultConfig()
	d, err := makeDims(cfg, 103, 9)
	if err != nil {
		t.Fatal(err)
	}
	pavia := Scene{Rows: 610, Cols: 340, Bands: 103}
	tiles, err := trainGrid(pavia.Rows, pavia.Cols, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := trainGrid(pavia.Rows, pavia.Cols, TrainOptions{Whole: true})
	if err != nil {
		t.Fatal(err)
	}
	tileNeed, wholeNeed := trainNeedBytes(d, cfg, pavia, tiles, 135), trainNeedBytes(d, cfg, pavia, whole, 135)
	t.Logf("estimates: tile step %d bytes, whole step %d bytes", tileNeed, wholeNeed)
	if tileNeed >= wholeNeed {
		t.Fatalf("a tile step's estimate %d bytes is not under the whole step's %d: the budget case below tests nothing", tileNeed, wholeNeed)
	}
	byWindows := pavia
	byWindows.stream = &streamed{}
	for _, tc := range []struct {
		name      string
		s         Scene
		opts      TrainOptions
		wantWhole bool
	}{
		{"two tiles, held", pavia, TrainOptions{}, true},
		{"two tiles, tile asked", pavia, TrainOptions{Tile: 384}, false},
		{"two tiles, read by windows", byWindows, TrainOptions{}, false},
		{"two tiles, whole step over the budget", pavia, TrainOptions{MaxMemoryBytes: (tileNeed + wholeNeed) / 2}, false},
		{"two tiles across", Scene{Rows: 40, Cols: 700, Bands: 103}, TrainOptions{}, true},
		{"four tiles", Scene{Rows: 500, Cols: 500, Bands: 103}, TrainOptions{}, false},
		{"three tiles", Scene{Rows: 300, Cols: 1000, Bands: 103}, TrainOptions{}, false},
		{"within one tile", Scene{Rows: 86, Cols: 83, Bands: 103}, TrainOptions{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Config = cfg
			if tc.opts.MaxMemoryBytes == 0 {
				// Room for the whole step whatever the machine (the
				// estimate depends on whether pnec's kernels run here).
				tc.opts.MaxMemoryBytes = 2 * wholeNeed
			}
			p, err := trainPlan(tc.s, d, tc.opts, 135)
			if err != nil {
				t.Fatal(err)
			}
			if p.Whole != tc.wantWhole {
				t.Errorf("whole %v (%d tiles of %d x %d), want %v", p.Whole, p.NumTiles(), p.TileRows, p.TileCols, tc.wantWhole)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestTrainWindowsHoldStitchedPixels: every training pixel trains in each
// tile whose stitch weight is positive at it, its core's tile among them,
// at its place in that tile's input, and in no other tile.
func TestTrainWindowsHoldStitchedPixels(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows, cols int
		tile       int
	}{
		{"overlapping ramps", 150, 230, 64},
		{"two tiles a side", 500, 500, 384},
		{"one row of tiles", 60, 300, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := synthScene(tc.rows, tc.cols, 2, 3, 3)
			plan, err := trainGrid(s.Rows, s.Cols, TrainOptions{Tile: tc.tile})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(4, 5))
			var idx []int
			var y []int32
			for range 300 {
				idx = append(idx, rng.IntN(s.Rows*s.Cols))
				y = append(y, int32(rng.IntN(3)))
			}
			tw := newTrainWindows(plan, s, idx, y, 1)
			// got[tile][scene pixel] counts the times the window holds it.
			got := map[int]map[int]int{}
			for _, w := range tw.wins {
				in := w.tile.Input
				got[w.tile.Index] = map[int]int{}
				for j, li := range w.idx {
					r, c := in.Row+li/in.Cols, in.Col+li%in.Cols
					got[w.tile.Index][r*s.Cols+c]++
					if !classAt(idx, y, r*s.Cols+c, w.y[j]) {
						t.Fatalf("tile %d holds pixel (%d,%d) class %d: no such training pixel", w.tile.Index, r, c, w.y[j])
					}
				}
				if len(w.idx) > tw.rows && tw.rows != trainWindowMaxRows {
					t.Errorf("tile %d holds %d pixels, more than the step's %d rows", w.tile.Index, len(w.idx), tw.rows)
				}
			}
			shared := 0
			for _, i := range idx {
				r, c := i/s.Cols, i%s.Cols
				n := 0
				for k := range plan.NumTiles() {
					tile := plan.Tile(k)
					wr, wc := plan.Weights(tile)
					in := tile.Input
					want := in.Contains(c, r) && wr[r-in.Row]*wc[c-in.Col] > 0
					if have := got[k][i] > 0; have != want {
						t.Fatalf("pixel (%d,%d) in tile %d: held %v, want %v (stitch weight)", r, c, k, have, want)
					}
					if tile.Core.Contains(c, r) && !want {
						t.Fatalf("pixel (%d,%d): its core's tile %d does not hold it", r, c, k)
					}
					if want {
						n++
					}
				}
				if n > 1 {
					shared++
				}
			}
			if plan.NumTiles() > 1 && shared == 0 {
				t.Error("no training pixel lies in two tiles' stitches: the overlaps were not taken")
			}
			// A cycle visits each tile once.
			seen := map[int]int{}
			for range len(tw.wins) {
				seen[tw.next().tile.Index]++
			}
			if len(seen) != len(tw.wins) {
				t.Errorf("a cycle of %d steps saw %d tiles", len(tw.wins), len(seen))
			}
		})
	}
}

// classAt says some training pixel i (repeats allowed) has class v.
func classAt(idx []int, y []int32, i int, v int32) bool {
	for k, j := range idx {
		if j == i && y[k] == v {
			return true
		}
	}
	return false
}

// TestTrainWindowed: a scene larger than its tile trains tile by tile on
// one compiled step, within a budget the whole scene does not fit, and
// classifies as well as whole-scene training.
func TestTrainWindowed(t *testing.T) {
	s, labels := synthScene(128, 256, 8, 3, 11)
	cfg := tinyConfig(60)
	d, err := makeDims(cfg, s.Bands, 3)
	if err != nil {
		t.Fatal(err)
	}
	tileNeed, wholeNeed := trainBytes(d, cfg, 128, 128), trainBytes(d, cfg, s.Rows, s.Cols)
	budget := (tileNeed + wholeNeed) / 2
	opts := TrainOptions{Config: cfg, TrainPerClass: 12, Backend: "go", Tile: 128, MaxMemoryBytes: budget}
	whole := opts
	whole.Whole = true
	if _, err := Train(context.Background(), s, labels, whole); !errors.As(err, new(*MemoryError)) {
		t.Fatalf("whole scene at %d bytes: error %v, want a MemoryError", budget, err)
	}
	builds := trainGraphBuilds.Load()
	m, err := Train(context.Background(), s, labels, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := trainGraphBuilds.Load() - builds; got != 1 {
		t.Errorf("windowed training built the step %d times, want once", got)
	}
	if m.meta.TrainTile != 128 {
		t.Errorf("model records training tile %d, want 128", m.meta.TrainTile)
	}
	whole.MaxMemoryBytes = 0
	mw, err := Train(context.Background(), s, labels, whole)
	if err != nil {
		t.Fatal(err)
	}
	if mw.meta.TrainTile != 0 {
		t.Errorf("whole-scene model records training tile %d, want 0", mw.meta.TrainTile)
	}
	acc := func(m *Model) float64 { return testAccuracy(t, m, predictWith(t, m, s), labels) }
	aw, aw2 := acc(m), acc(mw)
	t.Logf("test accuracy: windowed %.3f, whole %.3f", aw, aw2)
	if aw < 0.8 {
		t.Errorf("windowed test accuracy %.3f, want >= 0.8 (chance 0.33)", aw)
	}
	if m.meta.Drift == nil || m.meta.Drift.Pixels != int64(s.Rows*s.Cols) {
		t.Errorf("windowed drift statistics cover %v pixels, want each of the scene's %d once", m.meta.Drift, s.Rows*s.Cols)
	}
}

// TestWindowedStepDrawsDenseLabels: a tile owning more training pixels
// than a step holds trains on a fresh draw of them each step, each pixel
// at most once a step.
func TestWindowedStepDrawsDenseLabels(t *testing.T) {
	s, labels := synthScene(128, 256, 4, 3, 2)
	plan, err := trainGrid(s.Rows, s.Cols, TrainOptions{Tile: 128})
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, len(labels))
	y := make([]int32, len(labels))
	for i, v := range labels {
		idx[i], y[i] = i, v-1
	}
	tw := newTrainWindows(plan, s, idx, y, 3)
	if tw.rows != trainWindowMaxRows {
		t.Fatalf("step rows %d, want the cap %d", tw.rows, trainWindowMaxRows)
	}
	lo, hi, err := bandStretch(s)
	if err != nil {
		t.Fatal(err)
	}
	in := newInputSpec(InputStretch, 0, lo, hi)
	w := &tw.wins[0]
	owned := map[int]int32{}
	for j, li := range w.idx {
		owned[li] = w.y[j]
	}
	var first []int
	for step := range 2 {
		_, td, sidx, sy := tw.stepData(s, w, in, EncoderCell, false)
		td.finalize()
		seen := map[int]bool{}
		for j, li := range sidx {
			if c, ok := owned[li]; !ok || c != sy[j] || seen[li] {
				t.Fatalf("step %d row %d: pixel %d class %d is not one of the tile's, or repeated", step, j, li, sy[j])
			}
			seen[li] = true
		}
		if step == 0 {
			first = sidx
		} else if slicesEqual(first, sidx) {
			t.Error("two steps drew the same pixels")
		}
	}
}

// TestTrainTwoTilesWhole: Train takes a scene of two default tiles whole
// and records it, and trains it on tiles when a tile side is asked for.
func TestTrainTwoTilesWhole(t *testing.T) {
	s, labels := synthScene(24, 500, 4, 3, 5)
	for _, tc := range []struct {
		tile, wantTile int
	}{{0, 0}, {384, 384}} {
		opts := TrainOptions{Config: tinyConfig(3), TrainPerClass: 8, Backend: "go", Tile: tc.tile}
		m, err := Train(context.Background(), s, labels, opts)
		if err != nil {
			t.Fatal(err)
		}
		if m.TrainTile() != tc.wantTile {
			t.Errorf("--tile %d: trained on tiles of %d px, want %d (0: whole)", tc.tile, m.TrainTile(), tc.wantTile)
		}
	}
}
