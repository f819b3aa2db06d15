package evaluation

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/progress"
)

func TestStatOf(t *testing.T) {
	s := statOf([]float64{1, 2, 3, 4, math.NaN()})
	// Population std of 1..4: sqrt(1.25).
	if !near(s.Mean, 2.5) || !near(s.Std, math.Sqrt(1.25)) {
		t.Errorf("got %+v, want mean 2.5 std %v", s, math.Sqrt(1.25))
	}
	if s := statOf(nil); !math.IsNaN(s.Mean) {
		t.Errorf("empty: got %+v, want NaN", s)
	}
}

func TestRunExperimentAblation(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 6 tiny models (about 10 s); skipped with -short")
	}
	ts := newTinyScene(16, 16, 8, 3)
	s, labels := ts.scene()
	var calls int
	var last progress.Event
	exp, err := RunExperiment(context.Background(), s, labels, ExperimentOptions{
		Runs: 2, FirstSeed: 7, Ablation: true,
		Train:    model.TrainOptions{Config: tinyConfig(3), TrainPerClass: 3, Backend: "go"},
		Eval:     EvalOptions{Backend: "go"},
		Progress: func(ev progress.Event) { calls++; last = ev },
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 4*2*3 {
		t.Errorf("progress calls: got %d, want 24 (4 trained variants x 2 runs x 3 epochs)", calls)
	}
	// The last epoch of the last training: every epoch of the experiment done.
	if _, ok := last.Metric("loss"); last.Stage != "experiment" || last.Done != 24 || last.Total != 24 || last.Part != 3 || last.Parts != 3 ||
		last.Subject != "full run 2/2 seed 8" || last.Message != "full run 2/2 seed 8 epoch 3/3" || !ok {
		t.Errorf("last progress %+v, want epoch 24 of 24 (3 of 3 of the full model's run 2 of 2, seed 8) with its loss", last)
	}
	wantLabels := []string{"Base", "w/o EC", "w/o RC", "w/o recovery", "PNEC-Mamba"}
	if len(exp.Variants) != len(wantLabels) {
		t.Fatalf("got %d variants, want %d", len(exp.Variants), len(wantLabels))
	}
	for i, v := range exp.Variants {
		if v.Label != wantLabels[i] || len(v.Runs) != 2 || v.Runs[0].Seed != 7 || v.Runs[1].Seed != 8 {
			t.Errorf("variant %d: got %s with %d runs, want %s with seeds 7 and 8", i, v.Label, len(v.Runs), wantLabels[i])
		}
		if v.OA.Mean < 0 || v.OA.Mean > 1 || len(v.PerClass) != 3 {
			t.Errorf("%s: got OA %+v and %d class stats", v.Label, v.OA, len(v.PerClass))
		}
	}
	// w/o recovery shares the full model's runs (same training time) but not
	// its labels' recovery; w/o RC is a network of its own (gate G = 1).
	noRC, noRec, full := exp.Variants[2], exp.Variants[3], exp.Variants[4]
	for i := range full.Runs {
		if noRec.Runs[i].TrainTime != full.Runs[i].TrainTime {
			t.Errorf("run %d: w/o recovery should reuse the full model's run", i)
		}
		if noRC.Runs[i].TrainTime == full.Runs[i].TrainTime {
			t.Errorf("run %d: w/o RC should be trained on its own", i)
		}
	}
	var buf bytes.Buffer
	if err := exp.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PNEC-Mamba", "w/o EC", "OA", "±", "train time (s)", "error AUROC, margin", "seeds 7..8"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := exp.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Variants []struct {
			Label string `json:"label"`
			OA    struct {
				Mean *float64 `json:"mean"`
			} `json:"oa"`
			Runs []json.RawMessage `json:"runs"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if len(js.Variants) != 5 || js.Variants[4].OA.Mean == nil || len(js.Variants[4].Runs) != 2 {
		t.Errorf("JSON: got %+v", js)
	}
}
