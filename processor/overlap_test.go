package processor

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
)

// TestOverlapSweep measures tiled-vs-whole agreement per overlap, the
// measurement the default overlap (tiling.DefaultOverlapPixels) is chosen
// from, and asserts what that choice rests on: from 8 px on, and at the
// default, tiled runs keep >= 99.5% agreement overall and >= 99% within
// 8 px of tile edges (minAgreement, minEdgeAgreement). By default it runs
// 96 px tiles with no overlap (reported only), 8 px and the default; the
// whole sweep (tiles of 64 to 128 px, overlaps of 0 to 48 px, the table in
// docs/classify.md) classifies the sceneFixture scene two dozen times:
//
//	PNEC_OVERLAP_SWEEP=1 go test -run TestOverlapSweep -v ./processor
//
// Rerun it when the network changes.
func TestOverlapSweep(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	whole := readProduct(t, func() string {
		out := filepath.Join(dir, "whole.tif")
		classify(t, f, Options{}, out)
		return out
	}())
	tiles, overlaps := []int{96}, []int{tiling.OverlapNone, 8, tiling.OverlapAuto}
	if os.Getenv("PNEC_OVERLAP_SWEEP") != "" {
		tiles, overlaps = []int{64, 96, 128}, []int{tiling.OverlapNone, 4, 8, 12, 16, 24, 32, 48, tiling.OverlapAuto}
	}
	var table string
	for _, tile := range tiles {
		for _, overlap := range overlaps {
			if overlap >= tile/2 {
				continue
			}
			opts := Options{TileSize: tile, Overlap: overlap}
			if checkTile(opts, f.model.Recovery().Window) != nil {
				continue
			}
			out := filepath.Join(dir, fmt.Sprintf("t%d_%d.tif", tile, overlap))
			classify(t, f, opts, out)
			plan, _, err := PlanSceneInfo(assumedInfo(f.rows, f.cols, f.bands), f.model, opts)
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
			ov := tiling.ResolveOverlap(overlap, tile, model.Stride)
			name := fmt.Sprint(ov)
			if overlap == tiling.OverlapAuto {
				name += " (default)"
			}
			overall, edge := float64(agree)/float64(n), float64(agreeEdge)/float64(max(nEdge, 1))
			// Extra reads and network passes: tile area over core area.
			work := float64(len(plan.Tiles)*plan.TileRows*plan.TileCols) / float64(f.rows*f.cols)
			table += fmt.Sprintf("| %d | %s | %d | %.2fx | %.2f%% | %.2f%% |\n", tile, name, len(plan.Tiles), work, 100*overall, 100*edge)
			if ov >= 8 && (overall < minAgreement || edge < minEdgeAgreement) {
				t.Errorf("tile %d px, overlap %s px: agreement %.4f overall, %.4f within 8 px of tile edges; want >= %.3f and >= %.3f",
					tile, name, overall, edge, minAgreement, minEdgeAgreement)
			}
		}
	}
	t.Logf("sceneFixture %dx%dx%d, recovery window %d\n| tile px | overlap px | tiles | pixels run | agreement | within 8 px of tile edges |\n|---|---|---|---|---|---|\n%s",
		f.cols, f.rows, f.bands, f.model.Recovery().Window, table)
}
