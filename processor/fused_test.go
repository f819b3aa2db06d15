package processor

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
)

// fusedModel trains a tiny model with the fused decision (its window
// chosen at training) on the fixture scene.
func fusedModel(t *testing.T) *model.Model {
	t.Helper()
	data, labels := fixture.SceneData(1)
	cfg := model.DefaultConfig()
	cfg.Hidden, cfg.HeadDim, cfg.DState, cfg.Chunk = 8, 4, 4, 16
	cfg.Epochs, cfg.ECWarmupEpochs, cfg.LearningRate = 10, 2, 3e-3
	cfg.Decision, cfg.Recovery.Window = model.Decision{Mode: model.DecisionFused}, 0
	m, err := model.Train(context.Background(), model.Scene{Rows: fixture.Rows, Cols: fixture.Cols, Bands: fixture.Bands, Data: data}, labels,
		model.TrainOptions{Config: cfg, TrainPerClass: 10, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Decision(); !d.Fused() || m.Recovery().Window < 1 {
		t.Fatalf("training gave decision %+v, window %d: want fused with a chosen window", d, m.Recovery().Window)
	}
	return m
}

// TestFusedDecisionProduct: a fused model's product has the class band of
// model.Decide on the whole scene (the network's probabilities fused with
// the spectral evidence, then recovered), and in tiles nearly so (the
// network sees each tile's context), and it carries drift figures and
// says its decision in its metadata.
func TestFusedDecisionProduct(t *testing.T) {
	m := fusedModel(t)
	dir := t.TempDir()
	const rows, cols = 61, 50
	scene := deviceScene(t, m, dir, rows, cols)
	whole, tiled := filepath.Join(dir, "whole.tif"), filepath.Join(dir, "tiled.tif")
	res := classifyWith(t, m, Options{Backend: "go"}, nil, scene, whole)
	classifyWith(t, m, Options{Backend: "go", TileSize: 32, Overlap: 8}, nil, scene, tiled)
	a, b := readProduct(t, whole), readProduct(t, tiled)

	// The same decision computed apart from the processor.
	data, _ := synthScene(rows, cols, m.Bands(), 3, 5)
	valid := make([]bool, rows*cols)
	for i := range valid {
		valid[i] = i%41 != 0
	}
	s := model.Scene{Rows: rows, Cols: cols, Bands: m.Bands(), Data: data, Valid: valid}
	p, err := model.NewPredictor(m, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pred, err := p.Predict(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := m.Decide(s, pred.Prob)
	if err != nil {
		t.Fatal(err)
	}
	k := len(m.Classes())
	differ := 0
	for i := range a.class {
		if !valid[i] {
			continue
		}
		want := m.Classes()[argmax(dec[i*k:(i+1)*k])].Value
		if int(a.class[i]) != want {
			t.Fatalf("pixel %d: whole product class %d, model.Decide %d", i, a.class[i], want)
		}
		if a.class[i] != b.class[i] {
			differ++
		}
	}
	// Tiles see other contexts through the network: allow a few pixels.
	if differ > rows*cols/50 {
		t.Errorf("%d pixels differ between the whole and the tiled product", differ)
	}
	if res.Drift == nil {
		t.Fatal("no drift figures")
	}
	md, _ := gdalinfoJSON(t, whole)["metadata"].(map[string]any)
	if pm, _ := md["PNEC"].(map[string]any); pm["DECISION"] != model.DecisionFused || pm["DECISION_TEMPERATURE_RAD"] == nil || pm["DECISION_COPY_PENALTY_RAD"] == nil || pm["DECISION_SPECTRAL_WEIGHT"] == nil || pm["DECISION_LOCAL_MEAN"] == nil {
		t.Errorf("product metadata DECISION = %v, temperature %v, copy penalty %v: want %s and the model's", pm["DECISION"], pm["DECISION_TEMPERATURE_RAD"], pm["DECISION_COPY_PENALTY_RAD"], model.DecisionFused)
	}
}
