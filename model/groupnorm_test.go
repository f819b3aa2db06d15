package model

import (
	"context"
	"math"
	"path/filepath"
	"testing"
)

// withoutFixedNorm is a copy of m that predicts with per-image statistics.
func (m *Model) withoutFixedNorm() *Model {
	c := *m
	c.meta.GroupNormStats = nil
	return &c
}

// predictWith runs m on s (Go backend).
func predictWith(t *testing.T, m *Model, s Scene) Prediction {
	t.Helper()
	p, err := NewPredictor(m, "go")
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

// cropRows is rows [0, n) of s.
func cropRows(s Scene, n int) Scene {
	return Scene{Rows: n, Cols: s.Cols, Bands: s.Bands, Data: s.Data[:n*s.Cols*s.Bands]}
}

// maxProbDiff is the largest |a-b| over the first n pixels' probabilities.
func maxProbDiff(a, b Prediction, n int) float64 {
	var d float64
	for i := 0; i < n*a.Classes; i++ {
		d = max(d, math.Abs(float64(a.Prob[i]-b.Prob[i])))
	}
	return d
}

// TestFixedNormStats: training stores GroupNorm statistics; with them the
// training scene is classified as with per-image statistics, a crop is
// normalised like the whole scene (so rows the causal scan sees identically
// get the same probabilities), and the statistics survive a save and load.
func TestFixedNormStats(t *testing.T) {
	for _, tc := range []struct {
		encoder string
		calls   int // GroupNorm calls with statistics
	}{
		// embed, conv, two branches, the head on raw and on calibrated features.
		{EncoderCell, 6},
		// The paper's convolution is followed by pooling, not a GroupNorm.
		{EncoderPaper, 5},
	} {
		t.Run(tc.encoder, func(t *testing.T) { testFixedNormStats(t, tc.encoder, tc.calls) })
	}
}

func testFixedNormStats(t *testing.T, encoder string, calls int) {
	s, labels := synthScene(32, 28, 12, 3, 3)
	cfg := tinyConfig(20)
	cfg.Encoder = encoder
	m, err := Train(context.Background(), s, labels, TrainOptions{Config: cfg, TrainPerClass: 8, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if !m.FixedNorm() {
		t.Fatal("trained model has no GroupNorm statistics")
	}
	if got := len(m.meta.GroupNormStats); got != calls {
		t.Errorf("got %d GroupNorm statistics, want %d", got, calls)
	}
	perImage := m.withoutFixedNorm()

	fixed, own := predictWith(t, m, s), predictWith(t, perImage, s)
	if d := maxProbDiff(fixed, own, s.Rows*s.Cols); d > 1e-4 {
		t.Errorf("training scene: stored vs per-image statistics differ by %g in probability, want <= 1e-4", d)
	}

	// Top half alone: rows above the last two stride-4 cells of the crop see
	// the same scan prefix and convolution neighbourhood as in the whole scene.
	const cropN, sameRows = 16, 8
	crop := cropRows(s, cropN)
	dFixed := maxProbDiff(predictWith(t, m, crop), fixed, sameRows*s.Cols)
	dOwn := maxProbDiff(predictWith(t, perImage, crop), own, sameRows*s.Cols)
	t.Logf("top %d rows of a %d-row crop vs whole: max probability difference %.2g with stored statistics, %.2g with per-image", sameRows, cropN, dFixed, dOwn)
	if dFixed > 1e-4 {
		t.Errorf("crop with stored statistics differs from the whole scene by %g, want <= 1e-4", dFixed)
	}

	path := filepath.Join(t.TempDir(), "m.pnec")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.meta.GroupNormStats) != len(m.meta.GroupNormStats) {
		t.Fatalf("loaded %d GroupNorm statistics, saved %d", len(m2.meta.GroupNormStats), len(m.meta.GroupNormStats))
	}
	for j, st := range m.meta.GroupNormStats {
		got := m2.meta.GroupNormStats[j]
		for g := range st.Mean {
			if got.Key != st.Key || math.Float32bits(got.Mean[g]) != math.Float32bits(st.Mean[g]) || math.Float32bits(got.Var[g]) != math.Float32bits(st.Var[g]) {
				t.Fatalf("statistics %d after load %+v, want %+v", j, got, st)
			}
		}
	}

	// A file without statistics (as written before they existed) loads and
	// predicts with per-image statistics.
	old := filepath.Join(t.TempDir(), "old.pnec")
	if err := perImage.Save(old); err != nil {
		t.Fatal(err)
	}
	m3, err := Load(old)
	if err != nil {
		t.Fatal(err)
	}
	if m3.FixedNorm() {
		t.Error("model saved without statistics reports FixedNorm")
	}
	if d := maxProbDiff(predictWith(t, m3, crop), predictWith(t, perImage, crop), cropN*s.Cols); d != 0 {
		t.Errorf("old-format model predicts %g away from per-image statistics, want 0", d)
	}
}
