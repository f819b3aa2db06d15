package main

import (
	"math"
	"testing"

	"github.com/pnec/pnec/spectral"
)

// TestSimulation: a linear spectrum sampled at SalinasA's AVIRIS channels
// gives every covered sensor band the spectrum's value at its centre (a
// Gaussian average of a line); bands in the removed water channels, beyond
// the channels' range, or marked bad by the sensor table are bad.
func TestSimulation(t *testing.T) {
	aviris, _ := spectral.SensorByName("AVIRIS")
	kept := avirisKept("SalinasA")
	if len(kept) != 204 {
		t.Fatalf("SalinasA keeps %d channels, want 204", len(kept))
	}
	src := make([]float64, len(kept))
	px := make([]float32, len(kept))
	for i, ch := range kept {
		src[i] = aviris.Bands.CentresNM[ch]
		px[i] = float32(1000 + 0.5*src[i])
	}
	for _, s := range spectral.Sensors() {
		sim := newSimulation(src, s.Bands)
		out := sim.apply(px, len(px), -9999)
		good := 0
		for k, v := range out {
			c := s.Bands.CentresNM[k]
			f, _ := s.Bands.FWHM(k)
			inGap := c-1.5*f < src[0] || c+1.5*f > src[len(src)-1]
			for j := 1; j < len(src); j++ {
				// The removed water channels leave gaps of 47 and 141 nm.
				if src[j]-src[j-1] > 40 && src[j] > c-1.5*f && src[j-1] < c+1.5*f {
					inGap = true
				}
			}
			if sim.bad[k] {
				if v != -9999 {
					t.Errorf("%s band %d: bad but %g", s.Name, k+1, v)
				}
				continue
			}
			good++
			if inGap || s.Bands.IsBad(k) {
				t.Errorf("%s band %d (%g nm): made from channels across a gap", s.Name, k+1, c)
			}
			if want := 1000 + 0.5*c; math.Abs(float64(v)-want) > 0.05 {
				t.Errorf("%s band %d (%g nm): %g, want %g", s.Name, k+1, c, v, want)
			}
		}
		if good < s.Bands.Bands/2 {
			t.Errorf("%s: %d good bands of %d", s.Name, good, s.Bands.Bands)
		}
	}
}
