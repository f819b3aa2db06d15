package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
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
	var last EpochStats
	m, err := Train(context.Background(), s, labels, TrainOptions{
		Config: tinyConfig(40), TrainPerClass: 10, Backend: "go",
		Progress: func(e EpochStats) { last = e },
	})
	if err != nil {
		t.Fatal(err)
	}
	if last.Epoch != 40 {
		t.Errorf("last progress epoch %d, want 40", last.Epoch)
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
	t.Logf("final loss %.3f, train accuracy %.2f, test accuracy %.3f", last.Loss, last.TrainAccuracy, acc)
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
	s, labels := synthScene(17, 22, 6, 3, 5)
	train := func(seed int64) *Model {
		m, err := Train(context.Background(), s, labels, TrainOptions{Config: tinyConfig(6), TrainPerClass: 5, Seed: seed, Backend: "go"})
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
