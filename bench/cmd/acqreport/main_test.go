package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/evaluation"
)

// TestRender: the summary row, the per-kind row and the per-case row of a
// small experiment, with its drift verdict counts.
func TestRender(t *testing.T) {
	js := `{"scene_rows_cols_bands":[83,86,204],"runs":2,"config":{"Epochs":200,"Encoder":"cell","Input":"shape",
	  "Augment":{"Prob":0.8,"Tilt":0.15,"Offset":0.05,"Noise":0.03,"BandShift":1,"CleanTail":0.1,"ImageNorm":true}},
	  "train_seconds":{"mean":30,"std":1},
	  "cases":[
	    {"name":"clean","families":[],"target":false,"strong":false,"oa":{"mean":0.99,"std":0.001},"drop":{"mean":0,"std":0},"max_drop":0,
	     "runs":[{"seed":1,"oa":0.99,"drop":0,"drift":{"verdict":"ok"}},{"seed":2,"oa":0.99,"drop":0,"drift":{"verdict":"ok"}}]},
	    {"name":"gain 0.85","families":["gain"],"target":true,"strong":false,"oa":{"mean":0.95,"std":0.01},"drop":{"mean":0.04,"std":0.01},"max_drop":0.05,
	     "runs":[{"seed":1,"oa":0.95,"drop":0.04,"drift":{"verdict":"warn"}},{"seed":2,"oa":0.95,"drop":0.04,"drift":{"verdict":"ok"}}]},
	    {"name":"other scene: x.tif","families":["other-scene"],"target":false,"strong":true,"other_scene":true,"oa":{"mean":null,"std":null},"drop":{"mean":null,"std":null},"max_drop":null,
	     "runs":[{"seed":1,"oa":null,"drop":null,"drift":{"verdict":"fail"}}]}],
	  "disjoint_split":{"train_area":"left half","test_area":"right half","oa_same_half":{"mean":0.99,"std":0},"oa_other_half":{"mean":0.8,"std":0.01}},
	  "drift_check":{"case_runs":5,"missed":0,"must_alarm":1,"false_alarms":0,"must_be_ok":2,"held":3,"held_flagged":1,"held_failed":0,"met":true}}`
	var e experiment
	if err := json.Unmarshal([]byte(js), &e); err != nil {
		t.Fatal(err)
	}
	md := render([]set{{"SalinasA", "cell", "default", false, e}}, "pnec experiment --shift ...", "a note")
	for _, want := range []string{
		"| SalinasA | cell | default | 2 | 99.00 ± 0.10 | 4.00 (gain 0.85) | 1 of 1 | 99.00 ± 0.00 / 80.00 ± 1.00 (left half -> right half) | 1 of 3 (0) / 0 of 1 / 0 of 2 | 30 |",
		"| gain (T) | 4.00 (gain 0.85) |",
		"| gain 0.85 | T | 4.00 (1/1/0) |",
		"| other scene | S | - (0/0/1) |",
		"*default*: input `shape`, augmentation p=0.8, gain 0, tilt 0.15",
		"per-image GroupNorm statistics",
		"pnec experiment --shift ...", "a note",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestRenderDrift: the drift section has the limits and, per scene, the
// tally rows of the verdict by the chosen limits and by the spectral
// figures alone.
func TestRenderDrift(t *testing.T) {
	run := func(set string, seed int64, name string, drop, far float64) evaluation.DriftCaseRun {
		r := evaluation.DriftCaseRun{Scene: "SalinasA", Set: set, Seed: seed, Case: name, Clean: name == "clean", Drop: drop, Figures: map[string]float64{}}
		for _, f := range drift.Figures() {
			r.Figures[f.Key] = 1
		}
		r.Figures["feature_far_share"], r.Figures["far_share"] = far, 0.01
		r.Figures["recalibration_change_share"] = far - 0.1 // none on the clean scene
		return r
	}
	runs := []evaluation.DriftCaseRun{
		run(evaluation.DriftSetChoose, 1, "clean", 0, 0.1), run(evaluation.DriftSetReport, 2, "clean", 0, 0.1),
		run(evaluation.DriftSetReport, 2, "band shift -3", 20, 0.9),
	}
	runs[2].Families = []string{evaluation.FamilyShift}
	md := renderDrift(runs)
	for _, want := range []string{
		"### The drift verdict against the OA drop",
		"`feature_far_share` warn at",
		"| SalinasA | held out | 0 | 0 (-) | 0 | 1 | 0 | 1 | 0 | 0 | 0 | missed |",
		"| SalinasA | report seeds, every case | 1 | 0 (0%) | 0 | 1 | 0 | 1 | 0 | 1 | 0 | met |",
		"Before (spectral figures only",
		"The same verdict with the 0 runs of a change on a half counted by what the change itself lost",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("drift section lacks %q:\n%s", want, md)
		}
	}
}
