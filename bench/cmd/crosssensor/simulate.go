package main

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/pnec/pnec/spectral"
)

// The AVIRIS (classic) channels the benchmark cubes keep, 1-based, of the
// instrument's 224 (the water-absorption channels were removed by the
// cubes' publishers): SalinasA drops 108-112, 154-167 and 224 (204 left),
// Jasper Ridge 1-3, 108-112, 154-166 and 220-224 (198 left).
var avirisDropped = map[string][][2]int{
	"SalinasA":    {{108, 112}, {154, 167}, {224, 224}},
	"JasperRidge": {{1, 3}, {108, 112}, {154, 166}, {220, 224}},
}

// avirisKept is the 0-based AVIRIS channels a cube keeps.
func avirisKept(scene string) []int {
	var out []int
	for ch := 1; ch <= 224; ch++ {
		drop := false
		for _, r := range avirisDropped[scene] {
			drop = drop || (ch >= r[0] && ch <= r[1])
		}
		if !drop {
			out = append(out, ch-1)
		}
	}
	return out
}

// simulation turns a spectrum sampled at the source's band centres into a
// sensor's bands: each sensor band is the average of the spectrum under a
// Gaussian spectral response of the band's centre and FWHM, the spectrum
// taken as piecewise linear between the source's centres and integrated
// numerically on a 0.25 nm grid. This is deliberately not pnec's own
// resampling (which composes Gaussians analytically), so that applying a
// model through pnec's resampling is not checked against itself.
type simulation struct {
	out     int
	weights [][]float64 // per sensor band: weight of each source band
	bad     []bool      // sensor bands the source cannot make, or the sensor's own bad bands
}

// gapNM is the largest distance between two neighbouring source centres
// that counts as covered: AVIRIS's channels are about 9.4 nm apart, and a
// removed water-absorption channel leaves a gap twice that.
const gapNM = 15

// newSimulation prepares a sensor's bands from source centres srcNM
// (ascending). A sensor band whose response, out to 1.5 FWHM either side
// of its centre, leaves the source's range or crosses a gap is bad, as are
// the bands the sensor table marks bad.
func newSimulation(srcNM []float64, sensor spectral.BandSet) simulation {
	sim := simulation{out: sensor.Bands, weights: make([][]float64, sensor.Bands), bad: make([]bool, sensor.Bands)}
	n := len(srcNM)
	for k := range sensor.Bands {
		c := sensor.CentresNM[k]
		f, _ := sensor.FWHM(k)
		w := make([]float64, n)
		sim.weights[k] = w
		lo, hi := c-1.5*f, c+1.5*f
		if sensor.IsBad(k) || lo < srcNM[0] || hi > srcNM[n-1] {
			sim.bad[k] = true
			continue
		}
		for j := 1; j < n; j++ {
			if srcNM[j] > lo && srcNM[j-1] < hi && srcNM[j]-srcNM[j-1] > gapNM {
				sim.bad[k] = true
			}
		}
		if sim.bad[k] {
			continue
		}
		sigma := f / spectral.FWHMPerSigma
		sum := 0.0
		j := 0
		for l := math.Max(srcNM[0], c-5*sigma); l <= math.Min(srcNM[n-1], c+5*sigma); l += 0.25 {
			for j < n-2 && srcNM[j+1] < l {
				j++
			}
			t := (l - srcNM[j]) / (srcNM[j+1] - srcNM[j])
			g := math.Exp(-(l - c) * (l - c) / (2 * sigma * sigma))
			w[j] += g * (1 - t)
			w[j+1] += g * t
			sum += g
		}
		for i := range w {
			w[i] /= sum
		}
	}
	return sim
}

// apply makes the sensor's bands of every pixel of px (nb source values
// each); bad bands hold nodata.
func (s simulation) apply(px []float32, nb int, nodata float32) []float32 {
	npx := len(px) / nb
	out := make([]float32, npx*s.out)
	for p := range npx {
		in := px[p*nb : (p+1)*nb]
		for k, w := range s.weights {
			if s.bad[k] {
				out[p*s.out+k] = nodata
				continue
			}
			v := 0.0
			for j, x := range w {
				if x != 0 {
					v += x * float64(in[j])
				}
			}
			out[p*s.out+k] = float32(v)
		}
	}
	return out
}

// writeENVI writes pixel-interleaved Float32 data as an ENVI BSQ cube with
// its header: band centres, widths, the bad band list and the no-data
// value, as a sensor's delivery states them.
func writeENVI(path string, rows, cols int, px []float32, sensor spectral.BandSet, bad []bool, nodata float32) error {
	nb := sensor.Bands
	raw := make([]byte, 0, len(px)*4)
	for b := range nb {
		for p := range rows * cols {
			u := math.Float32bits(px[p*nb+b])
			raw = append(raw, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		}
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return err
	}
	list := func(v []float64) string {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	bbl := make([]float64, nb)
	for i := range bbl {
		if !bad[i] {
			bbl[i] = 1
		}
	}
	hdr := fmt.Sprintf("ENVI\nsamples = %d\nlines = %d\nbands = %d\nheader offset = 0\nfile type = ENVI Standard\ndata type = 4\n"+
		"interleave = bsq\nbyte order = 0\nwavelength units = Nanometers\nwavelength = %s\nfwhm = %s\nbbl = %s\ndata ignore value = %g\n",
		cols, rows, nb, list(sensor.CentresNM), list(sensor.FWHMNM), list(bbl), nodata)
	return os.WriteFile(strings.TrimSuffix(path, ".img")+".hdr", []byte(hdr), 0o644)
}
