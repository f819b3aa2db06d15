package model

import (
	"context"
	"testing"
)

// TestPredictReleasesInputs: after Predict every input tensor the call
// made for itself is released (its device buffer freed at once), not left
// for Go's collector; also after the paper encoder's stride padding and
// for the group-norm statistics pass of training.
func TestPredictReleasesInputs(t *testing.T) {
	s, labels := synthScene(24, 20, 6, 3, 5)
	for _, enc := range []string{EncoderCell, EncoderPaper} {
		cfg := tinyConfig(2)
		cfg.Encoder = enc
		before := liveCallTensors.Load()
		m, err := Train(context.Background(), s, labels, TrainOptions{Config: cfg, Backend: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if n := liveCallTensors.Load() - before; n != 0 {
			t.Errorf("%s: training left %d call inputs unreleased", enc, n)
		}
		p, err := NewPredictor(m, "go")
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range []Scene{s, cropRows(s, 3)} {
			if _, err := p.Predict(context.Background(), sc); err != nil {
				t.Fatal(err)
			}
			if n := liveCallTensors.Load() - before; n != 0 {
				t.Errorf("%s %dx%d: %d call inputs unreleased after Predict", enc, sc.Rows, sc.Cols, n)
			}
		}
		p.Close()
	}
}
