package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestDots8SameAsDotsSIMD: the 8-pixel kernel gives every pixel's dots bit
// for bit as the one-pixel and four-pixel kernels do (the spectral
// reliability must not depend on how pixels are grouped), for band counts
// around the kernel's two-step unrolling and reference counts of one and
// several 32-blocks.
func TestDots8SameAsDotsSIMD(t *testing.T) {
	if !HaveDots8(DotsPadding()) {
		t.Skip("no AVX-512 (or no GOEXPERIMENT=simd): Dots8 does not run here")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, bands := range []int{1, 2, 3, 103, 200, 224} {
		for _, padded := range []int{32, 128} {
			unitT := make([]float32, bands*padded)
			for i := range unitT {
				unitT[i] = rng.Float32() - 0.5
			}
			s := make([]float32, 8*bands)
			for i := range s {
				s[i] = 1000 * rng.Float32()
			}
			got := make([]float32, 8*padded)
			for i := range got {
				got[i] = 7 // what was there must not count
			}
			Dots8(unitT, padded, s, got)
			var px, four [4][]float32
			for p := range four {
				four[p] = make([]float32, padded)
			}
			one := make([]float32, padded)
			for q := 0; q < 8; q += 4 {
				for p := range 4 {
					px[p] = s[(q+p)*bands : (q+p+1)*bands]
				}
				Dots4SIMD(unitT, padded, &px, &four)
				for p := range 4 {
					DotsSIMD(unitT, padded, px[p], one)
					for j := range padded {
						g := got[(q+p)*padded+j]
						if g != one[j] || g != four[p][j] {
							t.Fatalf("%d bands, %d references: pixel %d reference %d: Dots8 %v, DotsSIMD %v, Dots4SIMD %v", bands, padded, q+p, j, g, one[j], four[p][j])
						}
					}
				}
			}
		}
	}
}
