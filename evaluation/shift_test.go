package evaluation

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/model"
)

func TestShiftSuite(t *testing.T) {
	cases := ShiftSuite()
	names := map[string]bool{}
	var target, strong, pairs int
	for _, c := range cases {
		if names[c.Name] {
			t.Errorf("case %q twice", c.Name)
		}
		names[c.Name] = true
		if c.Target {
			target++
		}
		if c.Strong {
			strong++
		}
		if len(c.Families) == 2 {
			pairs++
			if c.Families[0] == c.Families[1] {
				t.Errorf("%s: a pair of one family", c.Name)
			}
			if !c.Target {
				t.Errorf("%s: pairs are target cases", c.Name)
			}
		}
	}
	if !cases[0].IsClean() || cases[0].Name != "clean" {
		t.Errorf("first case %+v, want the clean scene", cases[0])
	}
	// Pairs of gain (2 levels), tilt (2), offset (1), band shift (2), sub-area (4).
	if want := 2*2 + 2*1 + 2*2 + 2*4 + 2*1 + 2*2 + 2*4 + 1*2 + 1*4 + 2*4; pairs != want {
		t.Errorf("%d pairwise combinations, want %d", pairs, want)
	}
	for _, want := range []string{"gain 0.85", "gain 1.15", "tilt -10% linear", "tilt +10% bow", "tilt -10% wave", "offset +3%",
		"band shift -1", "band shift +1", "left half", "bottom half", "gain 0.6", "gain 1.5", "band shift +3", "bands reversed",
		"gain 0.85, tilt -10% linear", "left half + band shift +1", "noise 2%"} {
		if !names[want] {
			t.Errorf("suite lacks %q", want)
		}
	}
	if strong != 5 {
		t.Errorf("%d strong changes, want 5 (gain 0.6 and 1.5, +-3 bands, reversed)", strong)
	}
}

func TestAreaRect(t *testing.T) {
	for _, tc := range []struct {
		area               string
		r0, c0, rows, cols int
	}{
		{AreaLeft, 0, 0, 83, 44}, {AreaRight, 0, 44, 83, 42}, {AreaTop, 0, 0, 40, 86}, {AreaBottom, 40, 0, 43, 86},
	} {
		r0, c0, nr, nc := areaRect(tc.area, 83, 86)
		if r0 != tc.r0 || c0 != tc.c0 || nr != tc.rows || nc != tc.cols {
			t.Errorf("%s of 83x86: got (%d,%d) %dx%d, want (%d,%d) %dx%d", tc.area, r0, c0, nr, nc, tc.r0, tc.c0, tc.rows, tc.cols)
		}
		if r0%model.Stride != 0 || c0%model.Stride != 0 {
			t.Errorf("%s starts off the stride-4 grid", tc.area)
		}
	}
}

func TestResampleBands(t *testing.T) {
	s := model.Scene{Rows: 1, Cols: 1, Bands: 3, Data: []float32{0, 10, 20}}
	got := ResampleBands(s, 5)
	for b, w := range []float32{0, 5, 10, 15, 20} {
		if math.Abs(float64(got.Data[b]-w)) > 1e-5 {
			t.Errorf("band %d: got %g, want %g", b, got.Data[b], w)
		}
	}
	if same := ResampleBands(s, 3); &same.Data[0] != &s.Data[0] {
		t.Error("same band count: want the scene itself")
	}
}

func TestRunShift(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 4 tiny models; skipped with -short")
	}
	ts := newTinyScene(24, 24, 8, 3)
	s, labels := ts.scene()
	other := newTinyScene(16, 16, 5, 9)
	otherScene, _ := other.scene()
	cases := []ShiftCase{{Name: "clean"}, {Name: "gain 0.5", Change: model.Radiometric{Gain: 0.5}},
		{Name: "left half", Area: AreaLeft, Target: true}, {Name: "bottom half + offset", Area: AreaBottom, Change: model.Radiometric{Offset: 0.03}, Target: true}}
	exp, err := RunShift(context.Background(), s, labels, ShiftOptions{
		Runs: 2, FirstSeed: 11, Cases: cases, Disjoint: true, Other: &otherScene, OtherName: "other.tif",
		Train: model.TrainOptions{Config: tinyConfig(15), TrainPerClass: 5, Backend: "go"},
		Eval:  EvalOptions{Backend: "go"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.Cases) != len(cases)+1 {
		t.Fatalf("%d rows, want %d (the suite and the other scene)", len(exp.Cases), len(cases)+1)
	}
	clean := exp.Clean()
	if len(clean.Runs) != 2 || clean.Drop.Mean != 0 || !(clean.OA.Mean > 0.5) {
		t.Errorf("clean: %+v, want 2 runs, drop 0, OA above 0.5", clean)
	}
	for _, r := range exp.Cases {
		for _, run := range r.Runs {
			if r.Case.Other {
				if !math.IsNaN(run.OA) {
					t.Errorf("other scene has an accuracy %g", run.OA)
				}
				continue
			}
			if math.Abs(run.Drop-(run.RefOA-run.OA)) > 1e-12 || run.TestPixels == 0 {
				t.Errorf("%s: run %+v", r.Case.Name, run)
			}
		}
	}
	// A half's test pixels are about half of the scene's.
	left := exp.Cases[2].Runs[0].TestPixels
	if all := clean.Runs[0].TestPixels; left < all/3 || left > 2*all/3 {
		t.Errorf("left half: %d test pixels of %d", left, all)
	}
	if exp.Disjoint == nil || len(exp.Disjoint.Runs) != 2 || exp.Disjoint.TrainArea == "" || math.IsNaN(exp.Disjoint.OtherHalf.Mean) {
		t.Errorf("disjoint split: %+v", exp.Disjoint)
	}
	var buf bytes.Buffer
	if err := exp.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"clean OA", "left half", "spatially disjoint split", "other scene: other.tif", "target <= 3 points"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := exp.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("JSON: %v\n%s", err, buf.String())
	}
	if n := len(back["cases"].([]any)); n != len(cases)+1 {
		t.Errorf("JSON has %d cases", n)
	}
}

// TestRunShiftReusesKeptFusedModels: a second run with the same ModelDir
// reuses the fused model the first kept (its decision and window chosen
// at training), instead of refusing it as another settings' model, and
// a run asking other settings of the same directory is refused.
func TestRunShiftReusesKeptFusedModels(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model; skipped with -short")
	}
	ts := newTinyScene(24, 24, 8, 3)
	s, labels := ts.scene()
	cfg := tinyConfig(3)
	cfg.Recovery.Window = 0 // chosen at training, with the decision
	dir := t.TempDir()
	opts := ShiftOptions{
		Runs: 1, FirstSeed: 11, Cases: []ShiftCase{{Name: "clean"}}, ModelDir: dir,
		Train: model.TrainOptions{Config: cfg, TrainPerClass: 5, Backend: "go"},
		Eval:  EvalOptions{Backend: "go"},
	}
	first, err := RunShift(context.Background(), s, labels, opts)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := filepath.Glob(filepath.Join(dir, "*.pnec"))
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept models %v (%v), want 1", kept, err)
	}
	m, err := model.LoadWithoutDrift(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	if m.Config() == cfg {
		t.Fatal("the kept model records the settings as asked: nothing was chosen, the test checks nothing")
	}
	before, err := os.Stat(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	second, err := RunShift(context.Background(), s, labels, opts)
	if err != nil {
		t.Fatalf("second run with the kept model: %v", err)
	}
	after, err := os.Stat(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the second run trained again: the model was written at %v, then at %v", before.ModTime(), after.ModTime())
	}
	if a, b := first.Clean().OA.Mean, second.Clean().OA.Mean; a != b {
		t.Errorf("clean OA %g with the model trained, %g with it reused", a, b)
	}
	other := opts
	other.Train.Config.Epochs++
	if _, err := RunShift(context.Background(), s, labels, other); err == nil || !strings.Contains(err.Error(), "a kept model of another scene, seed or settings") {
		t.Fatalf("other epochs over the kept model: %v, want it refused", err)
	}
}
