package model

import (
	"math"
	"testing"
)

// TestTrainedAs: a fused model's chosen decision and window do not make
// it another model's; any asked setting does.
func TestTrainedAs(t *testing.T) {
	asked := DefaultConfig()
	asked.Decision = Decision{Mode: DecisionFused}
	asked.Recovery.Window = 0
	trained := asked
	trained.Decision = Decision{Mode: DecisionFused, TemperatureRad: 0.0178, CopyPenaltyRad: math.Pi, SpectralWeight: 16, LocalMean: DecisionLocalMean}
	trained.Recovery.Window = 1
	fixed := asked
	fixed.Recovery.Window = 3
	otherEpochs := trained
	otherEpochs.Epochs++
	network := DefaultConfig()
	network.Decision = Decision{Mode: DecisionNetwork}
	cases := []struct {
		name           string
		trained, asked Config
		want           bool
	}{
		{"the same", asked, asked, true},
		{"decision and window chosen at training", trained, asked, true},
		{"a window asked that the model lacks", trained, fixed, false},
		{"other epochs", otherEpochs, asked, false},
		{"a network decision asked of a fused model", trained, network, false},
		{"a fused decision asked of a network model", network, asked, false},
		{"network models alike", network, network, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TrainedAs(tc.trained, tc.asked); got != tc.want {
				t.Fatalf("TrainedAs = %v, want %v", got, tc.want)
			}
		})
	}
}
