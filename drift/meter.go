package drift

import (
	"math"
	"slices"

	"github.com/pnec/pnec/internal/quantile"
)

// Meter gathers a scene's drift from pieces: the spectra of each
// scene pixel once (AddSpectra), each valid pixel's class distances, network
// outputs and final label (AddPixel) and each valid cell of the network's
// grid once (AddCells), in any order and split. The three touch separate
// fields: each may run in a goroutine of its own (one per method), Report
// after all of them.
type Meter struct {
	st      *Stats
	bandSum []float64
	bandN   []float64
	// AddSpectra's per-call buffers: sums, non-finite counts.
	runSum   []float64
	runBad   []float64
	pixels   int64
	far      int64
	relSum   float64
	relN     int64
	labelN   []int64   // valid pixels per final label (those with an agreement)
	distHist [][]int64 // per nearest class, counts of log10 distance (distBins)
	// The network's outputs per pixel (AddPixel): sums of G~ and of the
	// probability margin, and the pixels per label they are over.
	uncSum, marginSum float64
	outN              []int64
	// The feature space per cell (AddCells): cells, far cells, per nearest
	// prototype the distance histogram and the cells, the sum of
	// prototype margins.
	cells, featFar int64
	featHist       [][]int64
	protoN         []int64
	protoMarginSum float64
	// The recalibration probe (AddRecalibration): changed and valid
	// pixels, the estimated band shift (NaN: none measured).
	probeChanged, probePixels int64
	probeShift                float64
	thresholds                Thresholds
}

// The distance histograms: distBinsPerDecade bins per decade of the cosine
// distance from 1e-distDecades to 1 (medians to about 6%), the first and last
// bins open.
const (
	distDecades       = 9
	distBinsPerDecade = 40
	distBins          = distDecades * distBinsPerDecade
)

// distBin is the histogram bin of distance d.
func distBin(d float64) int {
	if !(d > 0) {
		return 0
	}
	b := int(math.Floor((math.Log10(d) + distDecades) * distBinsPerDecade))
	return min(max(b, 0), distBins-1)
}

// histMedian is the median of a distance histogram (NaN when empty), at
// the geometric centre of its bin.
func histMedian(h []int64) float64 {
	var n int64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return math.NaN()
	}
	var acc int64
	for b, c := range h {
		acc += c
		if 2*acc >= n {
			return math.Pow(10, (float64(b)+0.5)/distBinsPerDecade-distDecades)
		}
	}
	return math.NaN()
}

// NewMeter starts measuring a scene's drift against the training scene's
// statistics st, judged by t; ErrNoStats when st is nil.
func NewMeter(st *Stats, t Thresholds) (*Meter, error) {
	if st == nil {
		return nil, ErrNoStats
	}
	k := len(st.ClassShare)
	d := &Meter{st: st, bandSum: make([]float64, len(st.BandMean)), bandN: make([]float64, len(st.BandMean)),
		labelN: make([]int64, k), distHist: make([][]int64, k), outN: make([]int64, k),
		featHist: make([][]int64, k), protoN: make([]int64, k), probeShift: math.NaN(), thresholds: t}
	for c := range d.distHist {
		d.distHist[c] = make([]int64, distBins)
		d.featHist[c] = make([]int64, distBins)
	}
	return d, nil
}

// AddSpectra adds pixels of raw spectra ([n][bands], pixel-interleaved;
// valid may be nil) to the band means. Give each scene pixel once.
func (d *Meter) AddSpectra(data []float32, valid []bool) {
	// This runs in the reader, the big-scene pipeline's busiest stage, over
	// every value of the scene: a value that is not finite (v-v is not 0)
	// is counted out instead of each finite one counted in, and the call's
	// sums go to the totals once.
	B := len(d.bandSum)
	if cap(d.runSum) < B {
		d.runSum, d.runBad = make([]float64, B), make([]float64, B)
	}
	sum, bad := d.runSum[:B], d.runBad[:B]
	clear(sum)
	clear(bad)
	n := 0
	for i := 0; i < len(data)/B; i++ {
		if valid != nil && !valid[i] {
			continue
		}
		n++
		addPixel(sum, bad, data[i*B:(i+1)*B:(i+1)*B])
	}
	for b := range sum {
		d.bandSum[b] += sum[b]
		d.bandN[b] += float64(n) - bad[b]
	}
}

// Pixel is what one valid pixel of a scene adds to its drift.
type Pixel struct {
	// Dist are the cosine distances (1 - cos, 0..2) from the pixel's
	// spectrum to the nearest training spectrum of each class (a
	// SpectralReference's ClassDistances, blended over tiles or not); a
	// class without reference spectra is above NoReferenceAbove.
	Dist []float32
	// Agreement is the spectral reliability of Label (model.AgreementOf;
	// NaN: none), Margin the margin of the recovered probabilities (the
	// largest minus the second, over their sum; NaN without probability
	// mass) and Uncertainty the reliability gate's G~.
	Agreement, Margin, Uncertainty float32
	// Label is the pixel's label (dense class index).
	Label int
}

// NoReferenceAbove separates real class distances (0..2) from the value a
// class without reference spectra is given (model.NoReference, 4).
const NoReferenceAbove = 3

// AddPixel adds one valid pixel.
func (d *Meter) AddPixel(px Pixel) {
	d.pixels++
	dist, label := px.Dist, px.Label
	if m := float64(px.Margin); label >= 0 && label < len(d.outN) && !math.IsNaN(m) && !math.IsNaN(float64(px.Uncertainty)) {
		d.uncSum += float64(px.Uncertainty)
		d.marginSum += m
		d.outN[label]++
	}
	far := len(dist) > 0
	near := 0
	for c, v := range dist {
		if c >= len(d.st.ClassDistanceP99) || !(float64(v) > float64(d.st.ClassDistanceP99[c])) {
			far = false
		}
		if v < dist[near] {
			near = c
		}
	}
	if far {
		d.far++
	}
	if near < len(d.distHist) && float64(dist[near]) < NoReferenceAbove {
		d.distHist[near][distBin(float64(dist[near]))]++
	}
	if a := px.Agreement; !math.IsNaN(float64(a)) {
		d.relSum += float64(a)
		d.relN++
		if label >= 0 && label < len(d.labelN) {
			d.labelN[label]++
		}
	}
}

// NearestPrototype is the class of the largest of a cell's prototype
// cosines, its feature distance 1 - cos and the margin to the second
// largest; ok is false for a cell without data (NaN).
func NearestPrototype(cos []float32) (class int, dist, margin float64, ok bool) {
	if len(cos) == 0 {
		return 0, 0, 0, false
	}
	c1, c2 := math.Inf(-1), math.Inf(-1)
	for c, v := range cos {
		x := float64(v)
		if math.IsNaN(x) {
			return 0, 0, 0, false
		}
		switch {
		case x > c1:
			c1, c2, class = x, c1, c
		case x > c2:
			c2 = x
		}
	}
	if len(cos) == 1 {
		c2 = c1
	}
	return class, 1 - c1, c1 - c2, true
}

// AddCells adds cells of the network's stride-4 grid: cos holds each
// cell's cosines to the class prototypes ([cells][classes], a
// Prediction's PrototypeCos or a run of its cells); cells without data
// (NaN) are skipped, and cosines of another class count are ignored. Give
// each scene cell once.
func (d *Meter) AddCells(cos []float32) {
	k := len(d.featHist)
	if k == 0 || len(cos)%k != 0 {
		return
	}
	st := d.st
	for i := 0; i < len(cos)/k; i++ {
		c, dist, margin, ok := NearestPrototype(cos[i*k : (i+1)*k])
		if !ok {
			continue
		}
		d.cells++
		if !(dist <= float64(st.FeatureDistanceP90[c])) {
			d.featFar++
		}
		d.featHist[c][distBin(dist)]++
		d.protoN[c]++
		d.protoMarginSum += margin
	}
}

// AddRecalibration adds the recalibration probe's result (the window's
// pixels; ProbeRecalibration). Give it once per scene.
func (d *Meter) AddRecalibration(r Recalibration) {
	d.probeChanged += r.Changed
	d.probePixels += r.Pixels
	d.probeShift = r.BandShift
}

// histRatio is the geometric mean over classes of each class histogram's
// median over base[class], weighted by the class's count (NaN when no class
// has both).
func histRatio(hist [][]int64, base []float32) float64 {
	var logSum, weight float64
	for c, h := range hist {
		if c >= len(base) || !(base[c] > 0) {
			continue
		}
		var n int64
		for _, v := range h {
			n += v
		}
		if m := histMedian(h); n > 0 && m > 0 {
			logSum += float64(n) * math.Log(m/float64(base[c]))
			weight += float64(n)
		}
	}
	if weight == 0 {
		return math.NaN()
	}
	return math.Exp(logSum / weight)
}

// mixBaseline is the training scene's per-class figure base weighted by
// this scene's counts n (NaN without counts).
func mixBaseline(n []int64, base []float32) float64 {
	var sum float64
	var total int64
	for c, k := range n {
		if c < len(base) {
			sum += float64(k) * float64(base[c])
			total += k
		}
	}
	if total == 0 {
		return math.NaN()
	}
	return sum / float64(total)
}

// Report computes the figures and the verdict.
func (d *Meter) Report() Report {
	st := d.st
	r := Report{ValidPixels: d.pixels, ReliabilityBaseline: st.Reliability, Reliability: math.NaN(),
		ReliabilityRatio: math.NaN(), FarShare: math.NaN(), BrightnessRatio: math.NaN(), DistanceRatio: math.NaN(),
		FeatureFarShare: math.NaN(), FeatureDistanceRatio: math.NaN(), PrototypeMarginRatio: math.NaN(),
		UncertaintyRatio: math.NaN(), MarginRatio: math.NaN(), ValidCells: d.cells,
		RecalibrationChangeShare: math.NaN(), RecalibrationBandShift: d.probeShift, ProbePixels: d.probePixels}
	if d.probePixels > 0 {
		r.RecalibrationChangeShare = float64(d.probeChanged) / float64(d.probePixels)
	}
	var ratios []float64
	r.BandShiftSD = make([]float64, len(d.bandSum))
	for b := range d.bandSum {
		if d.bandN[b] == 0 {
			r.BandShiftSD[b] = math.NaN()
			continue
		}
		mean := d.bandSum[b] / d.bandN[b]
		if sd := float64(st.BandStd[b]); sd > 0 {
			z := (mean - float64(st.BandMean[b])) / sd
			r.BandShiftSD[b] = z
			r.BandShiftMeanSD += math.Abs(z)
			r.BandShiftMaxSD = max(r.BandShiftMaxSD, math.Abs(z))
		}
		if tm := float64(st.BandMean[b]); tm > 0 {
			ratios = append(ratios, mean/tm)
		}
	}
	if n := len(d.bandSum); n > 0 {
		r.BandShiftMeanSD /= float64(n)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		r.BrightnessRatio = quantile.Percentile(ratios, 50)
	}
	if d.pixels > 0 {
		r.FarShare = float64(d.far) / float64(d.pixels)
	}
	if d.relN > 0 {
		r.Reliability = d.relSum / float64(d.relN)
		if len(st.ClassReliability) == len(d.labelN) {
			// The training scene's reliability for this scene's mix of labels.
			base := 0.0
			for c, n := range d.labelN {
				base += float64(n) * float64(st.ClassReliability[c])
			}
			r.ReliabilityBaseline = base / float64(d.relN)
		}
		if r.ReliabilityBaseline > 0 {
			r.ReliabilityRatio = r.Reliability / r.ReliabilityBaseline
		}
	}
	r.DistanceRatio = histRatio(d.distHist, st.ClassDistanceP50)
	if d.cells > 0 {
		r.FeatureFarShare = float64(d.featFar) / float64(d.cells)
		r.FeatureDistanceRatio = histRatio(d.featHist, st.FeatureDistanceP50)
		r.PrototypeMarginRatio = d.protoMarginSum / float64(d.cells) / mixBaseline(d.protoN, st.ClassPrototypeMargin)
	}
	var outTotal int64
	for _, n := range d.outN {
		outTotal += n
	}
	if outTotal > 0 {
		r.UncertaintyRatio = d.uncSum / float64(outTotal) / mixBaseline(d.outN, st.ClassUncertainty)
		r.MarginRatio = d.marginSum / float64(outTotal) / mixBaseline(d.outN, st.ClassMargin)
	}
	r.Verdict, r.Reasons = d.thresholds.Verdict(r)
	return r
}

// addPixelScalar adds px's finite values to sum and counts the others in
// bad, band by band (addPixel's form without vectors).
func addPixelScalar(sum, bad []float64, px []float32) {
	sum, bad = sum[:len(px)], bad[:len(px)]
	for b, v := range px {
		if v-v == 0 {
			sum[b] += float64(v)
		} else {
			bad[b]++
		}
	}
}
