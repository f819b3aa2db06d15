package model

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFusedInferenceMatches: the fused inference graph (FusedDense layers,
// GroupNorms folded into weights, both evidence heads in one product) gives
// the probabilities and uncertainty of the plain graph, with every weight
// perturbed so that no block is zero or the identity (a freshly trained
// model has zero second evidence layers, which would hide an error there).
func TestFusedInferenceMatches(t *testing.T) {
	for _, tc := range []struct{ encoder, input string }{
		{EncoderCell, ""}, {EncoderPaper, ""},
		// The default input (each spectrum over its mean): the paper
		// encoder's kernels make it themselves (fullResMode).
		{EncoderPaper, InputShape},
	} {
		name := tc.encoder
		if tc.input != "" {
			name += "-" + tc.input
		}
		t.Run(name, func(t *testing.T) { fusedInferenceMatches(t, tc.encoder, tc.input) })
	}
}

func fusedInferenceMatches(t *testing.T, encoder, input string) {
	s, labels := synthScene(30, 26, 10, 4, 5)
	cfg := tinyConfig(2)
	cfg.Encoder, cfg.Input = encoder, input
	m, err := Train(context.Background(), s, labels, TrainOptions{Config: cfg, TrainPerClass: 8, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range m.params {
		for j := range m.params[i].Data {
			m.params[i].Data[j] += float32(0.05 * rng.NormFloat64())
		}
	}
	for _, st := range m.meta.GroupNormStats {
		for j := range st.Mean {
			st.Mean[j] += float32(0.1 * rng.NormFloat64())
			st.Var[j] *= float32(0.5 + rng.Float64())
		}
	}
	run := func(mod *Model, fused bool) Prediction {
		p, err := newPredictor(mod, "go", fused, prepInGraph, prepOnHost)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		pred, err := p.Predict(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		return pred
	}
	for _, fixed := range []bool{true, false} {
		mod := m
		if !fixed {
			mod = m.withoutFixedNorm()
		}
		got, want := run(mod, true), run(mod, false)
		var dp, du float64
		for i := range want.Prob {
			dp = max(dp, math.Abs(float64(got.Prob[i]-want.Prob[i])))
		}
		for i := range want.Uncertainty {
			du = max(du, math.Abs(float64(got.Uncertainty[i]-want.Uncertainty[i])))
		}
		t.Logf("stored statistics %v: fused vs plain max difference %.2g probability, %.2g uncertainty", fixed, dp, du)
		if dp > 1e-5 || du > 1e-5 {
			t.Errorf("stored statistics %v: fused inference differs by %g (probability), %g (uncertainty), want <= 1e-5", fixed, dp, du)
		}
	}
}
