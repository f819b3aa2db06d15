package model

import (
	"context"
	"testing"
)

// TestTrainingCompilesOnce: training with the default augmentation (radiometric
// changes, sub-areas, the clean tail) across the evidence-calibration warm-up
// builds, and so compiles, the training step once for the whole run: every
// epoch's input has the same shape, and what changes between epochs (the
// augmented scene, the sub-area's masks, the calibration switch) are inputs.
// Both encoders; the paper encoder with its full-resolution stage in the
// graph (as on XLA) and on pnec's kernels (the Go backend's default).
func TestTrainingCompilesOnce(t *testing.T) {
	s, labels := synthScene(24, 28, 6, 3, 8)
	for _, tc := range []struct {
		enc     string
		kernels bool
	}{{EncoderPaper, false}, {EncoderPaper, true}, {EncoderCell, false}} {
		cfg := tinyConfig(12) // warm-up 4 epochs, clean tail the last
		cfg.Encoder = tc.enc
		if cfg.Augment != DefaultAugment {
			t.Fatalf("tinyConfig changed the default augmentation: %+v", cfg.Augment)
		}
		useFullRes = tc.kernels
		before := trainGraphBuilds.Load()
		_, err := Train(context.Background(), s, labels, TrainOptions{Config: cfg, Backend: "go"})
		useFullRes = true
		if err != nil {
			t.Fatal(err)
		}
		if n := trainGraphBuilds.Load() - before; n != 1 {
			t.Errorf("%s (kernels %v): the training step was built %d times in 12 epochs, want 1", tc.enc, tc.kernels, n)
		}
	}
}
