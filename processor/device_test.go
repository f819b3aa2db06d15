package processor

import (
	"context"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
)

// graphPredictor is the real predictor preparing its input in the
// compiled graph as on XLA (model.PrepGraph) on the Go backend. It counts
// the whole scenes recovered in the graph and the calls in flight at once
// (the most seen); with dev set it reports those device figures to the
// planner (as on a GPU) and passes the planner's device tiles on.
type graphPredictor struct {
	*model.Predictor
	dev       tiling.DeviceMemory
	recovered atomic.Int32
	inFlight  atomic.Int32
	most      atomic.Int32
	// second is closed when a second call starts: the first call waits
	// for it (at most a few seconds), so that a run with two device tiles
	// shows its overlap whatever the machine's load.
	second   chan struct{}
	once     sync.Once
	firstDue atomic.Bool
}

func newGraphPredictor(t *testing.T, m *model.Model, dev tiling.DeviceMemory) *graphPredictor {
	t.Helper()
	p, err := model.NewPredictorPrep(m, "go", model.PrepGraph)
	if err != nil {
		t.Fatal(err)
	}
	if !p.PrepInGraph() {
		t.Fatal("model.PrepGraph predictor does not prepare in the graph")
	}
	g := &graphPredictor{Predictor: p, dev: dev, second: make(chan struct{})}
	g.firstDue.Store(true)
	return g
}

func (g *graphPredictor) DeviceMemory(rows, cols int) (tiling.DeviceMemory, error) {
	if !g.dev.Present() {
		return g.Predictor.DeviceMemory(rows, cols)
	}
	return g.dev, nil
}

func (g *graphPredictor) call(f func() (model.Prediction, error)) (model.Prediction, error) {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	if n > 1 {
		g.once.Do(func() { close(g.second) })
	}
	if g.firstDue.CompareAndSwap(true, false) && g.Predictor.DeviceTiles() > 1 {
		select {
		case <-g.second:
		case <-time.After(5 * time.Second):
		}
	}
	return f()
}

func (g *graphPredictor) Predict(ctx context.Context, s model.Scene) (model.Prediction, error) {
	return g.call(func() (model.Prediction, error) { return g.Predictor.Predict(ctx, s) })
}

func (g *graphPredictor) PredictRecovered(ctx context.Context, s model.Scene) (model.Prediction, error) {
	g.recovered.Add(1)
	return g.call(func() (model.Prediction, error) { return g.Predictor.PredictRecovered(ctx, s) })
}

func fixtureModel(t *testing.T) *model.Model {
	t.Helper()
	m := fixture.LoadModel(t)
	return m
}

// deviceScene writes a rows x cols scene of m's bands with scattered
// no-data pixels and returns its path.
func deviceScene(t *testing.T, m *model.Model, dir string, rows, cols int) string {
	t.Helper()
	data, _ := synthScene(rows, cols, m.Bands(), 3, 5)
	for i := 0; i < rows*cols; i += 41 {
		for b := 0; b < m.Bands(); b++ {
			data[i*m.Bands()+b] = fixNoData
		}
	}
	scene := filepath.Join(dir, "scene.tif")
	if err := writeScene(scene, rows, cols, m.Bands(), data, fixture.GeoRef); err != nil {
		t.Fatal(err)
	}
	return scene
}

// classifyWith classifies scene with m and opts on pred (nil: the
// classifier's own predictor) into out.
func classifyWith(t *testing.T, m *model.Model, opts Options, pred predictor, scene, out string) Result {
	t.Helper()
	c, err := NewClassifier(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if pred != nil {
		closePredictor(c)
		c.pred = pred
	}
	defer c.Close()
	res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// sameProducts fails unless the class bands of a and b are equal and their
// reliabilities within tol.
func sameProducts(t *testing.T, what, a, b string, tol float64) {
	t.Helper()
	pa, pb := readProduct(t, a), readProduct(t, b)
	for i := range pa.class {
		if pa.class[i] != pb.class[i] || math.Abs(float64(pa.rel[i]-pb.rel[i])) > tol {
			t.Fatalf("%s: pixel %d: class %d rel %g, want class %d rel %g", what, i, pb.class[i], pb.rel[i], pa.class[i], pa.rel[i])
		}
	}
}

// TestPaddedWholeRecoveredInGraph: a scene that runs whole on an input
// padded to the ladder (61 x 50 px on 64 x 64) is recovered in the
// compiled graph where the predictor prepares its input there (XLA), and
// the product equals the host-prepared predictor's, recovered on the
// canvas: the padding is no-data, which the in-graph recovery leaves out
// of every window as the canvas's border clips it. Before, a padded whole
// image failed runTiles' "input equals the scene" test and fell back to
// the host recovery.
func TestPaddedWholeRecoveredInGraph(t *testing.T) {
	// What it checks is the network decision's alone (a fused decision
	// recovers on the host, and its probe classifies its window itself).
	m := fixture.LoadNetworkModel(t)
	dir := t.TempDir()
	const rows, cols = 61, 50
	scene := deviceScene(t, m, dir, rows, cols)
	opts := Options{Probabilities: ProbabilitiesRecovered}
	host, err := model.NewPredictorPrep(m, "go", model.PrepHost)
	if err != nil {
		t.Fatal(err)
	}
	hostOut, graphOut := filepath.Join(dir, "host.tif"), filepath.Join(dir, "graph.tif")
	res := classifyWith(t, m, opts, host, scene, hostOut)
	if res.Tiles != 1 || res.TileRows != tiling.Rung(rows, tiling.LadderStep) || res.TileCols != tiling.Rung(cols, tiling.LadderStep) {
		t.Fatalf("set-up: plan %s, want the whole image padded to %dx%d", res.Plan, tiling.Rung(cols, tiling.LadderStep), tiling.Rung(rows, tiling.LadderStep))
	}
	g := newGraphPredictor(t, m, tiling.DeviceMemory{})
	gres := classifyWith(t, m, opts, g, scene, graphOut)
	// Once for the map, and once more for the drift probe's recalibrated
	// run, which takes the map's call (TestClassifyDriftProbeRuns).
	want := 1
	if gres.Drift != nil && gres.Drift.ProbePixels > 0 {
		want = 2
	}
	if n := int(g.recovered.Load()); n != want {
		t.Fatalf("the padded whole image was recovered in the graph %d times, want %d", n, want)
	}
	sameProducts(t, "recovered in the graph", hostOut, graphOut, 1e-5)
	compareProbabilities(t, "recovered in the graph", hostOut, graphOut)
}

// TestDeviceTilesOverlapCalls: where the device holds two tiles (injected
// figures, as a GPU's), the planner tells the predictor so and the
// classifier runs the next tile's call while the current one runs (the
// real predictor stages its scene meanwhile); the product is the one of a
// device that holds one tile at a time, and of the host-prepared run.
func TestDeviceTilesOverlapCalls(t *testing.T) {
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	scene := deviceScene(t, m, dir, 150, 140)
	opts := Options{TileSize: 64, Overlap: 16}
	const gib = int64(1) << 30
	var outs []string
	for _, tc := range []struct {
		name  string
		dev   tiling.DeviceMemory
		tiles int
	}{
		{"one", tiling.DeviceMemory{Device: "cuda:0 (injected)", LimitBytes: 10 * gib, InUseBytes: gib, TileBytes: 6 * gib}, 1},
		{"two", tiling.DeviceMemory{Device: "cuda:0 (injected)", LimitBytes: 10 * gib, InUseBytes: gib, TileBytes: 4 * gib}, 2},
	} {
		g := newGraphPredictor(t, m, tc.dev)
		out := filepath.Join(dir, tc.name+".tif")
		res := classifyWith(t, m, opts, g, scene, out)
		outs = append(outs, out)
		if res.Tiles < 9 || res.Flight.Device != tc.tiles || g.Predictor.DeviceTiles() != tc.tiles {
			t.Fatalf("%s: %d tiles, flight %+v, predictor holds %d device tiles; want >= 9 tiles and %d device tiles",
				tc.name, res.Tiles, res.Flight, g.Predictor.DeviceTiles(), tc.tiles)
		}
		if most := g.most.Load(); int(most) != tc.tiles {
			t.Errorf("%s: at most %d calls at once, want %d", tc.name, most, tc.tiles)
		}
	}
	sameProducts(t, "two device tiles against one", outs[0], outs[1], 0)
	host := filepath.Join(dir, "host.tif")
	classifyWith(t, m, opts, nil, scene, host)
	sameProducts(t, "in the graph against on the host", host, outs[1], 1e-5)
}
