package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestConfusionHandChecked(t *testing.T) {
	t.Run("three classes", func(t *testing.T) {
		// rows (truth) 0:[1 1 0] 1:[0 2 0] 2:[1 0 1]
		c, err := ConfusionOf([]int{0, 0, 1, 1, 2, 2}, []int{0, 1, 1, 1, 2, 0}, 3)
		if err != nil {
			t.Fatal(err)
		}
		a := c.Summarize()
		// p_o = 4/6; p_e = (2*2 + 2*3 + 2*1)/36 = 1/3; kappa = (2/3-1/3)/(2/3).
		checks := []struct {
			name      string
			got, want float64
		}{
			{"OA", a.OA, 4.0 / 6},
			{"AA", a.AA, (0.5 + 1 + 0.5) / 3},
			{"kappa", a.Kappa, 0.5},
			{"class 0", a.PerClass[0], 0.5},
			{"class 1", a.PerClass[1], 1},
			{"class 2", a.PerClass[2], 0.5},
		}
		for _, ch := range checks {
			if !near(ch.got, ch.want, 1e-12) {
				t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
			}
		}
		if c.Counts[2*3+0] != 1 || c.Counts[0*3+1] != 1 {
			t.Errorf("got counts %v, want truth 2 -> pred 0 and truth 0 -> pred 1 once each", c.Counts)
		}
	})
	t.Run("two raters textbook", func(t *testing.T) {
		// 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: p_o = 0.7, p_e = 0.5, kappa = 0.4.
		c := NewConfusion(2)
		c.Counts = []int64{20, 5, 10, 15}
		if got := c.Kappa(); !near(got, 0.4, 1e-12) {
			t.Errorf("kappa: got %v, want 0.4", got)
		}
	})
	t.Run("empty class is left out of AA", func(t *testing.T) {
		c, err := ConfusionOf([]int{0, 0, 2}, []int{0, 1, 2}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if pc := c.PerClass(); !math.IsNaN(pc[1]) {
			t.Errorf("class 1 without pixels: got %v, want NaN", pc[1])
		}
		if got := c.AA(); !near(got, 0.75, 1e-12) {
			t.Errorf("AA: got %v, want 0.75", got)
		}
	})
	t.Run("single class perfect", func(t *testing.T) {
		c, _ := ConfusionOf([]int{1, 1}, []int{1, 1}, 2)
		if got := c.Kappa(); got != 1 {
			t.Errorf("kappa: got %v, want 1", got)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		if _, err := ConfusionOf([]int{0}, []int{-1}, 2); err == nil {
			t.Error("prediction -1: got nil error")
		}
		if _, err := ConfusionOf([]int{0, 1}, []int{0}, 2); err == nil {
			t.Error("length mismatch: got nil error")
		}
	})
}

func TestKappaProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 50; trial++ {
		k := 2 + rng.IntN(6)
		n := 1 + rng.IntN(300)
		truth, pred := make([]int, n), make([]int, n)
		for i := range truth {
			truth[i] = rng.IntN(k)
			pred[i] = truth[i]
		}
		perfect, _ := ConfusionOf(truth, pred, k)
		if got := perfect.Kappa(); !near(got, 1, 1e-12) {
			t.Fatalf("perfect agreement: got kappa %v, want 1", got)
		}
		if got := perfect.OA(); got != 1 {
			t.Fatalf("perfect agreement: got OA %v, want 1", got)
		}
		for i := range pred {
			if rng.Float64() < 0.3 {
				pred[i] = rng.IntN(k)
			}
		}
		c, _ := ConfusionOf(truth, pred, k)
		if kap := c.Kappa(); kap > c.OA()+1e-12 || kap < -1-1e-12 {
			t.Fatalf("kappa %v outside [-1, OA=%v]", kap, c.OA())
		}
		// Kappa is symmetric in the two raters.
		ct, _ := ConfusionOf(pred, truth, k)
		if !near(ct.Kappa(), c.Kappa(), 1e-12) {
			t.Fatalf("kappa not symmetric: %v vs %v", ct.Kappa(), c.Kappa())
		}
	}
}

// bruteAUROC compares every wrong pixel with every correct pixel.
func bruteAUROC(u []float32, wrong []bool) float64 {
	var s float64
	var n int
	for i := range u {
		if !wrong[i] {
			continue
		}
		for j := range u {
			if wrong[j] {
				continue
			}
			n++
			switch {
			case u[i] > u[j]:
				s++
			case u[i] == u[j]:
				s += 0.5
			}
		}
	}
	return s / float64(n)
}

func TestDetectErrorsHandChecked(t *testing.T) {
	cases := []struct {
		name                string
		u                   []float32
		wrong               []bool
		top                 float64
		auroc, recall       float64
		meanCorr, meanWrong float64
	}{
		{"perfect separation", []float32{0.9, 0.8, 0.2, 0.1, 0.05}, []bool{true, false, false, false, false}, 0.2, 1, 1, 0.2875, 0.9},
		{"interleaved", []float32{0.9, 0.8, 0.7, 0.6}, []bool{true, false, true, false}, 0.5, 0.75, 0.5, 0.7, 0.8},
		{"inverted", []float32{0.1, 0.9}, []bool{true, false}, 0.5, 0, 0, 0.9, 0.1},
		{"all tied", []float32{0.5, 0.5, 0.5, 0.5, 0.5}, []bool{true, false, true, false, false}, 0.2, 0.5, 0.2, 0.5, 0.5},
		// top 40% of 5 = 2 pixels: the 0.9 pixel plus half of the tied pair at 0.5
		// (half an error of 2); pairs: 1 + 0.5 for the 0.5 error, 0.5 for the 0.1 one, of 6.
		{"tie at the cut", []float32{0.9, 0.5, 0.5, 0.1, 0.1}, []bool{false, true, false, true, false}, 0.4, 1.0 / 3, 0.25, 0.5, 0.3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DetectErrors(tc.u, tc.wrong, tc.top)
			if err != nil {
				t.Fatal(err)
			}
			if !near(d.AUROC, tc.auroc, 1e-9) {
				t.Errorf("AUROC: got %v, want %v", d.AUROC, tc.auroc)
			}
			if !near(d.TopRecall, tc.recall, 1e-9) {
				t.Errorf("top recall: got %v, want %v", d.TopRecall, tc.recall)
			}
			if !near(d.MeanCorrect, tc.meanCorr, 1e-6) || !near(d.MeanWrong, tc.meanWrong, 1e-6) {
				t.Errorf("means: got correct %v wrong %v, want %v %v", d.MeanCorrect, d.MeanWrong, tc.meanCorr, tc.meanWrong)
			}
		})
	}
	t.Run("no errors", func(t *testing.T) {
		d, err := DetectErrors([]float32{0.1, 0.2}, []bool{false, false}, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(d.AUROC) || !math.IsNaN(d.TopRecall) || !math.IsNaN(d.MeanWrong) {
			t.Errorf("got %+v, want NaN AUROC, recall and wrong mean", d)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		if _, err := DetectErrors([]float32{0.1}, []bool{true, false}, 0.2); err == nil {
			t.Error("length mismatch: got nil error")
		}
		if _, err := DetectErrors([]float32{float32(math.NaN())}, []bool{true}, 0.2); err == nil {
			t.Error("NaN score: got nil error")
		}
		if _, err := DetectErrors([]float32{0.1}, []bool{true}, 1.5); err == nil {
			t.Error("top fraction 1.5: got nil error")
		}
	})
}

func TestDetectErrorsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := 0; trial < 100; trial++ {
		n := 2 + rng.IntN(200)
		u := make([]float32, n)
		neg := make([]float32, n)
		wrong := make([]bool, n)
		levels := 1 + rng.IntN(20) // few levels: many ties
		for i := range u {
			wrong[i] = rng.Float64() < 0.3
			u[i] = float32(rng.IntN(levels)) / float32(levels)
			if wrong[i] {
				u[i] = min(1, u[i]+0.2)
			}
			neg[i] = -u[i]
		}
		d, err := DetectErrors(u, wrong, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		if d.Wrong == 0 || d.Correct == 0 {
			continue
		}
		if want := bruteAUROC(u, wrong); !near(d.AUROC, want, 1e-9) {
			t.Fatalf("trial %d: AUROC got %v, brute force %v", trial, d.AUROC, want)
		}
		dn, _ := DetectErrors(neg, wrong, 0.2)
		if !near(dn.AUROC, 1-d.AUROC, 1e-9) {
			t.Fatalf("trial %d: AUROC of -u got %v, want 1-%v", trial, dn.AUROC, d.AUROC)
		}
		// The top recall never exceeds what the top fraction can hold.
		maxRecall := math.Min(1, 0.2*float64(n)/float64(d.Wrong))
		if d.TopRecall < 0 || d.TopRecall > maxRecall+1e-9 {
			t.Fatalf("trial %d: top recall %v outside 0..%v", trial, d.TopRecall, maxRecall)
		}
		full, _ := DetectErrors(u, wrong, 1)
		if !near(full.TopRecall, 1, 1e-9) {
			t.Fatalf("trial %d: recall of the top 100%% got %v, want 1", trial, full.TopRecall)
		}
	}
}

func BenchmarkDetectErrors(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	n := 42776 // Pavia University's labelled pixels
	u := make([]float32, n)
	wrong := make([]bool, n)
	for i := range u {
		u[i] = rng.Float32()
		wrong[i] = rng.Float32() < u[i]*0.2
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DetectErrors(u, wrong, 0.2); err != nil {
			b.Fatal(err)
		}
	}
}
