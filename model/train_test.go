package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/progress"

	"github.com/pnec/pnec/model/internal/kernels"
)

// synthScene makes a rows x cols scene with k classes laid out in vertical
// stripes, each with its own smooth spectrum plus noise, and its labels.
func synthScene(rows, cols, bands, k int, seed uint64) (Scene, []int32) {
	rng := rand.New(rand.NewPCG(seed, 7))
	spectra := make([][]float64, k)
	for c := range spectra {
		spectra[c] = make([]float64, bands)
		ph := rng.Float64() * 6
		for b := range spectra[c] {
			spectra[c][b] = 1000 + 400*math.Sin(ph+float64(b)*0.4) + 200*float64(c)
		}
	}
	s := Scene{Rows: rows, Cols: cols, Bands: bands, Data: make([]float32, rows*cols*bands)}
	labels := make([]int32, rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			cl := (c*k/cols + r/(rows/2+1)) % k
			i := r*cols + c
			labels[i] = int32(cl + 1)
			for b := 0; b < bands; b++ {
				s.Data[i*bands+b] = float32(spectra[cl][b] + rng.NormFloat64()*150)
			}
		}
	}
	return s, labels
}

func tinyConfig(epochs int) Config {
	c := DefaultConfig()
	c.Hidden, c.HeadDim, c.DState, c.Chunk = 16, 8, 4, 16
	c.Epochs, c.ECWarmupEpochs = epochs, epochs/3
	c.LearningRate = 3e-3
	return c
}

// testAccuracy is the share of labelled non-training pixels whose argmax class matches.
func testAccuracy(t *testing.T, m *Model, p Prediction, labels []int32) float64 {
	t.Helper()
	train := map[int]bool{}
	for _, i := range m.TrainIndices() {
		train[i] = true
	}
	classes := m.Classes()
	var right, total int
	for i, v := range labels {
		if v == 0 || train[i] {
			continue
		}
		best := 0
		for k := 1; k < p.Classes; k++ {
			if p.Prob[i*p.Classes+k] > p.Prob[i*p.Classes+best] {
				best = k
			}
		}
		total++
		if classes[best].Value == int(v) {
			right++
		}
	}
	return float64(right) / float64(total)
}

func TestTrainTinyBeatsChance(t *testing.T) {
	s, labels := synthScene(30, 26, 12, 3, 1)
	var last progress.Event
	m, err := Train(context.Background(), s, labels, TrainOptions{
		Config: tinyConfig(40), TrainPerClass: 10, Backend: "go",
		Progress: func(e progress.Event) { last = e },
	})
	if err != nil {
		t.Fatal(err)
	}
	if loss, ok := last.Metric("loss"); last.Stage != "train" || last.Done != 40 || last.Total != 40 || last.Message != "epoch 40/40" || !ok || loss <= 0 {
		t.Errorf("last progress %+v, want epoch 40 of 40 with its loss", last)
	}
	if got := len(m.TrainIndices()); got != 30 {
		t.Errorf("training pixels %d, want 30", got)
	}
	p, err := NewPredictor(m, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pred, err := p.Predict(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	acc := testAccuracy(t, m, pred, labels)
	loss, _ := last.Metric("loss")
	trainAcc, _ := last.Metric("train_acc")
	t.Logf("final loss %.3f, train accuracy %.2f, test accuracy %.3f", loss, trainAcc, acc)
	if acc < 0.8 {
		t.Errorf("test accuracy %.3f, want >= 0.8 (chance 0.33)", acc)
	}
	for i, u := range pred.Uncertainty {
		if !(u >= 0 && u <= 1) {
			t.Fatalf("uncertainty[%d] = %g, want in [0,1]", i, u)
		}
	}

	// Checkpoint round trip: bit-identical predictions.
	path := filepath.Join(t.TempDir(), "m.pnec")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Checksum() != m.Checksum() {
		t.Errorf("checksum after load %s, want %s", m2.Checksum(), m.Checksum())
	}
	p2, err := NewPredictor(m2, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	pred2, err := p2.Predict(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pred.Prob {
		if math.Float32bits(pred.Prob[i]) != math.Float32bits(pred2.Prob[i]) {
			t.Fatalf("prob[%d] after reload %g, want %g", i, pred2.Prob[i], pred.Prob[i])
		}
	}

	// Band-count mismatch.
	bad := Scene{Rows: 4, Cols: 4, Bands: 5, Data: make([]float32, 80)}
	if _, err := p2.Predict(context.Background(), bad); !errors.Is(err, ErrBandCount) {
		t.Errorf("predict with 5 bands: error %v, want ErrBandCount", err)
	}
}

// TestTrainDeterministic: the same seeds give bit-identical weights on the
// same backend; another run seed gives other weights.
func TestTrainDeterministic(t *testing.T) {
	for _, enc := range []string{EncoderCell, EncoderPaper} {
		t.Run(enc, func(t *testing.T) { trainDeterministic(t, enc) })
	}
}

func trainDeterministic(t *testing.T, encoder string) {
	s, labels := synthScene(17, 22, 6, 3, 5)
	cfg := tinyConfig(6)
	cfg.Encoder = encoder
	train := func(seed int64) *Model {
		m, err := Train(context.Background(), s, labels, TrainOptions{Config: cfg, TrainPerClass: 5, Seed: seed, Backend: "go"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, c := train(11), train(11), train(12)
	same := func(x, y *Model) bool {
		for i := range x.params {
			for j, v := range x.params[i].Data {
				if math.Float32bits(v) != math.Float32bits(y.params[i].Data[j]) {
					return false
				}
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("two runs with seed 11 gave different weights")
	}
	if same(a, c) {
		t.Error("runs with seeds 11 and 12 gave identical weights")
	}
	if !slicesEqual(a.TrainIndices(), c.TrainIndices()) {
		t.Error("the split changed with the run seed; it must depend on the split seed only")
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTrainErrors: bad inputs are errors, not panics.
func TestTrainErrors(t *testing.T) {
	s, labels := synthScene(8, 8, 4, 2, 1)
	cases := []struct {
		name   string
		labels []int32
		opts   TrainOptions
	}{
		{"short labels", labels[:10], TrainOptions{}},
		{"one class", make([]int32, 64), TrainOptions{}},
		{"bad ablation", labels, TrainOptions{Config: func() Config { c := tinyConfig(2); c.Ablation = "nope"; return c }()}},
		{"bad backend", labels, TrainOptions{Config: tinyConfig(2), Backend: "nosuch"}},
		{"short mask", labels, TrainOptions{Config: tinyConfig(2), TrainMask: make([]int32, 3)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Train(context.Background(), s, tc.labels, tc.opts); err == nil {
				t.Error("got nil error, want one")
			}
		})
	}
}

// TestTrainKernelsMatchGraph: training the paper encoder with its
// full-resolution stage on pnec's own kernels (the Go backend's path)
// follows the all-graph training: the same losses epoch by epoch and the
// same weights after 8 epochs, to float32 rounding grown over the steps;
// and the trained models predict the same. With the reference's input, and
// with pnec's default input and radiometric augmentation.
func TestTrainKernelsMatchGraph(t *testing.T) {
	if !kernels.FullResAvailable(32) {
		t.Skip("pnec's full-resolution kernels need AVX-512 and GOEXPERIMENT=simd")
	}
	base := tinyConfig(8) // pnec's defaults: the shape input, augmented
	base.Encoder, base.Hidden = EncoderPaper, 32
	reference := base
	reference.Input, reference.Augment = InputStretch, Augment{}
	// pnec's default input and augmentation: augmented steps with their own
	// statistics, which the kernels take scene by scene.
	augmented := base
	augmented.Input, augmented.Augment = InputShape, DefaultAugment
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"reference-input", reference}, {"shape-augmented", augmented}} {
		t.Run(tc.name, func(t *testing.T) { trainKernelsMatchGraph(t, tc.cfg) })
	}
}

func trainKernelsMatchGraph(t *testing.T, cfg Config) {
	if !fullResTraining(cfg) {
		t.Fatalf("config %+v does not train on the kernels", cfg)
	}
	s, labels := synthScene(30, 26, 10, 3, 8)
	s.Valid = make([]bool, s.Rows*s.Cols)
	for i := range s.Valid {
		s.Valid[i] = i%37 != 5 // scattered nodata pixels
	}
	train := func(kernels bool) (*Model, []float64) {
		defer func(v bool) { useFullRes = v }(useFullRes)
		useFullRes = kernels
		var losses []float64
		m, err := Train(context.Background(), s, labels, TrainOptions{Config: cfg, TrainPerClass: 6, Backend: "go",
			Progress: func(e progress.Event) { l, _ := e.Metric("loss"); losses = append(losses, l) }})
		if err != nil {
			t.Fatal(err)
		}
		return m, losses
	}
	mk, lk := train(true)
	mg, lg := train(false)
	t.Logf("input %q, augmentation %v: losses %.7g", mk.meta.Config.Input, mk.meta.Config.Augment, lk)
	for e := range lk {
		if d := math.Abs(lk[e] - lg[e]); d > 1e-4*math.Max(1, math.Abs(lg[e])) {
			t.Errorf("epoch %d: loss %.7g with the kernels, %.7g in the graph", e+1, lk[e], lg[e])
		}
	}
	var worst float64
	worstName := ""
	for i := range mk.params {
		for j, v := range mk.params[i].Data {
			if d := math.Abs(float64(v - mg.params[i].Data[j])); d > worst {
				worst, worstName = d, mk.params[i].Name
			}
		}
	}
	t.Logf("losses %.6g .. %.6g; largest weight difference %.2g (%s)", lk[0], lk[len(lk)-1], worst, worstName)
	// Adam divides each gradient by its running magnitude, so a weight whose
	// gradient is near zero moves by up to a whole step (lr = 3e-3) on
	// rounding alone; a wrong gradient moves weights by many steps.
	if worst > 1e-3 {
		t.Errorf("weights differ by up to %.3g (%s)", worst, worstName)
	}
	for i, st := range mk.meta.GroupNormStats {
		o := mg.meta.GroupNormStats[i]
		if st.Key != o.Key {
			t.Fatalf("GroupNorm statistics %d: %s with the kernels, %s in the graph", i, st.Key, o.Key)
		}
		for g := range st.Mean {
			if math.Abs(float64(st.Mean[g]-o.Mean[g])) > 1e-4 || math.Abs(float64(st.Var[g]-o.Var[g])) > 1e-4*math.Max(1, float64(o.Var[g])) {
				t.Errorf("GroupNorm %s group %d: mean/var %g/%g with the kernels, %g/%g in the graph", st.Key, g, st.Mean[g], st.Var[g], o.Mean[g], o.Var[g])
			}
		}
	}
	pk, err := NewPredictor(mk, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer pk.Close()
	pg, err := NewPredictor(mg, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	a, err := pk.Predict(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pg.Predict(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	var dp float64
	for i := range a.Prob {
		dp = math.Max(dp, math.Abs(float64(a.Prob[i]-b.Prob[i])))
	}
	t.Logf("largest probability difference %.2g", dp)
	if dp > 1e-3 {
		t.Errorf("predictions differ by up to %.3g in probability", dp)
	}
}

// TestTrainEveryPixelTraining: a scene whose every
// valid pixel is a training pixel (a fully labelled scene, every label a
// training label) trains and gets drift statistics; the run failed at its
// end with "drift statistics on go: no valid pixel", the statistics
// leaving the training pixels out.
func TestTrainEveryPixelTraining(t *testing.T) {
	s, labels := synthScene(8, 8, 6, 2, 3)
	m, err := Train(context.Background(), s, labels, TrainOptions{Config: tinyConfig(2), TrainMask: labels, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.TrainIndices()) != 64 || !m.HasDriftStats() {
		t.Errorf("%d training pixels, drift statistics %v: want 64 and statistics", len(m.TrainIndices()), m.HasDriftStats())
	}
}
