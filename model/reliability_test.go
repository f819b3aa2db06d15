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

func TestSpectralReference(t *testing.T) {
	ref, err := NewSpectralReference([]float32{1, 0, 0, 1, 0, 0}, 2, []int{0, 1, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	a0 := math.Atan(0.1)
	want := (math.Pi/2 - a0) / (math.Pi / 2)
	cases := []struct {
		name     string
		spectrum []float32
		label    int
		want     float64
	}{
		{"near its class", []float32{1, 0.1}, 0, want},
		{"near the other class", []float32{1, 0.1}, 1, 1 - want},
		{"scale does not matter", []float32{10, 1}, 0, want},
		{"exactly a reference", []float32{0, 3}, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ref.Agreement(tc.spectrum, tc.label); !near(float64(got), tc.want, 1e-6) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if got := ref.Agreement([]float32{0, 0}, 0); !math.IsNaN(float64(got)) {
		t.Errorf("zero spectrum: got %v, want NaN", got)
	}
	if got := ReliabilitySpectralMargin.PixelSpectral([]float32{0.7, 0.3}, 0, 0.64); !near(float64(got), math.Sqrt(0.4*0.64), 1e-6) {
		t.Errorf("spectral-margin: got %v, want sqrt(0.4*0.64)", got)
	}
	if got := ReliabilityMargin.PixelSpectral([]float32{0.7, 0.3}, 0, 0.64); !near(float64(got), 0.4, 1e-6) {
		t.Errorf("margin through PixelSpectral: got %v, want 0.4", got)
	}
	for _, bad := range []struct {
		name    string
		spectra []float32
		class   []int
	}{
		{"ragged", []float32{1, 0, 1}, []int{0, 1}},
		{"one class", []float32{1, 0, 0, 1}, []int{0, 0}},
		{"class out of range", []float32{1, 0, 0, 1}, []int{0, 2}},
	} {
		if _, err := NewSpectralReference(bad.spectra, 2, bad.class, 2); err == nil {
			t.Errorf("%s: got nil error", bad.name)
		}
	}
	if k, err := ParseReliability("Spectral"); err != nil || k != ReliabilitySpectral {
		t.Errorf("ParseReliability(Spectral): got %q, %v; want spectral", k, err)
	}
}

// BenchmarkSpectralAgreement measures the spectral reliability at Pavia
// University's scale: 15 training pixels per class for 9 classes, 103 bands;
// one op is 10,000 pixels.
func BenchmarkSpectralAgreement(b *testing.B) {
	rng := rand.New(rand.NewPCG(17, 18))
	bands, classes, perClass, pixels := 103, 9, 15, 10000
	ref := make([]float32, classes*perClass*bands)
	cls := make([]int, classes*perClass)
	for i := range ref {
		ref[i] = 1000 + 500*rng.Float32()
	}
	for i := range cls {
		cls[i] = i / perClass
	}
	r, err := NewSpectralReference(ref, bands, cls, classes)
	if err != nil {
		b.Fatal(err)
	}
	px := make([]float32, pixels*bands)
	for i := range px {
		px[i] = 1000 + 500*rng.Float32()
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < pixels; i++ {
			r.Agreement(px[i*bands:(i+1)*bands], i%classes)
		}
	}
}

// randomProb is n random probability vectors of k classes (each sums to 1).
func randomProb(rng *rand.Rand, n, k int) []float32 {
	p := make([]float32, n*k)
	for i := range n {
		row := p[i*k : (i+1)*k]
		var s float32
		for j := range row {
			row[j] = rng.Float32()
			s += row[j]
		}
		for j := range row {
			row[j] /= s
		}
	}
	return p
}
