package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/tiling"
)

// TestBudgetNeverChangesThePlan: from the smallest budget that works to
// an unlimited one, a scene gets one plan (the model's grid); the budget
// only decides the tiles in flight. A budget below the smallest is refused
// with a BudgetError naming it, and that figure is exact: it plans, a
// byte less does not.
func TestBudgetNeverChangesThePlan(t *testing.T) {
	m := fixture.LoadModel(t)
	for _, sz := range [][2]int{{2000, 2000}, {300, 260}, {349, 1905}, {5000, 200}} {
		rows, cols := sz[0], sz[1]
		t.Run(fmt.Sprintf("%dx%d", cols, rows), func(t *testing.T) {
			info := assumedInfo(rows, cols, m.Bands())
			_, _, err := PlanSceneInfo(info, m, Options{MaxMemoryBytes: 1})
			var be *BudgetError
			if !errors.As(err, &be) || !errors.Is(err, tiling.ErrBudget) {
				t.Fatalf("1 byte: got %v, want a BudgetError", err)
			}
			need1 := be.NeedBytes
			ref, _, err := PlanSceneInfo(info, m, Options{MaxMemoryBytes: need1})
			if err != nil {
				t.Fatalf("the named smallest budget %d: %v", need1, err)
			}
			if _, _, err := PlanSceneInfo(info, m, Options{MaxMemoryBytes: need1 - 1}); !errors.Is(err, tiling.ErrBudget) {
				t.Fatalf("a byte below the named smallest budget: %v, want ErrBudget", err)
			}
			if want := rows <= CanonicalTile && cols <= CanonicalTile; ref.Whole != want {
				t.Errorf("%v: whole %v, want %v (canonical tile %d)", ref, ref.Whole, want, CanonicalTile)
			}
			need2 := PlannedBytes(ref, info, m, Options{})
			for _, tc := range []struct {
				budget int64
				host   int
			}{{need1, 1}, {need2 - 1, 1}, {need2, 2}, {1 << 40, 2}} {
				p, _, err := PlanSceneInfo(info, m, Options{MaxMemoryBytes: tc.budget})
				if err != nil {
					t.Fatalf("budget %d: %v", tc.budget, err)
				}
				if p.String() != ref.String() || p.TileRows != ref.TileRows || p.TileCols != ref.TileCols || p.Tile(p.NumTiles()-1) != ref.Tile(ref.NumTiles()-1) {
					t.Errorf("budget %d: plan %v, want %v as at every budget", tc.budget, p, ref)
				}
				f, planned, err := PlanFlight(p, info, m, Options{}, tc.budget, tiling.DeviceMemory{})
				if err != nil || f.Host != tc.host || planned > tc.budget {
					t.Errorf("budget %d: flight %+v, planned %d, %v; want %d tiles in flight within the budget", tc.budget, f, planned, err, tc.host)
				}
			}
		})
	}
}

// TestBudgetErrorNamesSmallest: the refusal of a budget too small for one
// tile says what the plan needs, as cmd/pnec words it into --max-memory.
func TestBudgetErrorNamesSmallest(t *testing.T) {
	m := fixture.LoadModel(t)
	_, _, err := PlanSceneInfo(assumedInfo(10000, 10000, m.Bands()), m, Options{MaxMemoryBytes: 64 << 20})
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a BudgetError", err)
	}
	// The need is rounded up (2.02 GiB is "2.1 GiB", not "2.0 GiB" beside
	// a 2.0 GiB budget), as the --max-memory cmd/pnec names.
	need := strings.Replace(strings.Replace(be.NeedSize(), "G", " GiB", 1), "M", " MiB", 1)
	for _, want := range []string{"384x384 tiles", "10000 px wide", "need at least " + need + " (one tile in flight)", "the budget is 64.0 MiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if got := (&BudgetError{Cols: 4096, Rows: 1024, Bands: 400, TileRows: 384, TileCols: 384, NeedBytes: 2070 << 20, BudgetBytes: 2 << 30}).Error(); !strings.Contains(got, "need at least 2.1 GiB (one tile in flight), the budget is 2.0 GiB") {
		t.Errorf("got %q, want the need rounded up", got)
	}
	_, _, err = PlanSceneInfo(assumedInfo(300, 200, m.Bands()), m, Options{MaxMemoryBytes: 64 << 20})
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "the whole 200x300 scene (cols x rows) of 8 bands runs as one 256x320 tile") {
		t.Errorf("whole image: got %v", err)
	}
}

// sizedPredictor is a network on a pretend accelerator: the pointwise
// network with the device figures a backend would report (injected: no
// GPU here), and the shapes it was asked to size.
type sizedPredictor struct {
	pointwise
	dev   tiling.DeviceMemory
	asked [][2]int
	told  []int // SetDeviceTiles calls
}

func (p *sizedPredictor) DeviceMemory(rows, cols int) (tiling.DeviceMemory, error) {
	p.asked = append(p.asked, [2]int{rows, cols})
	return p.dev, nil
}

func (p *sizedPredictor) SetDeviceTiles(n int) { p.told = append(p.told, n) }

// TestClassifyFitsTheDevice: the planner asks the predictor's device what
// one tile of the plan's input shape needs, keeps as many in flight as the
// device holds, and refuses the run before any tile when not even one
// fits: no product, an error naming the device.
func TestClassifyFitsTheDevice(t *testing.T) {
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	const rows, cols = 90, 101
	scene := writeSynthScene(t, filepath.Join(dir, "scene.tif"), rows, cols, m.Bands(), 3, 5)
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name   string
		dev    tiling.DeviceMemory
		tiles  int
		refuse bool
	}{
		{"two fit", tiling.DeviceMemory{Device: "cuda:0 (injected)", LimitBytes: 60 * gib, InUseBytes: gib, TileBytes: 2 * gib}, 2, false},
		{"one fits", tiling.DeviceMemory{Device: "cuda:0 (injected)", LimitBytes: 60 * gib, InUseBytes: 40 * gib, TileBytes: 15 * gib}, 1, false},
		{"none fits", tiling.DeviceMemory{Device: "cuda:0 (injected)", LimitBytes: 8 * gib, InUseBytes: gib, TileBytes: 30 * gib}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClassifier(m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			closePredictor(c)
			sp := &sizedPredictor{pointwise: pointwise{classes: len(m.Classes())}, dev: tc.dev}
			c.pred = sp
			defer c.Close()
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".tif")
			res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
			if want := [][2]int{{tiling.Rung(rows, tiling.LadderStep), tiling.Rung(cols, tiling.LadderStep)}}; fmt.Sprint(sp.asked) != fmt.Sprint(want) {
				t.Errorf("device asked for shapes %v, want the plan's input %v", sp.asked, want)
			}
			if tc.refuse {
				if len(sp.told) > 0 {
					t.Errorf("refused run told the predictor %v device tiles", sp.told)
				}
				if !errors.Is(err, tiling.ErrDevice) || !strings.Contains(err.Error(), "cuda:0 (injected)") {
					t.Fatalf("got %v, want an ErrDevice naming the device", err)
				}
				if left := leftoverFiles(t, dir, out); len(left) > 0 {
					t.Errorf("refused run left %v", left)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Flight.Device != tc.tiles || res.Flight.Host != tiling.MaxInFlight {
				t.Errorf("flight %+v, want %d on the device and %d on the host", res.Flight, tc.tiles, tiling.MaxInFlight)
			}
			if fmt.Sprint(sp.told) != fmt.Sprint([]int{tc.tiles}) {
				t.Errorf("predictor told %v device tiles, want [%d]", sp.told, tc.tiles)
			}
		})
	}
}

// leftoverFiles lists the files of dir named like out (the product and
// its staging files).
func leftoverFiles(t *testing.T, dir, out string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+strings.TrimSuffix(filepath.Base(out), ".tif")+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSameMapAnyBudget: the budget decides how many tiles are in flight,
// never the map: a scene larger than the canonical tile, classified by the
// real network from the smallest budget that works (one tile in flight) to
// an unlimited one, gives byte-identical class and reliability bands. It
// failed before the grid followed the model alone: the smallest budget
// ran 64 px tiles, a larger one larger tiles, an unlimited one the whole
// image, each another map.
func TestSameMapAnyBudget(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	const rows, cols = 392, 436 // two tiles each way on the canonical grid
	scene := writeSynthScene(t, filepath.Join(dir, "scene.tif"), rows, cols, f.bands, fixClasses, 11)
	info := assumedInfo(rows, cols, f.bands)
	var be *BudgetError
	if _, _, err := PlanSceneInfo(info, f.model, Options{MaxMemoryBytes: 1}); !errors.As(err, &be) {
		t.Fatalf("1 byte: %v, want a BudgetError", err)
	}
	plan, _, err := PlanSceneInfo(info, f.model, Options{MaxMemoryBytes: 1 << 40, TileSize: 384})
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	var firstPlan string
	for i, budget := range []int64{be.NeedBytes, PlannedBytes(plan, info, f.model, Options{}), 1 << 40} {
		out := filepath.Join(dir, fmt.Sprintf("p%d.tif", i))
		c, err := NewClassifier(f.model, Options{MaxMemoryBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
		c.Close()
		if err != nil {
			t.Fatalf("budget %s: %v", memory.FormatBytes(budget), err)
		}
		p := readProduct(t, out)
		b := productBytes(p)
		t.Logf("budget %s: %s, %+v", memory.FormatBytes(budget), res.Plan, res.Flight)
		if i == 0 {
			first, firstPlan = b, res.Plan
			continue
		}
		if res.Plan != firstPlan || !bytes.Equal(b, first) {
			t.Errorf("budget %s: plan %q and its product differ from the smallest budget's (%q)", memory.FormatBytes(budget), res.Plan, firstPlan)
		}
	}
}

// productBytes is a product's class and reliability bands as bytes.
func productBytes(p product) []byte {
	b := make([]byte, 0, 2*len(p.class))
	for i := range p.class {
		b = append(b, byte(p.class[i]), byte(p.rel[i]))
	}
	return b
}

// TestGridMatchesForcedTile: where the rule says a forced tile gives the
// model's own grid, the maps are byte-identical: a scene within the
// canonical tile against any tile at least its size (the whole image,
// padded alike), a larger scene against --tile CanonicalTile.
func TestGridMatchesForcedTile(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		rows, cols, tile int
	}{
		{f.rows, f.cols, 1000},    // whole image either way
		{f.rows, f.cols, f.cols},  // a tile just the scene's size
		{392, 436, CanonicalTile}, // the canonical tiles
	} {
		scene := f.scene
		if tc.rows != f.rows {
			scene = writeSynthScene(t, filepath.Join(dir, fmt.Sprintf("s%dx%d.tif", tc.cols, tc.rows)), tc.rows, tc.cols, f.bands, fixClasses, 11)
		}
		run := func(opts Options, name string) (Result, []byte) {
			c, err := NewClassifier(f.model, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			out := filepath.Join(dir, name)
			res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			return res, productBytes(readProduct(t, out))
		}
		gres, grid := run(Options{}, "grid.tif")
		fres, forced := run(Options{TileSize: tc.tile}, "forced.tif")
		if gres.Plan != fres.Plan || !bytes.Equal(grid, forced) {
			t.Errorf("%dx%d: the model's grid (%s) and --tile %d (%s) give different maps", tc.cols, tc.rows, gres.Plan, tc.tile, fres.Plan)
		}
	}
}
