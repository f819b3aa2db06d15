package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestReliabilityPixel(t *testing.T) {
	ln3 := math.Log(3)
	hUniform := 1.0 // normalised entropy of a uniform distribution
	h := -(0.6*math.Log(0.6) + 0.3*math.Log(0.3) + 0.1*math.Log(0.1)) / ln3
	cases := []struct {
		kind ReliabilityKind
		p    []float32
		g    float32
		want float64
	}{
		{ReliabilityGate, []float32{0.6, 0.3, 0.1}, 0.25, 0.75},
		{ReliabilityMaxProb, []float32{0.6, 0.3, 0.1}, 0.25, 0.6},
		{ReliabilityMargin, []float32{0.6, 0.3, 0.1}, 0.25, 0.3},
		{ReliabilityMargin, []float32{0.1, 0.45, 0.45}, 0, 0},
		{ReliabilityEntropy, []float32{0.6, 0.3, 0.1}, 0.25, 1 - h},
		{ReliabilityEntropy, []float32{1.0 / 3, 1.0 / 3, 1.0 / 3}, 0, 1 - hUniform},
		{ReliabilityEntropy, []float32{1, 0, 0}, 0, 1},
		{ReliabilityCombined, []float32{0.6, 0.3, 0.1}, 0.25, math.Sqrt(0.3 * 0.75)},
		// Unnormalised input (sum 2) is renormalised.
		{ReliabilityMaxProb, []float32{1.2, 0.6, 0.2}, 0, 0.6},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			if got := tc.kind.Pixel(tc.p, tc.g); !near(float64(got), tc.want, 1e-6) {
				t.Errorf("%s of %v, g=%v: got %v, want %v", tc.kind, tc.p, tc.g, got, tc.want)
			}
		})
	}
	t.Run("no data", func(t *testing.T) {
		for _, k := range ReliabilityKinds {
			if got := k.Pixel([]float32{0, 0, 0}, 0.5); !math.IsNaN(float64(got)) {
				t.Errorf("%s of a zero pixel: got %v, want NaN", k, got)
			}
		}
	})
}

func TestReliabilityRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, classes := range []int{1, 2, 6, 16} {
		prob := randomProb(rng, 500, classes)
		g := make([]float32, 500)
		for i := range g {
			g[i] = rng.Float32()
		}
		for _, k := range ReliabilityKinds {
			r, err := Reliability(k, prob, g, classes)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range r {
				if !(v >= 0 && v <= 1) {
					t.Fatalf("%s, %d classes, pixel %d: got %v, want 0..1", k, classes, i, v)
				}
			}
		}
	}
}

func TestReliabilityErrors(t *testing.T) {
	if _, err := Reliability("nope", []float32{1}, nil, 1); err == nil {
		t.Error("unknown kind: got nil error")
	}
	if _, err := Reliability(ReliabilityGate, []float32{0.5, 0.5}, nil, 2); err == nil {
		t.Error("gate without uncertainty: got nil error")
	}
	if _, err := Reliability(ReliabilityMargin, []float32{0.5, 0.5, 1}, nil, 2); err == nil {
		t.Error("ragged probabilities: got nil error")
	}
	if k, err := ParseReliability("MARGIN"); err != nil || k != ReliabilityMargin {
		t.Errorf("ParseReliability(MARGIN): got %q, %v", k, err)
	}
	if k, _ := ParseReliability(""); k != DefaultReliability {
		t.Errorf("ParseReliability(\"\"): got %q, want the default %q", k, DefaultReliability)
	}
}

func BenchmarkReliability(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	n, classes := 610*340, 9
	prob := randomProb(rng, n, classes)
	g := make([]float32, n)
	for _, k := range ReliabilityKinds {
		b.Run(string(k), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Reliability(k, prob, g, classes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
