package processor

import (
	"fmt"
	"sort"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
)

// TestGridShapesAreThePlanners: the shapes pnec backends --precompile
// compiles (GridShapes) are exactly the input shapes the planner gives
// scenes of many sizes, from 1 px to 10,000 px a side, on the model's grid
// (36 shapes, 11 of them tiles' too) and on a forced 100 px grid, with the
// whole-scene (recovered) and tile calls told apart; a product of the
// network's probabilities runs whole scenes unrecovered.
func TestGridShapesAreThePlanners(t *testing.T) {
	// The network's decision recovers whole scenes in the graph; the
	// default (fused) model's shapes are the same, none of them recovered.
	for name, m := range map[string]*model.Model{"network": fixture.LoadNetworkModel(t), "fused": fixture.LoadModel(t)} {
		t.Run(name, func(t *testing.T) { testGridShapesAreThePlanners(t, m) })
	}
}

func testGridShapesAreThePlanners(t *testing.T, m *model.Model) {
	fused := m.Decision().Fused()
	sides := []int{1, 2, 5, 63, 64, 65, 100, 101, 127, 128, 129, 200, 255, 256, 300, 320, 321, 383, 384, 385, 400, 700, 767, 768, 1000, 2048, 10000}
	for _, tc := range []struct {
		name         string
		opts         Options
		shapes, both int
	}{
		{"model's grid", Options{}, 36, 11},
		{"forced 100 px tiles", Options{TileSize: 100, Overlap: 16}, 0, 0},
		{"network probabilities", Options{Probabilities: ProbabilitiesNetwork, TopK: 2}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grid, err := GridShapes(m, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			planned := map[model.CallShape]bool{}
			opts := tc.opts
			opts.MaxMemoryBytes = 1 << 50
			for _, rows := range sides {
				for _, cols := range sides {
					p, _, err := PlanSceneLazy(assumedInfo(rows, cols, m.Bands()), m, opts)
					if err != nil {
						t.Fatalf("%dx%d: %v", rows, cols, err)
					}
					sh := model.CallShape{Rows: p.TileRows, Cols: p.TileCols, Recovered: p.Whole && opts.Probabilities != ProbabilitiesNetwork && !fused}
					if got, err := SceneShape(rows, cols, m, tc.opts); err != nil || got != sh {
						t.Fatalf("%dx%d: SceneShape %v, %v; the plan runs %v", rows, cols, got, err, sh)
					}
					planned[sh] = true
				}
			}
			if a, b := shapeList(grid), shapeList(keys(planned)); a != b {
				t.Errorf("GridShapes:\n%s\nthe planner's, scenes of %v px a side:\n%s", a, sides, b)
			}
			if len(grid) != len(keys(planned)) {
				t.Errorf("GridShapes lists %d shapes, %d distinct", len(grid), len(keys(planned)))
			}
			if fused {
				for _, sh := range grid {
					if sh.Recovered {
						t.Errorf("shape %v recovered in the graph for a fused decision", sh)
					}
				}
			}
			if tc.shapes > 0 && !fused {
				sizes := map[[2]int]bool{}
				both := 0
				for _, sh := range grid {
					if sh.Recovered {
						sizes[[2]int{sh.Rows, sh.Cols}] = true
						if sh.Rows > tiling.Rung(CanonicalTile, tiling.LadderStep) || sh.Cols > tiling.Rung(CanonicalTile, tiling.LadderStep) {
							t.Errorf("whole-scene shape %v beyond the tile", sh)
						}
					} else {
						both++
					}
				}
				if len(sizes) != tc.shapes || both != tc.both {
					t.Errorf("%d whole-scene shapes and %d tile shapes, want %d and %d", len(sizes), both, tc.shapes, tc.both)
				}
			}
		})
	}
}

func keys(m map[model.CallShape]bool) []model.CallShape {
	var out []model.CallShape
	for k := range m {
		out = append(out, k)
	}
	return out
}

// shapeList is the shapes sorted, one a line.
func shapeList(s []model.CallShape) string {
	var lines []string
	for _, sh := range s {
		lines = append(lines, fmt.Sprintf("%4d x %4d %v", sh.Rows, sh.Cols, sh.Recovered))
	}
	sort.Strings(lines)
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}
