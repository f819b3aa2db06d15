package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/pnec/pnec/model/internal/kernels"
)

// checkScene validates the sizes of s.
func checkScene(s Scene) error {
	switch {
	case s.Rows < 1 || s.Cols < 1 || s.Bands < 1:
		return fmt.Errorf("scene size %dx%dx%d: every dimension must be positive", s.Rows, s.Cols, s.Bands)
	case s.stream == nil && len(s.Data) != s.Rows*s.Cols*s.Bands:
		return fmt.Errorf("scene data has %d values, want %d (%dx%dx%d)", len(s.Data), s.Rows*s.Cols*s.Bands, s.Rows, s.Cols, s.Bands)
	case s.Valid != nil && len(s.Valid) != s.Rows*s.Cols:
		return fmt.Errorf("scene valid mask has %d values, want %d", len(s.Valid), s.Rows*s.Cols)
	}
	return nil
}

func (s Scene) valid(i int) bool {
	if s.Valid != nil && !s.Valid[i] {
		return false
	}
	return true
}

// bandStretch computes each band's 2nd and 98th percentiles over the valid
// pixels of s (linear interpolation between order statistics, like numpy);
// of a streamed scene, the same percentiles from two passes in strips
// (streamedStretch).
func bandStretch(s Scene) (lo, hi []float32, err error) {
	if s.stream != nil {
		return streamedStretch(s)
	}
	lo, hi = make([]float32, s.Bands), make([]float32, s.Bands)
	vals := make([]float64, 0, s.Rows*s.Cols)
	for b := 0; b < s.Bands; b++ {
		vals = vals[:0]
		for i := 0; i < s.Rows*s.Cols; i++ {
			if v := float64(s.Data[i*s.Bands+b]); s.valid(i) && !math.IsNaN(v) && !math.IsInf(v, 0) {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			return nil, nil, fmt.Errorf("band %d has no valid pixels", b+1)
		}
		lo[b], hi[b] = float32(selectPercentile(vals, 2)), float32(selectPercentile(vals, 98))
	}
	return lo, hi, nil
}

// selectPercentile is quantile.Percentile(sorted vals, pct) without sorting: the
// two order statistics it interpolates, found by selection (vals is
// reordered). A full sort of each band took most of a minute's set-up on
// a 1000 x 1000 x 224 scene; the values are the same.
func selectPercentile(vals []float64, pct float64) float64 {
	i, f := percentileRank(len(vals), pct)
	if i >= len(vals)-1 {
		return slices.Max(vals)
	}
	selectNth(vals, i)
	// vals[i] is the i-th smallest and every value after it is at least
	// as large: the next order statistic is their minimum.
	return lerpOrder(vals[i], slices.Min(vals[i+1:]), f)
}

// percentileRank is where percentile pct of n values lies: between the
// i-th smallest (from 0) and the next, a fraction f of the way (the
// largest alone when i >= n-1).
func percentileRank(n int, pct float64) (i int, f float64) {
	pos := pct / 100 * float64(n-1)
	i = int(math.Floor(pos))
	return i, pos - float64(i)
}

// lerpOrder is the percentile between order statistics v and next at
// fraction f (percentileRank), in the arithmetic every stretch uses.
func lerpOrder(v, next, f float64) float64 { return v*(1-f) + next*f }

// selectNth reorders vals so that vals[k] is the value a sort would put
// there, with no larger value before it and no smaller one after it
// (quickselect, median-of-three pivots; vals holds no NaN).
func selectNth(vals []float64, k int) {
	lo, hi := 0, len(vals)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		// Median of three as the pivot, moved to hi.
		if vals[mid] < vals[lo] {
			vals[mid], vals[lo] = vals[lo], vals[mid]
		}
		if vals[hi] < vals[lo] {
			vals[hi], vals[lo] = vals[lo], vals[hi]
		}
		if vals[mid] < vals[hi] {
			vals[mid], vals[hi] = vals[hi], vals[mid]
		}
		pivot := vals[hi]
		// Three-way partition: [lo,lt) < pivot, [lt,gt] == pivot, (gt,hi] > pivot.
		lt, gt, i := lo, hi, lo
		for i <= gt {
			switch v := vals[i]; {
			case v < pivot:
				vals[lt], vals[i] = vals[i], vals[lt]
				lt++
				i++
			case v > pivot:
				vals[gt], vals[i] = vals[i], vals[gt]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return
		}
	}
}

// stretchScales are 1/(hi-lo) per band (0 for a constant band).
func stretchScales(lo, hi []float32) []float32 {
	scale := make([]float32, len(lo))
	for b := range scale {
		if d := hi[b] - lo[b]; d > 0 {
			scale[b] = 1 / d
		}
	}
	return scale
}

// inputChannels is the number of input channels of the network for a
// scene of bands bands with input mode mode (Config.Input).
func inputChannels(mode string, bands int) int {
	if mode == InputStretchShape {
		return 2 * bands
	}
	return bands
}

// inputSpec turns one pixel's raw spectrum into the network's input
// channels (Config.Input).
type inputSpec struct {
	mode      string
	lo, scale []float32 // the per-band stretch (InputStretch, InputStretchShape)
	levels    int       // quantisation of the stretched values (Config.InputLevels; kernels.Quantize01)
}

func newInputSpec(mode string, levels int, lo, hi []float32) inputSpec {
	if mode == "" {
		mode = InputStretch
	}
	return inputSpec{mode: mode, lo: lo, scale: stretchScales(lo, hi), levels: levels}
}

// shapeClip bounds the shape channels: a pixel whose spectrum is tiny next
// to one band's value (a dark pixel with one noisy band) cannot produce an
// input far outside what training saw.
const shapeClip = 4

// add adds the pixel's input channels for the raw spectrum v to dst
// (len channels): the per-band stretch, and/or the spectrum divided by its
// mean over the bands and halved (brightness removed), or its standard
// normal variate (mean removed, divided by its standard deviation).
func (p *inputSpec) add(dst, v []float32) {
	switch p.mode {
	case InputShape, InputStretchShape:
		shape := dst
		if p.mode == InputStretchShape {
			kernels.AddStretch(dst, v, p.lo, p.scale, p.levels)
			shape = dst[len(v):]
		}
		mean := kernels.SumNonNaN(v) / float64(len(v))
		if !(mean > 0) || math.IsInf(mean, 0) {
			return // no spectrum to normalise: zero, like nodata
		}
		kernels.AddShape(shape, v, float32(0.5/mean), shapeClip)
	case InputSNV:
		mean, sq := 0.0, 0.0
		for _, x := range v {
			mean += float64(x)
			sq += float64(x) * float64(x)
		}
		n := float64(len(v))
		mean /= n
		sd := math.Sqrt(max(sq/n-mean*mean, 0))
		if !(sd > 0) || math.IsInf(sd, 0) || math.IsNaN(mean) {
			return
		}
		for b, x := range v {
			y := float32((float64(x)-mean)/sd)*0.25 + 0.5
			if !(y > -shapeClip) {
				y = 0
			}
			dst[b] += min(y, shapeClip)
		}
	default:
		kernels.AddStretch(dst, v, p.lo, p.scale, p.levels)
	}
}

// padTo returns n rounded up to a multiple of Stride.
func padTo(n int) int { return (n + Stride - 1) / Stride * Stride }

// cellMeans turns each valid pixel of s into the network's input channels
// (inputSpec: for the reference input, the per-band stretch to [0,1] with
// lo/hi, clipped) and averages the valid pixels of each Stride x Stride
// cell: the result is [ceil(Rows/4)][ceil(Cols/4)][channels], zero for
// cells without a valid pixel. The network's 1x1 spectral embedding is
// linear, so embedding the cell means equals pooling the embedded pixels;
// doing it first keeps all the network's work on the stride-4 grid (see
// docs/model.md, "Architecture as implemented").
func cellMeans(s Scene, in inputSpec) []float32 {
	hs, ws := padTo(s.Rows)/Stride, padTo(s.Cols)/Stride
	ch := inputChannels(in.mode, s.Bands)
	out := make([]float32, hs*ws*ch)
	count := make([]float32, hs*ws)
	// Bands of cell rows are independent (each writes its own cells), so
	// they are summed in parallel: this pass reads the whole scene.
	workers := min(runtime.GOMAXPROCS(0), hs)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(cr0, cr1 int) {
			defer wg.Done()
			cellMeanRows(s, cr0, cr1, ws, ch, &in, out, count)
		}(w*hs/workers, (w+1)*hs/workers)
	}
	wg.Wait()
	return out
}

// cellMeanRows fills out and count for the cell rows [cr0, cr1) (see cellMeans).
func cellMeanRows(s Scene, cr0, cr1, ws, ch int, in *inputSpec, out, count []float32) {
	for r := cr0 * Stride; r < min(s.Rows, cr1*Stride); r++ {
		for c := 0; c < s.Cols; c++ {
			i := r*s.Cols + c
			if !s.valid(i) {
				continue
			}
			cell := r/Stride*ws + c/Stride
			count[cell]++
			in.add(out[cell*ch:(cell+1)*ch], s.Data[i*s.Bands:(i+1)*s.Bands])
		}
	}
	for cell := cr0 * ws; cell < cr1*ws; cell++ {
		if n := count[cell]; n > 1 {
			for b := cell * ch; b < (cell+1)*ch; b++ {
				out[b] /= n
			}
		}
	}
}

// lowRes is the network's output grid size along an axis of n pixels: the
// cell encoder's ceil(n/4) cells (a partial cell averages its pixels), the
// paper encoder's floor grid (MaxPool and AvgPool drop a remainder).
func lowRes(n int, encoder string) int {
	if encoder == EncoderPaper {
		return n / Stride
	}
	return padTo(n) / Stride
}

// upMatrix is the bilinear interpolation matrix [n][ns] from a stride-4
// grid of ns cells to n full-resolution positions, with PyTorch's
// align_corners=False convention (source = (i+0.5)/4 - 0.5, clamped). The
// reference uses align_corners=True, whose source positions depend on the
// scene's size; this convention depends only on the pixel's position in
// its cell, so a tile (aligned to 4 pixels) interpolates exactly like the
// whole scene.
func upMatrix(n, ns int) []float32 {
	m := make([]float32, n*ns)
	for i := 0; i < n; i++ {
		src := (float64(i)+0.5)/Stride - 0.5
		if src < 0 {
			src = 0
		}
		i0 := int(math.Floor(src))
		if i0 > ns-1 {
			i0 = ns - 1
		}
		i1 := min(i0+1, ns-1)
		f := float32(src - float64(i0))
		if i0 == i1 {
			f = 0
		}
		m[i*ns+i0] += 1 - f
		m[i*ns+i1] += f
	}
	return m
}

// pixelInputs is every pixel of s turned into the network's input channels
// (inputSpec), full resolution [Rows][Cols][channels], zero at invalid
// pixels: the paper encoder's input.
func pixelInputs(s Scene, in inputSpec) []float32 {
	ch := inputChannels(in.mode, s.Bands)
	out := make([]float32, s.Rows*s.Cols*ch)
	workers := min(runtime.GOMAXPROCS(0), s.Rows)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(r0, r1 int) {
			defer wg.Done()
			for i := r0 * s.Cols; i < r1*s.Cols; i++ {
				if !s.valid(i) {
					continue
				}
				in.add(out[i*ch:(i+1)*ch], s.Data[i*s.Bands:(i+1)*s.Bands])
			}
		}(w*s.Rows/workers, (w+1)*s.Rows/workers)
	}
	wg.Wait()
	return out
}

// netInput is the network's input for s: the cell means [Hs, Ws, C]
// for the cell encoder, the per-pixel inputs [Rows, Cols, C] for the
// paper's (C = inputChannels); with the valid masks of the grids its
// GroupNorms run on (see netMasks).
func netInput(s Scene, in inputSpec, encoder string) (x []float32, dims []int) {
	ch := inputChannels(in.mode, s.Bands)
	if encoder == EncoderPaper {
		return pixelInputs(s, in), []int{s.Rows, s.Cols, ch}
	}
	return cellMeans(s, in), []int{padTo(s.Rows) / Stride, padTo(s.Cols) / Stride, ch}
}

// netMasks are 1/0 valid masks of the grids the network normalises on, so
// that nodata pixels and cells stay out of GroupNorm statistics: the
// stride-4 grid (a cell is valid when one of its pixels is: the pixels it
// pools from for the paper's floor grid), and for the paper encoder also
// the full-resolution pixels (first).
func netMasks(s Scene, encoder string) [][]float32 {
	hs, ws := lowRes(s.Rows, encoder), lowRes(s.Cols, encoder)
	cells := make([]float32, hs*ws)
	var pix []float32
	if encoder == EncoderPaper {
		pix = make([]float32, s.Rows*s.Cols)
	}
	for r := 0; r < s.Rows; r++ {
		for c := 0; c < s.Cols; c++ {
			i := r*s.Cols + c
			if !s.valid(i) {
				continue
			}
			if pix != nil {
				pix[i] = 1
			}
			if cr, cc := r/Stride, c/Stride; cr < hs && cc < ws {
				cells[cr*ws+cc] = 1
			}
		}
	}
	if pix != nil {
		return [][]float32{pix, cells}
	}
	return [][]float32{cells}
}

// pickSplit chooses up to perClass training pixels per class with rng seeded
// by seed; dense[i] is the dense class index of pixel i or -1.
func pickSplit(dense []int32, k, perClass int, seed int64) []int {
	byClass := make([][]int, k)
	for i, c := range dense {
		if c >= 0 {
			byClass[c] = append(byClass[c], i)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x706e6563))
	var train []int
	for _, idx := range byClass {
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		n := min(perClass, len(idx))
		train = append(train, idx[:n]...)
	}
	slices.Sort(train)
	return train
}
