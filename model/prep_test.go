package model

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pnec/pnec/internal/quantile"
)

// TestInputLevels: with Config.InputLevels 256 the paper encoder's input
// is on the 1/255 grid (the cell encoder averages such values); a model
// trained with it, with either encoder, keeps the setting
// through a save/load round trip, and predicts the same after it; a
// scene whose stretched values are already on the grid gives the same
// input with and without quantisation.
func TestInputLevels(t *testing.T) {
	s, labels := synthScene(20, 24, 6, 3, 9)
	lo, hi, err := bandStretch(s)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := netInput(s, newInputSpec(InputStretch, 256, lo, hi), EncoderPaper)
	for i, v := range x {
		if q := float64(v) * 255; math.Abs(q-math.Round(q)) > 1e-4 {
			t.Fatalf("input value %d = %g is not on the 1/255 grid", i, v)
		}
	}
	for _, enc := range []string{EncoderCell, EncoderPaper} {
		cfg := tinyConfig(3)
		cfg.Encoder, cfg.InputLevels = enc, 256
		m, err := Train(context.Background(), s, labels, TrainOptions{Config: cfg, TrainPerClass: 4, Backend: "go"})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "m.pnec")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if back.Config().InputLevels != 256 {
			t.Fatalf("%s: InputLevels %d after the round trip, want 256", enc, back.Config().InputLevels)
		}
		p1, err := NewPredictor(m, "go")
		if err != nil {
			t.Fatal(err)
		}
		a, err := p1.Predict(context.Background(), s)
		p1.Close()
		if err != nil {
			t.Fatal(err)
		}
		p2, err := NewPredictor(back, "go")
		if err != nil {
			t.Fatal(err)
		}
		b, err := p2.Predict(context.Background(), s)
		p2.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i := range a.Prob {
			if a.Prob[i] != b.Prob[i] {
				t.Fatalf("%s: probability %d differs after the round trip: %g vs %g", enc, i, a.Prob[i], b.Prob[i])
			}
		}
	}
	// Values already on the grid: quantisation changes nothing.
	g := Scene{Rows: 4, Cols: 4, Bands: 1, Data: make([]float32, 16)}
	for i := range g.Data {
		g.Data[i] = float32(i*13%256) / 255
	}
	glo, ghi := []float32{0}, []float32{1}
	x0, _ := netInput(g, newInputSpec(InputStretch, 0, glo, ghi), EncoderPaper)
	x8, _ := netInput(g, newInputSpec(InputStretch, 256, glo, ghi), EncoderPaper)
	for i := range x0 {
		if x0[i] != x8[i] {
			t.Errorf("value %d: %g quantised to %g", i, x0[i], x8[i])
		}
	}
}

// TestSelectPercentileIsSorts: the selection gives the sorted values'
// percentile bit for bit, on values with ties, runs and one value.
func TestSelectPercentileIsSorts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n < 300; n += 7 {
		for _, levels := range []int{1, 3, 1000, 0} {
			vals := make([]float64, n)
			for i := range vals {
				if levels == 0 {
					vals[i] = float64(i) // already sorted
				} else {
					vals[i] = float64(rng.IntN(levels)) + 0.25
				}
			}
			sorted := slices.Clone(vals)
			slices.Sort(sorted)
			for _, pct := range []float64{0, 2, 50, 98, 100} {
				got := selectPercentile(slices.Clone(vals), pct)
				if want := quantile.Percentile(sorted, pct); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("n %d levels %d pct %g: %g, want %g", n, levels, pct, got, want)
				}
			}
		}
	}
}
