package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
)

// trainWithProvenance trains a tiny model on the fixture scene (a few
// epochs, Go backend) recording prov as its training inputs, and saves it
// as dir/name.
func trainWithProvenance(t *testing.T, dir, name string, prov model.Provenance) string {
	t.Helper()
	data, labels := fixture.SceneData(1)
	cfg := model.DefaultConfig()
	cfg.Hidden, cfg.HeadDim, cfg.DState, cfg.Chunk = 8, 4, 4, 16
	cfg.Epochs, cfg.ECWarmupEpochs = 2, 1
	valid := make([]bool, fixture.Rows*fixture.Cols)
	for i := range valid {
		valid[i] = true
	}
	m, err := model.Train(context.Background(), model.Scene{Rows: fixture.Rows, Cols: fixture.Cols, Bands: fixture.Bands, Data: data, Valid: valid}, labels,
		model.TrainOptions{Config: cfg, TrainPerClass: 5, Backend: "go", Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := m.Save(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestModelItemOpensNoRecordedPath: pnec model-item never opens a path the
// model file records (the training scene: a /vsicurl/ URL got HEAD and GET
// requests before); the Item links it, its geometry is null and a note
// says how to take the footprint; --training-scene opens what the user
// names.
func TestModelItemOpensNoRecordedPath(t *testing.T) {
	www := t.TempDir()
	fixture.Scene(t, filepath.Join(www, "probe.tif"), 1)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.FileServer(http.Dir(www)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	probe := "/vsicurl/" + srv.URL + "/probe.tif"
	dir := t.TempDir()
	modelPath := trainWithProvenance(t, dir, "remote.pnec", model.Provenance{Scene: probe, Labels: "/vsicurl/" + srv.URL + "/labels.tif"})

	stdout, stderr, err := runCaptured(t, "model-item", "--model", modelPath)
	if err != nil {
		t.Fatalf("model-item: %v\n%s", err, stderr)
	}
	t.Logf("%s%s", stdout, stderr)
	if n := requests.Load(); n != 0 {
		t.Errorf("the server got %d requests: model-item opened a path the model file records", n)
	}
	if !strings.Contains(stderr, "--training-scene "+probe) {
		t.Errorf("stderr %q: want a note naming --training-scene and the recorded scene", stderr)
	}
	var item struct {
		Geometry any                 `json:"geometry"`
		Links    []map[string]string `json:"links"`
	}
	b, err := os.ReadFile(modelPath + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &item); err != nil {
		t.Fatal(err)
	}
	linked := false
	for _, l := range item.Links {
		linked = linked || l["rel"] == "derived_from" && l["href"] == probe
	}
	if item.Geometry != nil || !linked {
		t.Errorf("geometry %v, links %v: want null and a derived_from link to %s", item.Geometry, item.Links, probe)
	}

	// Named by the user, the scene is opened for the footprint.
	if _, stderr, err := runCaptured(t, "model-item", "--model", modelPath, "--training-scene", probe, "-q"); err != nil {
		t.Fatalf("model-item --training-scene: %v\n%s", err, stderr)
	}
	if requests.Load() == 0 {
		t.Error("--training-scene: the named scene was not opened")
	}
	b, _ = os.ReadFile(modelPath + ".json")
	if err := json.Unmarshal(b, &item); err != nil || item.Geometry == nil {
		t.Errorf("--training-scene: geometry %v (%v), want the scene's footprint", item.Geometry, err)
	}
}

// TestModelItemName: --model-name sets mlm:name when MLM allows it and is
// refused with one line when not; without it the name made from the file
// name is valid (m.pnec -> pnec-m, not "m").
func TestModelItemName(t *testing.T) {
	dir := t.TempDir()
	modelPath := trainWithProvenance(t, dir, "m.pnec", model.Provenance{})
	name := func() string {
		b, err := os.ReadFile(modelPath + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var item struct {
			Properties map[string]any `json:"properties"`
		}
		json.Unmarshal(b, &item)
		s, _ := item.Properties["mlm:name"].(string)
		return s
	}
	stdout, stderr, err := runCaptured(t, "model-item", "--model", modelPath)
	if err != nil || name() != "pnec-m" || !strings.Contains(stdout, "mlm:name pnec-m") {
		t.Errorf("default name: %v %s, mlm:name %q, stdout %q: want pnec-m", err, stderr, name(), stdout)
	}
	if _, stderr, err := runCaptured(t, "model-item", "--model", modelPath, "--model-name", "Salinas v2", "-q"); err != nil || name() != "Salinas v2" {
		t.Errorf("--model-name Salinas v2: %v %s, mlm:name %q", err, stderr, name())
	}
	_, _, err = runCaptured(t, "model-item", "--model", modelPath, "--model-name", "2024", "-q")
	if err == nil || !strings.Contains(err.Error(), "--model-name") || !strings.Contains(err.Error(), "a letter first") || name() != "Salinas v2" {
		t.Errorf("--model-name 2024: got %v (mlm:name now %q), want it refused and the Item left", err, name())
	}
}

// TestBatchModelItemOutsideRefused: batch --model-item naming a local file
// outside the Items' root is refused before any work with one line naming
// the flag (every Item would have named it by an absolute local path).
func TestBatchModelItemOutsideRefused(t *testing.T) {
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	goodScene(t, in)
	elsewhere := filepath.Join(t.TempDir(), "m.pnec.json")
	_, _, err := runCaptured(t, "batch", "-q", "--model", modelPath, "--out-dir", filepath.Join(dir, "out"), "--report", filepath.Join(dir, "r.jsonl"),
		"--model-item", elsewhere, in)
	if err == nil || !strings.HasPrefix(err.Error(), "batch: --model-item "+elsewhere+": ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v, want one line starting batch: --model-item %s", err, elsewhere)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "good.tif")); err == nil {
		t.Error("a product was made")
	}
}
