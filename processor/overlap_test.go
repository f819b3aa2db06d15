package processor

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestOverlapSweep measures tiled-vs-whole agreement per overlap, the
// measurement the default overlap (tiling.DefaultOverlap) is chosen from:
// the smallest overlap that keeps >= 99.5% overall and >= 99% within 8 px
// of tile edges, with margin. It prints a Markdown table (README,
// "Classifying scenes"). It runs only when asked, since it classifies the
// sceneFixture scene a dozen times:
//
//	PNEC_OVERLAP_SWEEP=1 go test -run TestOverlapSweep -v ./processor
//
// Rerun it when the network changes.
func TestOverlapSweep(t *testing.T) {
	if os.Getenv("PNEC_OVERLAP_SWEEP") == "" {
		t.Skip("set PNEC_OVERLAP_SWEEP=1 to measure agreement per overlap")
	}
	f := getFixture(t)
	dir := t.TempDir()
	whole := readProduct(t, func() string {
		out := filepath.Join(dir, "whole.tif")
		classify(t, f, Options{}, out)
		return out
	}())
	var table string
	for _, tile := range []int{64, 96, 128} {
		for _, overlap := range []int{-1, 4, 8, 12, 16, 24, 32, 48} {
			if overlap >= tile/2 {
				continue
			}
			opts := Options{TileSize: tile, Overlap: overlap}
			if checkTile(opts, f.model.Recovery().Window) != nil {
				continue
			}
			out := filepath.Join(dir, fmt.Sprintf("t%d_%d.tif", tile, overlap))
			classify(t, f, opts, out)
			plan, _, err := PlanScene(f.rows, f.cols, f.bands, f.model, opts)
			if err != nil {
				t.Fatal(err)
			}
			tiled := readProduct(t, out)
			edges := tileEdges(plan, 8)
			var n, agree, nEdge, agreeEdge int
			for i := range whole.class {
				if !f.valid[i] {
					continue
				}
				same := whole.class[i] == tiled.class[i]
				n++
				if same {
					agree++
				}
				if edges[i] {
					nEdge++
					if same {
						agreeEdge++
					}
				}
			}
			ov := max(overlap, 0)
			// Extra reads and network passes: tile area over core area.
			work := float64(len(plan.Tiles)*plan.TileRows*plan.TileCols) / float64(f.rows*f.cols)
			table += fmt.Sprintf("| %d | %d | %d | %.2fx | %.2f%% | %.2f%% |\n", tile, ov, len(plan.Tiles), work,
				100*float64(agree)/float64(n), 100*float64(agreeEdge)/float64(max(nEdge, 1)))
		}
	}
	t.Logf("sceneFixture %dx%dx%d, recovery window %d\n| tile px | overlap px | tiles | pixels run | agreement | within 8 px of tile edges |\n|---|---|---|---|---|---|\n%s",
		f.cols, f.rows, f.bands, f.model.Recovery().Window, table)
}
