package model

import (
	"context"
	"errors"
	"math"
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

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestTrainWindowsOwnEachPixelOnce: every training pixel trains in the one
// tile whose core holds it, at its place in that tile's input.
func TestTrainWindowsOwnEachPixelOnce(t *testing.T) {
	s, _ := synthScene(150, 230, 4, 3, 3)
	plan, err := trainGrid(s.Rows, s.Cols, TrainOptions{Tile: 64})
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
	n := 0
	for _, w := range tw.wins {
		in := w.tile.Input
		for j, li := range w.idx {
			r, c := in.Row+li/in.Cols, in.Col+li%in.Cols
			if !w.tile.Core.Contains(c, r) {
				t.Fatalf("pixel (%d,%d) trains in tile %d, whose core %v does not hold it", r, c, w.tile.Index, w.tile.Core)
			}
			if got := r*s.Cols + c; got != idx[n+j] && !contains(idx, got) {
				t.Fatalf("window pixel (%d,%d) is no training pixel", r, c)
			}
		}
		n += len(w.idx)
		if len(w.idx) > tw.rows {
			t.Errorf("tile %d owns %d pixels, more than the step's %d rows", w.tile.Index, len(w.idx), tw.rows)
		}
	}
	if n != len(idx) {
		t.Errorf("windows own %d training pixels, want %d", n, len(idx))
	}
	// A cycle visits each tile once.
	seen := map[int]int{}
	for range len(tw.wins) {
		seen[tw.next().tile.Index]++
	}
	if len(seen) != len(tw.wins) {
		t.Errorf("a cycle of %d steps saw %d tiles", len(tw.wins), len(seen))
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestWindowedStepLossIgnoresPadding: a windowed step's rows padded with
// rows of class -1 give the loss and accuracy of its training pixels alone
// (the cross-entropy's scale); without the scale the padding dilutes them.
func TestWindowedStepLossIgnoresPadding(t *testing.T) {
	s, labels := synthScene(32, 32, 6, 3, 9)
	cfg := tinyConfig(4)
	cfg.Augment = Augment{}
	d, err := makeDims(cfg, s.Bands, 3)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, err := bandStretch(s)
	if err != nil {
		t.Fatal(err)
	}
	in := newInputSpec(cfg.Input, cfg.InputLevels, lo, hi)
	idx := []int{3, 100, 517, 700, 901, 1000}
	y := make([]int32, len(idx))
	for t, i := range idx {
		y[t] = labels[i] - 1
	}
	pidx := append(append([]int(nil), idx...), 0, 0, 0, 0, 0, 0)
	py := append(append([]int32(nil), y...), -1, -1, -1, -1, -1, -1)
	step := func(idx []int, y []int32, scale float32) (float64, float64) {
		tr, err := newTrainer(testBackend(t), d, cfg, initParams(d, cfg, rand.New(rand.NewPCG(1, 2))), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.finalize()
		td := newTrainData(s, in, idx, y, cfg.Encoder, false)
		defer td.finalize()
		td.ceScale = scale
		loss, acc, err := tr.step(td, 1)
		if err != nil {
			t.Fatal(err)
		}
		return loss, acc
	}
	l0, a0 := step(idx, y, 0)
	l1, a1 := step(pidx, py, 2)
	if math.Abs(l1-l0) > 1e-5*math.Abs(l0) || math.Abs(a1-a0) > 1e-6 {
		t.Errorf("padded step loss %g acc %g, unpadded %g %g", l1, a1, l0, a0)
	}
	if l2, _ := step(pidx, py, 1); math.Abs(l2-l0) < 1e-3*math.Abs(l0) {
		t.Errorf("padding without the scale left the loss at %g (%g): the test cannot see the scale", l2, l0)
	}
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
