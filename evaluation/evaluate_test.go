package evaluation

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pnec/pnec/model"
)

// handScore is a 1x5 scene of two classes worked out by hand:
// probabilities of class value 1 are 0.9 0.8 0.4 0.35 0.45, labels 1 1 1 2 2,
// pixel 0 is the training pixel. Without recovery pixel 2 is wrong; with a
// 3-pixel window it becomes right (0.8+0.4+0.35)/3 > 1/2.
func handScore(ablation model.Ablation) (ScoreSpec, model.Prediction, []int32) {
	p1 := []float32{0.9, 0.8, 0.4, 0.35, 0.45}
	prob := make([]float32, 0, 10)
	for _, v := range p1 {
		prob = append(prob, v, 1-v)
	}
	spec := ScoreSpec{
		Checksum: "abc", Ablation: ablation,
		Classes:      []model.Class{{Value: 1, Name: "a"}, {Value: 2, Name: "b"}},
		Recovery:     model.RecoveryParams{Window: 3, Eta: 1},
		TrainIndices: []int{0}, TrainRows: 1, TrainCols: 5,
	}
	pred := model.Prediction{Rows: 1, Cols: 5, Classes: 2, Prob: prob, Uncertainty: []float32{0.1, 0.2, 0.9, 0.3, 0.4}}
	return spec, pred, []int32{1, 1, 1, 2, 2}
}

func TestScoreHandChecked(t *testing.T) {
	spec, pred, labels := handScore(model.AblationFull)
	ev, err := Score(spec, pred, model.Scene{}, labels, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"test pixels", float64(ev.TestPixels), 4},
		{"excluded", float64(ev.TrainPixelsExcluded), 1},
		{"raw OA", ev.Raw.OA, 0.75},
		{"raw kappa", ev.Raw.Kappa, 0.5}, // p_o 3/4, p_e (2*1+2*3)/16
		{"raw class 1", ev.Raw.PerClass[0], 0.5},
		{"raw class 2", ev.Raw.PerClass[1], 1},
		{"raw AA", ev.Raw.AA, 0.75},
		{"recovered OA", ev.Recovered.OA, 1},
		{"recovered kappa", ev.Recovered.Kappa, 1},
		{"final OA", ev.Final().OA, 1},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	// No error left after recovery: AUROC undefined.
	for _, r := range ev.Reliability {
		if r.Wrong != 0 || !math.IsNaN(r.AUROC) {
			t.Errorf("%s: got %d wrong, AUROC %v; want 0 and NaN", r.Kind, r.Wrong, r.AUROC)
		}
	}

	// w/o recovery: the labels come without recovery, so pixel 2 is the one error.
	spec, pred, labels = handScore(model.AblationNoRecovery)
	ev, err = Score(spec, pred, model.Scene{}, labels, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !near(ev.Final().OA, 0.75) {
		t.Fatalf("no-recovery final OA: got %v, want 0.75", ev.Final().OA)
	}
	want := map[model.ReliabilityKind]struct{ auroc, recall float64 }{
		// margin uncertainties of test pixels 1..4: 0.4 0.8 0.7 0.9; the error (0.8)
		// beats 2 of 3 correct pixels; the top 20% (0.8 pixel) is pixel 4, correct.
		model.ReliabilityMargin: {2.0 / 3, 0},
		// gate uncertainties G~: 0.2 0.9 0.3 0.4: the error is the most uncertain.
		model.ReliabilityGate: {1, 0.8},
	}
	for _, r := range ev.Reliability {
		w, ok := want[r.Kind]
		if !ok {
			continue
		}
		if !near(r.AUROC, w.auroc) || !near(r.TopRecall, w.recall) {
			t.Errorf("%s: got AUROC %v recall %v, want %v %v", r.Kind, r.AUROC, r.TopRecall, w.auroc, w.recall)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestScoreOptionsAndErrors(t *testing.T) {
	t.Run("recovery override", func(t *testing.T) {
		spec, pred, labels := handScore(model.AblationFull)
		ev, err := Score(spec, pred, model.Scene{}, labels, EvalOptions{Recovery: model.RecoveryParams{Window: 1, Eta: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if !near(ev.Recovered.OA, ev.Raw.OA) || ev.Recovery.Window != 1 {
			t.Errorf("window 1: got recovered OA %v, raw %v; want equal", ev.Recovered.OA, ev.Raw.OA)
		}
	})
	t.Run("invalid pixels are not test pixels", func(t *testing.T) {
		spec, pred, labels := handScore(model.AblationFull)
		ev, err := Score(spec, pred, model.Scene{Valid: []bool{true, true, false, true, true}}, labels, EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ev.TestPixels != 3 {
			t.Errorf("got %d test pixels, want 3", ev.TestPixels)
		}
	})
	t.Run("other scene size keeps every labelled pixel", func(t *testing.T) {
		spec, pred, labels := handScore(model.AblationFull)
		spec.TrainRows = 7
		ev, err := Score(spec, pred, model.Scene{}, labels, EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ev.TestPixels != 5 || ev.TrainPixelsExcluded != 0 {
			t.Errorf("got %d test, %d excluded; want 5 and 0", ev.TestPixels, ev.TrainPixelsExcluded)
		}
	})
	cases := []struct {
		name   string
		mutate func(*ScoreSpec, *model.Prediction, *[]int32)
		msg    string
	}{
		{"labels size", func(_ *ScoreSpec, _ *model.Prediction, l *[]int32) { *l = (*l)[:4] }, "labels have 4 values"},
		{"only training pixels", func(_ *ScoreSpec, _ *model.Prediction, l *[]int32) { *l = []int32{1, 0, 0, 0, 0} }, "no test pixels"},
		{"class count", func(s *ScoreSpec, _ *model.Prediction, _ *[]int32) { s.Classes = s.Classes[:1] }, "model has 1 classes"},
		{"bad window", func(s *ScoreSpec, _ *model.Prediction, _ *[]int32) { s.Recovery.Window = 4 }, "recovery window 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, pred, labels := handScore(model.AblationFull)
			tc.mutate(&spec, &pred, &labels)
			_, err := Score(spec, pred, model.Scene{}, labels, EvalOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want an error containing %q", err, tc.msg)
			}
		})
	}
}

// TestScoreUnseenClasses: test labels holding a class
// the model lacks (new ground where a class was missing from training)
// are scored, not refused: those pixels count as errors, the class is
// reported (UnseenClasses, a row of its own in the per-class figures and
// the confusion matrix, the text's note and the JSON's unseen_classes).
// More label values than maxUnseenClasses are still refused.
func TestScoreUnseenClasses(t *testing.T) {
	spec, pred, labels := handScore(model.AblationNoRecovery)
	labels[3] = 7 // truth a, a, 7, b against predictions a, b, b, b
	ev, err := Score(spec, pred, model.Scene{}, labels, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev.TestPixels != 4 || !near(ev.Raw.OA, 0.5) || len(ev.UnseenClasses) != 1 || ev.UnseenClasses[0] != 7 {
		t.Fatalf("test pixels %d, OA %v, unseen %v: want 4, 0.5 and [7]", ev.TestPixels, ev.Raw.OA, ev.UnseenClasses)
	}
	if len(ev.Classes) != 3 || ev.Classes[2].Value != 7 || ev.Raw.Support[2] != 1 || ev.Raw.PerClass[2] != 0 || ev.Raw.Confusion.Counts[2*3+1] != 1 {
		t.Errorf("classes %v, support %v, per class %v, confusion %v: want class 7 with one pixel predicted as b", ev.Classes, ev.Raw.Support, ev.Raw.PerClass, ev.Raw.Confusion.Counts)
	}
	var text, js strings.Builder
	if err := ev.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "label values 7 are not classes of the model: their 1 test pixels count as errors") {
		t.Errorf("text does not report the unseen class:\n%s", text.String())
	}
	if err := ev.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"unseen_classes": [`) {
		t.Errorf("JSON does not report the unseen class:\n%s", js.String())
	}
	many := make([]int32, 300)
	for i := range many {
		many[i] = int32(100 + i)
	}
	spec.TrainIndices = nil
	pred = model.Prediction{Rows: 1, Cols: 300, Classes: 2, Prob: make([]float32, 600), Uncertainty: make([]float32, 300)}
	spec.TrainCols = 300
	if _, err := Score(spec, pred, model.Scene{}, many, EvalOptions{}); !errors.Is(err, ErrLabels) {
		t.Errorf("300 label values that are no class: got %v, want ErrLabels", err)
	}
}

func TestEvaluationOutputs(t *testing.T) {
	spec, pred, labels := handScore(model.AblationNoRecovery)
	// A class without test pixels gives NaN per-class accuracy: null in JSON.
	spec.Classes = append(spec.Classes, model.Class{Value: 3, Name: "c"})
	pred.Classes = 3
	prob := make([]float32, 0, 15)
	for i := 0; i < 5; i++ {
		prob = append(prob, pred.Prob[2*i], pred.Prob[2*i+1], 0)
	}
	pred.Prob = prob
	ev, err := Score(spec, pred, model.Scene{}, labels, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ev.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		TestPixels int `json:"test_pixels"`
		Raw        struct {
			OA       float64    `json:"oa"`
			PerClass []*float64 `json:"per_class"`
			Conf     [][]int64  `json:"confusion"`
		} `json:"without_recovery"`
		Reliability []struct {
			Kind  string   `json:"kind"`
			AUROC *float64 `json:"error_auroc"`
		} `json:"reliability"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, buf.String())
	}
	if got.TestPixels != 4 || !near(got.Raw.OA, 0.75) || got.Raw.PerClass[2] != nil || got.Raw.Conf[0][1] != 1 {
		t.Errorf("got %+v, want 4 test pixels, OA 0.75, class 3 null, one 1->2 confusion", got)
	}
	if len(got.Reliability) != len(model.ReliabilityKinds) || got.Reliability[0].AUROC == nil {
		t.Errorf("got reliability %+v, want %d rows with AUROC", got.Reliability, len(model.ReliabilityKinds))
	}
	buf.Reset()
	if err := ev.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OA", "kappa", "3 c (0 px)", "error AUROC", string(model.FallbackReliability) + " (default)", "without recovery"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestScoreSpectral(t *testing.T) {
	spec, pred, labels := handScore(model.AblationNoRecovery)
	spec.TrainIndices = []int{0, 4}
	// Pixel 2 (truth 1, predicted 2 without recovery) has a class-1 spectrum.
	scene := model.Scene{Rows: 1, Cols: 5, Bands: 2, Data: []float32{1, 0, 1, 0.1, 1, 0.2, 0.1, 1, 0, 1}}
	ev, err := Score(spec, pred, scene, labels, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(ev.Reliability), len(model.ReliabilityKinds)+len(model.SpectralReliabilityKinds); got != want {
		t.Fatalf("got %d reliability rows, want %d with the spectral ones", got, want)
	}
	for _, r := range ev.Reliability {
		if r.Kind == model.ReliabilitySpectral && !near(r.AUROC, 1) {
			t.Errorf("spectral AUROC: got %v, want 1", r.AUROC)
		}
	}
	// Without data, or on another scene size, the spectral rows are left out.
	scene.Data = nil
	ev, err = Score(spec, pred, scene, labels, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Reliability) != len(model.ReliabilityKinds) {
		t.Errorf("without data: got %d rows, want %d", len(ev.Reliability), len(model.ReliabilityKinds))
	}
}
