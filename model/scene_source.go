package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/pnec/pnec/internal/buffers"
)

// Training on a scene read by windows. A scene too large to hold in memory
// (a 4000 x 4000 x 224 delivery is 14 GB as float32) still trains: the
// steps take one tile of the grid at a time, the choices at training read
// the training pixels' neighbourhoods, and the statistics passes predict
// tile by tile. What remains are the passes over every pixel (the valid
// mask, the band means, the band spread, the per-band stretch), which a
// streamed scene makes in strips of rows: NewStreamedScene reads the
// scene once for the valid mask, the band means and where the stretch's
// percentiles lie, the stretch reads it once more for their values, and
// the drift statistics once more for the spread. Every figure is the
// held scene's, bit for bit.

// SceneSource reads windows of a scene: rows x cols pixels from (row,
// col), pixel-interleaved as Scene.Data, into a block rowPixels wide:
// pixel (r, c) of the window goes to pixel r*rowPixels + c of data
// (bands values a pixel) and valid, with the invalid pixels' values 0, so
// that a tile is read in place. Calls come one at a time.
type SceneSource interface {
	ReadWindow(ctx context.Context, row, col, rows, cols, rowPixels int, data []float32, valid []bool) error
}

// streamStripBytes bounds the strip of rows a whole-scene pass of a
// streamed scene reads at a time.
const streamStripBytes = 64 << 20

// keyBuckets is the size of the stretch's histograms: the high or the
// low 16 bits of a value's order key (orderKey).
const keyBuckets = 1 << 16

// streamed is a streamed scene's source and what its first pass measured.
type streamed struct {
	ctx   context.Context
	src   SceneSource
	means []float64 // BandMeans
	// finite is each band's count of finite values over the valid pixels,
	// high the histogram of their order keys' high 16 bits
	// ([band][keyBuckets]): where the stretch's order statistics lie.
	finite []int
	high   []uint32

	mu    sync.Mutex
	err   error             // the first read error
	cache map[int][]float32 // spectra read by pixel (spectrumAt, prefetch)
}

// NewStreamedScene is a scene of rows x cols x bands read from src by
// windows, never whole: its Valid mask is filled and Data is nil. It reads
// the scene once, in strips of rows, for the valid mask, the band means
// and the stretch's histograms; Train reads it again by tiles. ctx bounds
// every later read too. Only Train takes a streamed scene.
func NewStreamedScene(ctx context.Context, src SceneSource, rows, cols, bands int, wavelengthsNM []float64) (Scene, error) {
	if rows < 1 || cols < 1 || bands < 1 {
		return Scene{}, fmt.Errorf("streamed scene size %dx%dx%d: every dimension must be positive", rows, cols, bands)
	}
	st := &streamed{ctx: ctx, src: src, cache: map[int][]float32{},
		finite: make([]int, bands), high: make([]uint32, bands*keyBuckets)}
	s := Scene{Rows: rows, Cols: cols, Bands: bands, WavelengthsNM: wavelengthsNM, Valid: make([]bool, rows*cols), stream: st}
	sum := make([]float64, bands)
	err := s.strips(func(row0 int, strip Scene) {
		copy(s.Valid[row0*cols:], strip.Valid)
		for j := range strip.Rows * cols {
			if !strip.Valid[j] {
				continue
			}
			// The sums BandMeans makes, in its order.
			for b, x := range strip.Data[j*bands : (j+1)*bands] {
				if f := float64(x); !math.IsNaN(f) && !math.IsInf(f, 0) {
					sum[b] += f
					st.finite[b]++
					st.high[b*keyBuckets+int(orderKey(x)>>16)]++
				}
			}
		}
	})
	if err != nil {
		return Scene{}, err
	}
	for b, n := range st.finite {
		if n > 0 {
			sum[b] /= float64(n)
		}
	}
	st.means = sum
	return s, nil
}

// Streamed says s is read by windows (NewStreamedScene): Data is nil.
func (s Scene) Streamed() bool { return s.stream != nil }

// strips calls f with the scene's strips of rows in order (row0 the
// strip's first row); f must not keep the strip's buffers.
func (s Scene) strips(f func(row0 int, strip Scene)) error {
	st := s.stream
	rowsPer := max(1, streamStripBytes/(4*s.Cols*s.Bands))
	strip := Scene{Cols: s.Cols, Bands: s.Bands}
	for r0 := 0; r0 < s.Rows; r0 += rowsPer {
		if err := st.ctx.Err(); err != nil {
			return err
		}
		strip.Rows = min(rowsPer, s.Rows-r0)
		n := strip.Rows * s.Cols
		strip.Data, strip.Valid = buffers.Resize(strip.Data, n*s.Bands), buffers.Resize(strip.Valid, n)
		if err := st.src.ReadWindow(st.ctx, r0, 0, strip.Rows, s.Cols, s.Cols, strip.Data, strip.Valid); err != nil {
			return fmt.Errorf("read rows %d-%d: %w", r0, r0+strip.Rows-1, err)
		}
		f(r0, strip)
	}
	return nil
}

// readErr is the first error a read of s's windows met (nil for a scene
// in memory).
func (s Scene) readErr() error {
	if s.stream == nil {
		return nil
	}
	s.stream.mu.Lock()
	defer s.stream.mu.Unlock()
	return s.stream.err
}

// readWindow reads rows x cols pixels of a streamed scene from (row, col)
// into data and valid, rowPixels wide (SceneSource); a failed read leaves
// them no-data and is kept for readErr.
func (st *streamed) readWindow(row, col, rows, cols, rowPixels int, data []float32, valid []bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		clear(data)
		clear(valid)
		return
	}
	if err := st.src.ReadWindow(st.ctx, row, col, rows, cols, rowPixels, data, valid); err != nil {
		st.err = fmt.Errorf("read rows %d-%d, columns %d-%d of the scene: %w", row, row+rows-1, col, col+cols-1, err)
		clear(data)
		clear(valid)
	}
}

// spectrumAt is pixel i's values: a slice of Data, or for a streamed
// scene its spectrum read (once) from the source.
func (s Scene) spectrumAt(i int) []float32 {
	if s.stream == nil {
		return s.Data[i*s.Bands : (i+1)*s.Bands]
	}
	st := s.stream
	st.mu.Lock()
	v, ok := st.cache[i]
	st.mu.Unlock()
	if ok {
		return v
	}
	v = make([]float32, s.Bands)
	valid := make([]bool, 1)
	st.readWindow(i/s.Cols, i%s.Cols, 1, 1, 1, v, valid)
	st.mu.Lock()
	st.cache[i] = v
	st.mu.Unlock()
	return v
}

// prefetch reads, for a streamed scene, the spectra of the pixels within
// radius px of each of pixels, a window each, so that spectrumAt finds
// them without a read of its own.
func (s Scene) prefetch(pixels []int, radius int) {
	st := s.stream
	if st == nil {
		return
	}
	var data []float32
	var valid []bool
	for _, i := range pixels {
		r0, c0 := max(i/s.Cols-radius, 0), max(i%s.Cols-radius, 0)
		r1, c1 := min(i/s.Cols+radius, s.Rows-1), min(i%s.Cols+radius, s.Cols-1)
		rows, cols := r1-r0+1, c1-c0+1
		data, valid = make([]float32, rows*cols*s.Bands), make([]bool, rows*cols)
		st.readWindow(r0, c0, rows, cols, cols, data, valid)
		st.mu.Lock()
		for r := range rows {
			for c := range cols {
				j := r*cols + c
				st.cache[(r0+r)*s.Cols+c0+c] = data[j*s.Bands : (j+1)*s.Bands : (j+1)*s.Bands]
			}
		}
		st.mu.Unlock()
	}
}

// dropCache forgets the spectra prefetch and spectrumAt read.
func (s Scene) dropCache() {
	if st := s.stream; st != nil {
		st.mu.Lock()
		st.cache = map[int][]float32{}
		st.mu.Unlock()
	}
}

// orderKey maps a finite value to a key whose unsigned order is the
// values' order (-0 taken as +0, which compares equal to it).
func orderKey(v float32) uint32 {
	u := math.Float32bits(v)
	if v == 0 {
		u = 0
	}
	if u>>31 != 0 {
		return ^u
	}
	return u | 1<<31
}

// keyValue is the value of order key k (orderKey's inverse).
func keyValue(k uint32) float32 {
	if k>>31 != 0 {
		return math.Float32frombits(k &^ (1 << 31))
	}
	return math.Float32frombits(^k)
}

// stretchPercentiles are the percentiles of the stretch (bandStretch).
var stretchPercentiles = [2]float64{2, 98}

// streamedStretch is bandStretch of a streamed scene, exact: the first
// pass's histograms of the high 16 key bits say in which bucket each
// order statistic a percentile needs lies, a second pass in strips counts
// the low 16 bits of the values in those buckets, and the statistics are
// read from the counts. The percentiles are the held scene's, bit for
// bit.
func streamedStretch(s Scene) (lo, hi []float32, err error) {
	st, B := s.stream, s.Bands
	// ranks[b]: the order statistics band b needs (two a percentile, or
	// the largest), and the high buckets they lie in.
	type need struct {
		rank   int
		bucket uint32
		at     int // the rank within the bucket
		value  float32
	}
	needs := make([][]need, B)
	for b := range B {
		n := st.finite[b]
		if n == 0 {
			return nil, nil, fmt.Errorf("band %d has no valid pixels", b+1)
		}
		for _, pct := range stretchPercentiles {
			i, _ := percentileRank(n, pct)
			for _, r := range []int{min(i, n-1), min(i+1, n-1)} {
				needs[b] = append(needs[b], need{rank: r})
			}
		}
		h := st.high[b*keyBuckets : (b+1)*keyBuckets]
		for q := range needs[b] {
			cum := 0
			for k, c := range h {
				if cum+int(c) > needs[b][q].rank {
					needs[b][q].bucket, needs[b][q].at = uint32(k), needs[b][q].rank-cum
					break
				}
				cum += int(c)
			}
		}
	}
	// The low-bit counts of each band's distinct buckets.
	type lowHist struct {
		bucket uint32
		count  []uint32
	}
	lows := make([][]lowHist, B)
	for b, nb := range needs {
		for _, q := range nb {
			if !slices.ContainsFunc(lows[b], func(l lowHist) bool { return l.bucket == q.bucket }) {
				lows[b] = append(lows[b], lowHist{bucket: q.bucket, count: make([]uint32, keyBuckets)})
			}
		}
	}
	err = s.strips(func(_ int, strip Scene) {
		for j := range strip.Rows * strip.Cols {
			if !strip.Valid[j] {
				continue
			}
			for b, x := range strip.Data[j*B : (j+1)*B] {
				if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
					continue
				}
				k := orderKey(x)
				for _, l := range lows[b] {
					if l.bucket == k>>16 {
						l.count[k&(keyBuckets-1)]++
						break
					}
				}
			}
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("stretch: %w", err)
	}
	lo, hi = make([]float32, B), make([]float32, B)
	for b := range B {
		for q := range needs[b] {
			nd := &needs[b][q]
			i := slices.IndexFunc(lows[b], func(l lowHist) bool { return l.bucket == nd.bucket })
			cum := 0
			for k, c := range lows[b][i].count {
				if cum+int(c) > nd.at {
					nd.value = keyValue(nd.bucket<<16 | uint32(k))
					break
				}
				cum += int(c)
			}
		}
		n := st.finite[b]
		out := [2]*float32{&lo[b], &hi[b]}
		for p, pct := range stretchPercentiles {
			i, f := percentileRank(n, pct)
			v, next := float64(needs[b][2*p].value), float64(needs[b][2*p+1].value)
			if i >= n-1 {
				*out[p] = float32(v) // the largest, as selectPercentile takes it
				continue
			}
			*out[p] = float32(lerpOrder(v, next, f))
		}
	}
	return lo, hi, nil
}

// streamedSpread is setBandSpread's pass over a streamed scene: the means
// of the first pass, the squared deviations in strips, in the order the
// in-memory pass sums them.
func streamedSpread(s Scene) (means, sq, cnt []float64, err error) {
	B := s.Bands
	means = s.stream.means
	sq, cnt = make([]float64, B), make([]float64, B)
	err = s.strips(func(_ int, strip Scene) {
		for j := range strip.Rows * strip.Cols {
			if !strip.Valid[j] {
				continue
			}
			for b, v := range strip.Data[j*B : (j+1)*B] {
				if x := float64(v); !math.IsNaN(x) && !math.IsInf(x, 0) {
					sq[b] += (x - means[b]) * (x - means[b])
					cnt[b]++
				}
			}
		}
	})
	return means, sq, cnt, err
}

// errStreamedWhole refuses what needs a streamed scene's pixels at once.
var errStreamedWhole = errors.New("a scene read by windows cannot be taken whole")

// SceneMemorySource is a SceneSource over a scene in memory: the tiles
// of a held scene (fillTile), and tests and callers that want Train's
// streamed path on data they hold.
type SceneMemorySource struct{ Scene Scene }

// ReadWindow copies the window from the scene.
func (m SceneMemorySource) ReadWindow(ctx context.Context, row, col, rows, cols, rowPixels int, data []float32, valid []bool) error {
	s := m.Scene
	if row < 0 || col < 0 || rows < 1 || cols < 1 || row+rows > s.Rows || col+cols > s.Cols {
		return fmt.Errorf("window %dx%d at (%d, %d) outside the %dx%d scene", rows, cols, row, col, s.Rows, s.Cols)
	}
	B := s.Bands
	for r := range rows {
		src, dst := (row+r)*s.Cols+col, r*rowPixels
		copy(data[dst*B:(dst+cols)*B], s.Data[src*B:(src+cols)*B])
		for c := range cols {
			valid[dst+c] = s.valid(src + c)
		}
	}
	return ctx.Err()
}
