package main

import (
	"encoding/json"
	"strings"
	"testing"
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
	  "drift_check":{"case_runs":5,"missed":0,"false_alarms":0,"met":true}}`
	var e experiment
	if err := json.Unmarshal([]byte(js), &e); err != nil {
		t.Fatal(err)
	}
	md := render([]set{{"SalinasA", "cell", "default", false, e}}, "pnec experiment --shift ...", "a note")
	for _, want := range []string{
		"| SalinasA | cell | default | 2 | 99.00 ± 0.10 | 4.00 (gain 0.85) | 1 of 1 | 99.00 ± 0.00 / 80.00 ± 1.00 (left half -> right half) | 0 / 0 (5) | 30 |",
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
