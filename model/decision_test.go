package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestDefaultDecision: pnec's default decides fused, with its window left
// for training to choose; the paper's configuration and a zero Config
// decide by the network with the paper's window (model files written
// before the fused decision read the same); a fused decision with window
// 0 validates and keeps 0 for training to choose.
func TestDefaultDecision(t *testing.T) {
	d := TrainOptions{Config: DefaultConfig()}.withDefaults().Config
	if !(d.Decision.Mode == DecisionFused) || d.Recovery.Window != 0 {
		t.Fatalf("DefaultConfig decision %+v window %d: want fused with window 0 (chosen at training)", d.Decision, d.Recovery.Window)
	}
	if err := validateConfig(d); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	p := PaperConfig()
	if p.Decision != (Decision{}) || p.Recovery.Window != PaperRecoveryWindow || p.Input != InputStretch || p.Augment != (Augment{}) {
		t.Fatalf("PaperConfig decision %+v window %d input %q augment %+v: want the network's, %d, %q, none", p.Decision, p.Recovery.Window, p.Input, p.Augment, PaperRecoveryWindow, InputStretch)
	}
	z := TrainOptions{}.withDefaults().Config
	if z.Decision.Fused() || z.Recovery.Window != PaperRecoveryWindow {
		t.Fatalf("zero Config: decision %+v window %d, want the network's with window %d", z.Decision, z.Recovery.Window, PaperRecoveryWindow)
	}
	n := DefaultConfig()
	n.Decision, n.Recovery.Window = Decision{}, 0
	if err := validateConfig(TrainOptions{Config: n}.withDefaults().Config); err != nil {
		t.Fatalf("network decision with window 0 (the paper's then): %v", err)
	}
}

// TestFuse: the spectral evidence decides where the network hesitates,
// a confident network holds against a small angle difference, NaN
// distances (no data) leave the network's probabilities, and the
// network's decision changes nothing.
func TestFuse(t *testing.T) {
	const tempRad = 0.01
	dist := func(angles ...float64) []float32 {
		out := make([]float32, len(angles))
		for i, a := range angles {
			out[i] = float32(1 - math.Cos(a))
		}
		return out
	}
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name string
		d    Decision
		prob []float32
		dist []float32
		want int // argmax after fusing
	}{
		{"hesitant network, spectra say 1", Decision{Mode: DecisionFused, TemperatureRad: tempRad}, []float32{0.5, 0.5}, dist(0.05, 0.01), 1},
		{"confident network, spectra nearly level", Decision{Mode: DecisionFused, TemperatureRad: tempRad}, []float32{0.99, 0.01}, dist(0.0102, 0.01), 0},
		{"network ruled it out, spectra far apart", Decision{Mode: DecisionFused, TemperatureRad: tempRad}, []float32{1, 0}, dist(0.2, 0.01), 1},
		// log(0.95/0.05) = 2.94 against w x 0.002 / 0.01: 0.8 at the weight
		// of files without one (4), 3.2 at FineSpectralWeight.
		{"fairly sure network, weight of older files", Decision{Mode: DecisionFused, TemperatureRad: tempRad}, []float32{0.95, 0.05}, dist(0.012, 0.01), 0},
		{"fairly sure network, fine weight", Decision{Mode: DecisionFused, TemperatureRad: tempRad, SpectralWeight: FineSpectralWeight}, []float32{0.95, 0.05}, dist(0.012, 0.01), 1},
		{"network's decision", Decision{Mode: DecisionNetwork}, []float32{0.6, 0.4}, dist(0.2, 0.01), 0},
		{"no data", Decision{Mode: DecisionFused, TemperatureRad: tempRad}, []float32{0.6, 0.4}, []float32{nan, nan}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := append([]float32(nil), tc.prob...)
			if err := tc.d.Fuse(p, tc.dist, 2); err != nil {
				t.Fatal(err)
			}
			got := 0
			if p[1] > p[0] {
				got = 1
			}
			if got != tc.want {
				t.Fatalf("fused %v from %v: class %d, want %d", p, tc.prob, got, tc.want)
			}
			if !tc.d.Fused() || math.IsNaN(float64(tc.dist[0])) {
				if p[0] != tc.prob[0] || p[1] != tc.prob[1] {
					t.Fatalf("probabilities changed to %v", p)
				}
			} else if s := p[0] + p[1]; math.Abs(float64(s)-1) > 1e-5 {
				t.Fatalf("fused probabilities sum to %g", s)
			}
		})
	}
}

// fieldScene is a rows x cols scene of two classes whose spectra differ
// in shape, laid out by class(r, c), with multiplicative noise.
func fieldScene(rows, cols, bands int, class func(r, c int) int, seed uint64) (Scene, []int32) {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := Scene{Rows: rows, Cols: cols, Bands: bands, Data: make([]float32, rows*cols*bands)}
	labels := make([]int32, rows*cols)
	for r := range rows {
		for c := range cols {
			i := r*cols + c
			k := class(r, c)
			labels[i] = int32(k + 1)
			for b := range bands {
				u := float64(b) / float64(bands-1)
				v := 1 + 0.3*u
				if k == 1 {
					v = 1.3 - 0.3*u
				}
				s.Data[i*bands+b] = float32(v * (1 + 0.35*rng.NormFloat64()))
			}
		}
	}
	return s, labels
}

// TestChooseDecisionWindow: on fields wider than the largest window the
// training pixels left out stay right when the spectra are averaged over
// a large window, so one is taken; on classes alternating every pixel
// averaging loses them and the window stays 1. A window given is kept.
// The spectral weight follows the window the training pixels support,
// given window or not: 4 on fields, 16 where the labels change every
// pixel (FineSpectralWeight).
func TestChooseDecisionWindow(t *testing.T) {
	const rows, cols, bands = 40, 40, 16
	for _, tc := range []struct {
		name     string
		class    func(r, c int) int
		min, max int
		weight   float64
	}{
		// Pixels next to the fields' boundary lose at the largest windows:
		// a large one, not necessarily the largest.
		{"fields", func(r, c int) int { return c / 20 }, 5, chooseMaxWindow, 4},
		{"alternating pixels", func(r, c int) int { return (r + c) % 2 }, 1, 1, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, labels := fieldScene(rows, cols, bands, tc.class, 7)
			var idx []int
			var y []int32
			rng := rand.New(rand.NewPCG(3, 3))
			for _, i := range rng.Perm(rows * cols)[:40] {
				idx = append(idx, i)
				y = append(y, labels[i]-1)
			}
			d, win, err := chooseDecision(s, idx, y, 2, Augment{}, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			temp := d.TemperatureRad
			if win < tc.min || win > tc.max || !(temp > 0) {
				t.Fatalf("window %d, temperature %g: want a window in %d..%d and a positive temperature", win, temp, tc.min, tc.max)
			}
			if d.SpectralWeight != tc.weight || d.Weight() != tc.weight {
				t.Fatalf("spectral weight %g (Weight %g) at window %d: want %g", d.SpectralWeight, d.Weight(), win, tc.weight)
			}
			d5, w, _ := chooseDecision(s, idx, y, 2, Augment{}, 5, 1)
			if w != 5 {
				t.Fatalf("window 5 given, %d kept", w)
			}
			if d5.SpectralWeight != tc.weight {
				t.Fatalf("window 5 given: spectral weight %g, want %g (the supported window's)", d5.SpectralWeight, tc.weight)
			}
		})
	}
}

// TestDecisionReferenceAugmented: a model trained with the default
// augmentation measures angles to its training spectra and to their
// tilted and band-shifted copies (3 shapes x 4 amplitudes, 2 shifts
// alone and with each of 3 shapes x 2 half amplitudes: 27 spectra per
// training pixel with the original); without augmentation to the spectra
// alone.
func TestDecisionReferenceAugmented(t *testing.T) {
	spectra := []float32{1, 2, 3, 4, 4, 3, 2, 1}
	class := []int{0, 1}
	got, gotClass := augmentedSpectra(spectra, 4, class, DefaultAugment)
	if len(gotClass) != 2*27 || len(got) != 2*27*4 {
		t.Fatalf("%d augmented spectra, want 54", len(gotClass))
	}
	for j, c := range gotClass {
		if c != class[j%2] {
			t.Fatalf("copy %d has class %d, want %d", j, c, class[j%2])
		}
	}
	if plain, _ := augmentedSpectra(spectra, 4, class, Augment{}); len(plain) != len(spectra) {
		t.Fatalf("without augmentation %d values, want %d", len(plain), len(spectra))
	}
}

// TestDecisionValidateWeight: a model file's spectral weight is read only
// within 0 (files before it, deciding with SpectralWeight) to
// maxSpectralWeight; a negative, NaN or infinite one is refused naming it.
func TestDecisionValidateWeight(t *testing.T) {
	for _, tc := range []struct {
		weight float64
		ok     bool
	}{
		{0, true}, {SpectralWeight, true}, {FineSpectralWeight, true}, {maxSpectralWeight, true},
		{-1, false}, {math.NaN(), false}, {math.Inf(1), false}, {2 * maxSpectralWeight, false},
	} {
		d := Decision{Mode: DecisionFused, TemperatureRad: 0.01, SpectralWeight: tc.weight}
		err := d.validate()
		if (err == nil) != tc.ok {
			t.Errorf("spectral weight %g: error %v, want ok %v", tc.weight, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "spectral weight") {
			t.Errorf("spectral weight %g: error %q does not name it", tc.weight, err)
		}
	}
	if w := (Decision{Mode: DecisionFused, TemperatureRad: 0.01}).Weight(); w != SpectralWeight {
		t.Errorf("weight of a file without one: %g, want %d", w, SpectralWeight)
	}
}
