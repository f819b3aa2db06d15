package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

// TestRunProbabilities: a batch with probabilities writes them beside each
// product and lists them in the Item (schema-valid, with the stage and
// top-k recorded and classification on the top-k class bands); a rerun
// asking for the same skips, one asking for other probabilities redoes
// the scene.
func TestRunProbabilities(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	in := fixture.Scene(t, filepath.Join(dir, "in", "a.tif"), 4)
	out := filepath.Join(dir, "out")
	run := func(stage processor.ProbabilityStage, k int) map[string]SceneReport {
		t.Helper()
		var rep bytes.Buffer
		_, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: []string{in}, Jobs: 1,
			Report: &rep, Version: "test", Options: processor.Options{Probabilities: stage, TopK: k}})
		if err != nil {
			t.Fatal(err)
		}
		return readReport(t, rep.Bytes())
	}
	if r := run(processor.ProbabilitiesRecovered, 2); r["a.tif"].Status != StatusDone {
		t.Fatalf("first run: %+v", r["a.tif"])
	}
	b, err := os.ReadFile(filepath.Join(out, "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	validateItem(t, b)
	var item struct {
		Assets map[string]struct {
			Href  string           `json:"href"`
			Roles []string         `json:"roles"`
			Stage string           `json:"pnec:probabilities_stage"`
			TopK  int              `json:"pnec:top_k"`
			Bands []map[string]any `json:"raster:bands"`
		} `json:"assets"`
	}
	if err := json.Unmarshal(b, &item); err != nil {
		t.Fatal(err)
	}
	a, ok := item.Assets[stac.ProbabilitiesAssetKey]
	if !ok {
		t.Fatalf("no %s asset in %s", stac.ProbabilitiesAssetKey, b)
	}
	if a.Href != "a.probabilities.tif" || a.Stage != "recovered" || a.TopK != 2 || len(a.Bands) != 4 {
		t.Errorf("got asset %+v, want a.probabilities.tif, recovered, top 2, 4 bands", a)
	}
	if _, ok := a.Bands[0]["classification:classes"]; !ok || a.Bands[1]["unit"] != geo.ReliabilityUnit {
		t.Errorf("got bands %v, want classes on class_1 and percent on probability_1", a.Bands)
	}
	if _, err := os.Stat(filepath.Join(out, "a.probabilities.tif")); err != nil {
		t.Error(err)
	}
	if r := run(processor.ProbabilitiesRecovered, 2); r["a.tif"].Status != StatusSkipped {
		t.Errorf("same probabilities again: got %s, want skipped", r["a.tif"].Status)
	}
	if r := run(processor.ProbabilitiesRecovered, 0); r["a.tif"].Status != StatusDone {
		t.Errorf("other probabilities: got %s, want done", r["a.tif"].Status)
	}
	if r := run(processor.ProbabilitiesOff, 0); r["a.tif"].Status != StatusSkipped {
		t.Errorf("no probabilities asked for: got %s, want skipped (the file stays)", r["a.tif"].Status)
	}
}
