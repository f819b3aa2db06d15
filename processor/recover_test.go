package processor

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/tiling"
)

// deviceRecovery stands for a predictor on an XLA device: it describes an
// XLA backend and recovers a whole scene itself (as the compiled graph
// does), counting the scenes it recovered.
type deviceRecovery struct {
	pointwise
	rp        tiling.Recovery
	recovered *int
}

func (d deviceRecovery) Describe() backend.Backend {
	b, _ := backend.Parse("xla:cpu")
	return b
}

func (d deviceRecovery) PredictRecovered(ctx context.Context, s model.Scene) (model.Prediction, error) {
	p, err := d.Predict(ctx, s)
	if err != nil {
		return p, err
	}
	p.Prob = tiling.Recover(p.Prob, s.Valid, s.Rows, s.Cols, p.Classes, d.rp)
	p.Recovered = true
	*d.recovered++
	return p, nil
}

// TestWholeSceneRecoveredOnDevice: a scene run as one tile on a backend
// that prepares its input in the graph comes back recovered
// (PredictRecovered), and the stitcher then writes it without recovering
// again: the product and its recovered probabilities equal the host
// recovery's. Tiled runs, and runs writing the network's probabilities
// (which need P_up), keep the host recovery.
func TestWholeSceneRecoveredOnDevice(t *testing.T) {
	// What it checks is the network decision's alone (a fused decision
	// recovers on the host, and its probe classifies its window itself).
	m := fixture.LoadNetworkModel(t)
	dir := t.TempDir()
	const rows, cols = 61, 50
	scene := deviceScene(t, m, dir, rows, cols)
	recovered := 0
	run := func(device bool, opts Options, out string) Result {
		c, err := NewClassifier(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		closePredictor(c)
		c.pred = pointwise{classes: len(m.Classes())}
		if device {
			c.pred = deviceRecovery{pointwise: pointwise{classes: len(m.Classes())}, rp: m.Recovery(), recovered: &recovered}
		}
		defer c.Close()
		res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	host, dev := filepath.Join(dir, "host.tif"), filepath.Join(dir, "device.tif")
	run(false, Options{Probabilities: ProbabilitiesRecovered}, host)
	res := run(true, Options{Probabilities: ProbabilitiesRecovered}, dev)
	// Once for the map, and once more for the drift probe's recalibrated
	// run, which takes the map's call (TestClassifyDriftProbeRuns).
	want := 1
	if res.Drift != nil && res.Drift.ProbePixels > 0 {
		want = 2
	}
	if recovered != want {
		t.Fatalf("the whole scene was recovered on the device %d times, want %d", recovered, want)
	}
	a, b := readProduct(t, host), readProduct(t, dev)
	for i := range a.class {
		if a.class[i] != b.class[i] || a.rel[i] != b.rel[i] {
			t.Fatalf("pixel %d: host class %d rel %g, device class %d rel %g", i, a.class[i], a.rel[i], b.class[i], b.rel[i])
		}
	}
	compareProbabilities(t, "recovered on the device", host, dev)
	// Tiles, or the network's probabilities: the host recovers.
	run(true, Options{TileSize: 32, Overlap: 8}, filepath.Join(dir, "tiled.tif"))
	run(true, Options{Probabilities: ProbabilitiesNetwork, TopK: 2}, filepath.Join(dir, "net.tif"))
	if recovered != want {
		t.Errorf("recovered on the device %d times after a tiled run and a network-probabilities run, want still %d", recovered, want)
	}
}
