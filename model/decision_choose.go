package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/pnec/pnec/model/internal/kernels"
)

// The fused decision's choices at training, from the training pixels
// alone: no test pixel is seen.
const (
	// chooseMaxPerClass bounds the training pixels per class that are left
	// out in turn (and the references they are measured against), so that
	// a densely labelled scene chooses in seconds: the choice needs the
	// spread of a class, not every pixel of it.
	chooseMaxPerClass = 64
	// chooseMaxWindow is the largest recovery window tried: the paper's 9.
	chooseMaxWindow = 9
)

// temperatureGrid are the temperatures tried (radians of spectral angle):
// 1e-4 to 1, eight a decade.
func temperatureGrid() []float64 {
	var out []float64
	for e := -4.0; e <= 1e-9; e += 0.125 {
		out = append(out, math.Pow(10, e))
	}
	return out
}

// copyPenaltiesRad are the copy penalties tried (radians; math.Pi leaves
// the copies out), from the most tolerant of a new acquisition's changes
// to the least.
var copyPenaltiesRad = []float64{0, minCopyPenaltyRad, 0.01, 0.02, 0.04, math.Pi}

// leftOut is one training pixel left out: the angles to the nearest
// training spectrum of each class and to the nearest changed copy of one
// (without the pixel's own) of every valid pixel of the largest window
// around it, at offsets (dr, dc).
type leftOut struct {
	class  int
	dr, dc []int
	angle  [][]float64 // [window pixel][class], to the spectra
	copied [][]float64 // [window pixel][class], to the copies; pi where none
}

// chooseDecision sets the fused decision's temperature, its copy penalty
// and, when window is 0, the recovery window in 1, 3, ..., 9, by leaving
// each training pixel (at most chooseMaxPerClass a class, drawn with seed)
// out in turn. For each copy penalty, T maximises the left-out pixels'
// mean log-probability of their class under the spectral evidence alone;
// the penalty is the smallest (the most tolerant of a new acquisition's
// changes) at which the spectral evidence classifies as many left-out
// pixels right as at any: where changed copies of one class's spectra
// come close to another class's own (JasperRidge's soil and road, mixed
// pixels), they cost left-out pixels and a larger penalty is taken; where
// they cost none, the copies count in full. The window is then the
// largest at which the spectral evidence averaged over the window
// classifies as many left-out pixels right as at any window. Where the
// ground's classes form fields wider than the window, averaging keeps the
// left-out pixels right and the largest window is taken; where they are
// small or mixed, it loses them and a smaller one is. The spectral weight
// follows the window so chosen (spectralWeightFor), even where the caller
// fixes the recovery window: it says how finely the labels change, which
// the network's quarter-resolution features cannot follow.
func chooseDecision(s Scene, trainIdx []int, ytrain []int32, classes int, aug Augment, window int, seed int64) (Decision, int, error) {
	outs, err := leaveOut(s, trainIdx, ytrain, classes, aug, seed)
	if err != nil {
		return Decision{}, 0, err
	}
	d := Decision{Mode: DecisionFused}
	penalties := copyPenaltiesRad
	if len(referenceChanges(aug)) == 0 {
		penalties = penalties[:1] // no copies: the penalty changes nothing
	}
	top := -1
	for _, pen := range penalties {
		t, best := 0.0, math.Inf(-1)
		for _, tt := range temperatureGrid() {
			if ll, _ := looScore(outs, classes, tt, pen, 1); ll > best {
				best, t = ll, tt
			}
		}
		if _, right := looScore(outs, classes, t, pen, 1); right > top {
			top, d.TemperatureRad, d.CopyPenaltyRad = right, t, pen
		}
	}
	win, top := 1, -1
	for w := 1; w <= chooseMaxWindow; w += 2 {
		if _, right := looScore(outs, classes, d.TemperatureRad, d.CopyPenaltyRad, w); right >= top {
			top, win = right, w
		}
	}
	d.SpectralWeight = spectralWeightFor(win)
	if window != 0 {
		return d, window, nil
	}
	return d, win, nil
}

// looScore is the left-out pixels' summed log-probability of their class
// and the number classified right, with the spectral evidence at
// temperature t and copy penalty pen averaged over a window of side w.
func looScore(outs []leftOut, classes int, t, pen float64, w int) (float64, int) {
	h := w / 2
	ll, right := 0.0, 0
	p := make([]float64, classes)
	a := make([]float64, classes)
	mean := make([]float64, classes)
	for _, o := range outs {
		clear(mean)
		n := 0
		for j, plain := range o.angle {
			if abs(o.dr[j]) > h || abs(o.dc[j]) > h {
				continue
			}
			for c, v := range plain {
				a[c] = math.Min(v, o.copied[j][c]+pen)
			}
			softmaxNeg(a, t, p)
			for c := range mean {
				mean[c] += p[c]
			}
			n++
		}
		best := 0
		for c := range mean {
			mean[c] /= float64(n)
			if mean[c] > mean[best] {
				best = c
			}
		}
		ll += math.Log(mean[o.class] + 1e-12)
		if best == o.class {
			right++
		}
	}
	return ll, right
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// softmaxNeg writes softmax(-a / t) into p.
func softmaxNeg(a []float64, t float64, p []float64) {
	lo := math.Inf(1)
	for _, v := range a {
		lo = math.Min(lo, v)
	}
	sum := 0.0
	for c, v := range a {
		p[c] = math.Exp(-(v - lo) / t)
		sum += p[c]
	}
	for c := range p {
		p[c] /= sum
	}
}

// unitSpectrum is s's spectrum i scaled to unit length (nil when it has no
// length or is not finite).
func unitSpectrum(v []float32) []float64 {
	n := 0.0
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if !(n > 0) || math.IsInf(n, 0) {
		return nil
	}
	inv := 1 / math.Sqrt(n)
	out := make([]float64, len(v))
	for b, x := range v {
		out[b] = float64(x) * inv
	}
	return out
}

// leaveOut measures, for each training pixel left out (a sample of at most
// chooseMaxPerClass a class), the class angles of the pixels of the
// largest window around it against the references of the other sampled
// pixels (their augmented copies included).
func leaveOut(s Scene, trainIdx []int, ytrain []int32, classes int, aug Augment, seed int64) ([]leftOut, error) {
	sample := sampleTrain(ytrain, classes, seed)
	B := s.Bands
	if s.Streamed() {
		at := make([]int, len(sample))
		for q, t := range sample {
			at[q] = trainIdx[t]
		}
		s.prefetch(at, chooseMaxWindow/2)
		defer s.dropCache()
	}
	var spectra []float32
	var class []int
	for _, t := range sample {
		i := trainIdx[t]
		spectra = append(spectra, s.spectrumAt(i)...)
		class = append(class, int(ytrain[t]))
	}
	aspectra, aclass := augmentedSpectra(spectra, B, class, aug)
	n := len(class)
	// The unit references band-major, for kernels.DotsF64: every
	// reference's dot with a window pixel at once. One without a spectrum
	// is a column of zeros, and not had.
	nref := len(aclass)
	refsT := make([]float64, B*nref)
	had := make([]bool, nref)
	for j := range nref {
		r := unitSpectrum(aspectra[j*B : (j+1)*B])
		had[j] = r != nil
		for b, v := range r {
			refsT[b*nref+j] = v
		}
	}
	h := chooseMaxWindow / 2
	// Each left-out pixel on its own (in parallel: a densely labelled
	// scene leaves out 64 a class against 64 a class and their copies),
	// kept in the sample's order.
	all := make([]leftOut, len(sample))
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			dots := make([]float64, nref)
			for q := int(next.Add(1) - 1); q < len(sample); q = int(next.Add(1) - 1) {
				if !had[q] {
					continue
				}
				i := trainIdx[sample[q]]
				r0, c0 := i/s.Cols, i%s.Cols
				o := leftOut{class: class[q]}
				for r := max(r0-h, 0); r <= min(r0+h, s.Rows-1); r++ {
					for c := max(c0-h, 0); c <= min(c0+h, s.Cols-1); c++ {
						p := r*s.Cols + c
						if !s.valid(p) {
							continue
						}
						u := unitSpectrum(s.spectrumAt(p))
						if u == nil {
							continue
						}
						kernels.DotsF64(u, refsT, dots)
						plain, copied := classAngles(dots, had, aclass, classes, q, n)
						o.dr, o.dc = append(o.dr, r-r0), append(o.dc, c-c0)
						o.angle, o.copied = append(o.angle, plain), append(o.copied, copied)
					}
				}
				all[q] = o
			}
		})
	}
	wg.Wait()
	outs := make([]leftOut, 0, n)
	for _, o := range all {
		if len(o.angle) > 0 {
			outs = append(outs, o)
		}
	}
	if len(outs) == 0 {
		return nil, fmt.Errorf("decision: no training pixel with a spectrum")
	}
	return outs, nil
}

// classAngles is the angle from a pixel, whose dot with each reference
// is dots[j] (kernels.DotsF64 of unit spectra), to the nearest of the
// first n references (the training spectra) of each class, leaving out
// reference q, and to the nearest of the others (their changed copies),
// leaving out q's (references j with j % n == q); pi for a class without
// any (references j without had[j] are none).
func classAngles(dots []float64, had []bool, class []int, classes, q, n int) (plain, copied []float64) {
	best := make([]float64, 2*classes) // [plain classes..., copied classes...]
	for c := range best {
		best[c] = -2
	}
	for j, d := range dots {
		if !had[j] || j%n == q {
			continue
		}
		k := class[j]
		if j >= n {
			k += classes
		}
		if d > best[k] {
			best[k] = d
		}
	}
	out := make([]float64, 2*classes)
	for c, v := range best {
		if v < -1 {
			out[c] = math.Pi // no reference of the class
			continue
		}
		out[c] = angleOf(1 - math.Min(1, v))
	}
	return out[:classes], out[classes:]
}

// sampleTrain is the positions in the training pixels of at most chooseMaxPerClass
// training pixels a class, drawn with seed (all of them where a class has
// no more).
func sampleTrain(ytrain []int32, classes int, seed int64) []int {
	byClass := make([][]int, classes)
	for t, y := range ytrain {
		byClass[y] = append(byClass[y], t)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 45))
	var out []int
	for _, ts := range byClass {
		if len(ts) > chooseMaxPerClass {
			rng.Shuffle(len(ts), func(a, b int) { ts[a], ts[b] = ts[b], ts[a] })
			ts = ts[:chooseMaxPerClass]
		}
		out = append(out, ts...)
	}
	return out
}
