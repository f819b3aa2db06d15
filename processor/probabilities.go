package processor

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/pnec/pnec/geo"
)

// ProbabilityStage selects the class probabilities Options.Probabilities
// writes beside the product (geo.ProbabilitiesPath).
type ProbabilityStage string

const (
	// ProbabilitiesOff writes none (the default).
	ProbabilitiesOff ProbabilityStage = ""
	// ProbabilitiesRecovered are the probabilities after the AvgPool
	// recovery: the class band is their argmax (ties to the first class),
	// so class_1 of a top-k file is the class band. They are what a user
	// thresholding or combining the map wants.
	ProbabilitiesRecovered ProbabilityStage = "recovered"
	// ProbabilitiesNetwork are the network's calibrated per-pixel
	// probabilities blended across tiles, before the recovery smooths them
	// over its window: what the network saw of each pixel, for calibration
	// studies or a recovery of one's own.
	ProbabilitiesNetwork ProbabilityStage = "network"
)

// ErrProbabilities: Options ask for probabilities the model cannot give
// (an unknown stage, or a top-k beyond its classes).
var ErrProbabilities = errors.New("bad probabilities request")

// ParseProbabilityStage reads a stage name: recovered or network.
func ParseProbabilityStage(s string) (ProbabilityStage, error) {
	switch st := ProbabilityStage(s); st {
	case ProbabilitiesRecovered, ProbabilitiesNetwork:
		return st, nil
	}
	return "", fmt.Errorf("%w: stage %q: want %s or %s", ErrProbabilities, s, ProbabilitiesRecovered, ProbabilitiesNetwork)
}

// checkProbabilities validates opts' probabilities against a model of k classes.
func checkProbabilities(opts Options, k int) error {
	if opts.Probabilities == ProbabilitiesOff {
		if opts.TopK != 0 {
			return fmt.Errorf("%w: top %d classes without a probabilities stage", ErrProbabilities, opts.TopK)
		}
		return nil
	}
	if _, err := ParseProbabilityStage(string(opts.Probabilities)); err != nil {
		return err
	}
	if opts.TopK < 0 || opts.TopK > k {
		return fmt.Errorf("%w: top %d of the model's %d classes: want 1 to %d, or 0 for a band per class", ErrProbabilities, opts.TopK, k, k)
	}
	return nil
}

// probabilityBands is the number of values per pixel the probabilities
// output of opts holds for k classes (0 when off).
func probabilityBands(opts Options, k int) int {
	if opts.Probabilities == ProbabilitiesOff {
		return 0
	}
	return geo.ProbabilityBandCount(k, opts.TopK)
}

// probabilitySpec is geo's description of opts' probabilities output (nil when off).
func probabilitySpec(opts Options) *geo.ProbabilitySpec {
	if opts.Probabilities == ProbabilitiesOff {
		return nil
	}
	return &geo.ProbabilitySpec{TopK: opts.TopK, Stage: string(opts.Probabilities)}
}

// quantizer turns a pixel's class probabilities into the stored values:
// percent 0-100 per class, or the topK (class value, percent) pairs.
type quantizer struct {
	values []int // class values in dense order
	topK   int
	order  []int // scratch: dense indices by falling probability
}

func newQuantizer(values []int, topK int) *quantizer {
	return &quantizer{values: values, topK: topK, order: make([]int, len(values))}
}

// percent is p in 0..1 as a rounded percent 0..100.
func percentOf(p float32) uint16 {
	if !(p > 0) { // also NaN
		return 0
	}
	return uint16(math.Round(float64(min(p, 1)) * 100))
}

// put writes the stored values of probabilities px (dense order) to dst.
func (q *quantizer) put(dst []uint16, px []float32) {
	if q.topK == 0 {
		for j, p := range px {
			dst[j] = percentOf(p)
		}
		return
	}
	for j := range q.order {
		q.order[j] = j
	}
	// Stable: equal probabilities keep the dense order, as the argmax of
	// the class band takes the first of equal maxima.
	sort.SliceStable(q.order, func(a, b int) bool { return px[q.order[a]] > px[q.order[b]] })
	for r := 0; r < q.topK; r++ {
		j := q.order[r]
		dst[2*r] = uint16(q.values[j])
		dst[2*r+1] = percentOf(px[j])
	}
}

// noData fills one pixel's values with geo.ProbabilityNoData.
func noData(dst []uint16) {
	for i := range dst {
		dst[i] = geo.ProbabilityNoData
	}
}

// probabilityMemoryBytes is what the probabilities output adds to a run
// of a scene sceneCols wide, bytes: the rows in flight between the
// stitcher and the writer (the channel's two chunks, one being made, one
// being written: uint16 values) and the writer's band buffer, plus the
// GDAL block cache for one row of the stage's 512 x 512 blocks across all
// bands (written band by band, each block row stays dirty until the next).
// Exact sizes, not part of the calibration's fit.
func probabilityMemoryBytes(sceneCols, bands, sampleBytes int) (heap, cache int64) {
	if bands == 0 {
		return 0, 0
	}
	chunk := int64(finalizeChunkRows) * int64(sceneCols)
	heap = 4*chunk*int64(bands)*2 + chunk*2
	const block = 512 // the stage's blocks (geo.CreateProduct)
	across := int64((sceneCols + block - 1) / block * block)
	cache = block * across * int64(bands) * int64(sampleBytes)
	return heap, cache
}
