package processor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
)

// TestClassifyMasked classifies a scene within a mask (a raster on the
// scene's grid: the left 40 columns and a block on the right) with the
// pointwise network: outside is no-data; inside, away from the mask's
// edge by the recovery halo, the product is the unmasked one; tiled runs
// give the masked whole-image product exactly, and tiles wholly outside
// the mask are not run. The model decides as the network does: a fused
// decision aligns the pixels it is given, the masked ones or a tile's, on
// their own (model.NewAlignedReference).
func TestClassifyMasked(t *testing.T) {
	m := fixture.LoadNetworkModel(t)
	dir := t.TempDir()
	const rows, cols = 101, 90
	scene := writeSynthScene(t, filepath.Join(dir, "scene.tif"), rows, cols, m.Bands(), 3, 11)
	insideAt := func(r, c int) bool { return c < 40 || (r >= 70 && r < 90 && c >= 60 && c < 80) }
	mask := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if insideAt(r, c) {
				mask[r*cols+c] = 1
			}
		}
	}
	maskPath := filepath.Join(dir, "mask.tif")
	if err := fixture.WriteFloat32(maskPath, rows, cols, 1, mask, fixture.GeoRef, -1); err != nil {
		t.Fatal(err)
	}
	run := func(opts Options, maskName, out string) (Result, int32) {
		t.Helper()
		c, err := NewClassifier(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		closePredictor(c)
		var n atomic.Int32
		c.pred = counting{pointwise{classes: len(m.Classes())}, &n} // preflight_test.go's
		defer c.Close()
		res, err := c.Run(context.Background(), Request{Scene: scene, Mask: maskName, Out: filepath.Join(dir, out)})
		if err != nil {
			t.Fatal(err)
		}
		return res, n.Load()
	}
	run(Options{}, "", "plain.tif")
	plain := readProduct(t, filepath.Join(dir, "plain.tif"))
	res, _ := run(Options{Probabilities: ProbabilitiesRecovered}, maskPath, "whole.tif")
	whole := readProduct(t, filepath.Join(dir, "whole.tif"))
	want := int64(0)
	halo := m.Recovery().Halo()
	far := 0 // inside pixels compared with the unmasked product
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			i := r*cols + c
			if !insideAt(r, c) {
				if whole.class[i] != 0 {
					t.Fatalf("pixel (%d,%d) outside the mask has class %d, want no-data", r, c, whole.class[i])
				}
				continue
			}
			want++
			if whole.class[i] == 0 {
				t.Fatalf("pixel (%d,%d) inside the mask is no-data", r, c)
			}
			clear := true
			for dr := -halo; dr <= halo && clear; dr++ {
				for dc := -halo; dc <= halo; dc++ {
					rr, cc := r+dr, c+dc
					if rr >= 0 && rr < rows && cc >= 0 && cc < cols && !insideAt(rr, cc) {
						clear = false
						break
					}
				}
			}
			if clear {
				far++
				if whole.class[i] != plain.class[i] || math.Abs(float64(whole.rel[i]-plain.rel[i])) > 1 {
					t.Fatalf("pixel (%d,%d), %d px inside the mask: class %d rel %v, unmasked %d %v", r, c, halo, whole.class[i], whole.rel[i], plain.class[i], plain.rel[i])
				}
			}
		}
	}
	if res.MaskPixels != want || far < 1000 {
		t.Errorf("got %d mask pixels (want %d), compared %d pixels away from its edge", res.MaskPixels, want, far)
	}
	for _, tc := range []struct{ tile, overlap int }{{32, -1}, {24, 0}, {48, 8}} {
		out := fmt.Sprintf("t%d.tif", tc.tile)
		res, ran := run(Options{TileSize: tc.tile, Overlap: tc.overlap, Probabilities: ProbabilitiesRecovered}, maskPath, out)
		got := readProduct(t, filepath.Join(dir, out))
		diff := 0
		for i := range got.class {
			if got.class[i] != whole.class[i] || math.Abs(float64(got.rel[i]-whole.rel[i])) > 1 {
				diff++
			}
		}
		t.Logf("%s: %d of %d tiles outside the mask, %d run", res.Plan, res.TilesSkipped, res.Tiles, ran)
		if diff > 0 {
			t.Errorf("tile %d: %d pixels differ from the masked whole-image run, want 0", tc.tile, diff)
		}
		compareProbabilities(t, fmt.Sprintf("tile %d masked", tc.tile), filepath.Join(dir, "whole.tif"), filepath.Join(dir, out))
		// The drift probe classifies its window twice after the tiles.
		probeRuns := int32(0)
		if res.Drift != nil && res.Drift.ProbePixels > 0 {
			probeRuns = 2
		}
		if res.TilesSkipped == 0 || ran != int32(res.Tiles-res.TilesSkipped)+probeRuns {
			t.Errorf("tile %d: %d tiles skipped, %d network runs for %d tiles (%d of them the drift probe's): want tiles outside the mask skipped and not run", tc.tile, res.TilesSkipped, ran, res.Tiles, probeRuns)
		}
	}
}

// TestClassifyMaskErrors: a mask that does not overlap the scene, or does
// not open, fails before any work with the scene and the mask named.
func TestClassifyMaskErrors(t *testing.T) {
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "scene.tif"), 2)
	empty := filepath.Join(dir, "empty.tif")
	if err := fixture.WriteFloat32(empty, fixture.Rows, fixture.Cols, 1, make([]float32, fixture.Rows*fixture.Cols), fixture.GeoRef, -1); err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		mask   string
		target error
	}{{empty, geo.ErrMaskNoOverlap}, {filepath.Join(dir, "missing.gpkg"), nil}} {
		_, err := c.Run(context.Background(), Request{Scene: scene, Mask: tc.mask, Out: filepath.Join(dir, "p.tif")})
		if err == nil || (tc.target != nil && !errors.Is(err, tc.target)) {
			t.Errorf("mask %s: got %v, want an error (%v)", tc.mask, err, tc.target)
		}
	}
	if ents := listFiles(t, dir); len(ents) != 2 {
		t.Errorf("directory holds %v, want only the scene and the empty mask", ents)
	}
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
