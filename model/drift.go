package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pnec/pnec/tiling"
)

// ErrNoDriftStats is returned (wrapped) when drift is asked of a model
// without training statistics (one trained without its spectra).
var ErrNoDriftStats = errors.New("model holds no training statistics for drift")

// driftStats are the statistics of the training scene that a new scene's
// drift is measured against (see Drift); stored in the model file.
type driftStats struct {
	// BandMean and BandStd are each band's mean and standard deviation of
	// the raw values over the training scene's valid pixels.
	BandMean []float32 `json:"band_mean"`
	BandStd  []float32 `json:"band_std"`
	// ClassShare is the share of the training scene's valid pixels the
	// model labels with each class (dense index), after recovery.
	ClassShare []float32 `json:"class_share"`
	// ClassDistanceP99 is, per class, the 99th percentile of the cosine
	// distance (1 - cos) from a training-scene pixel to the nearest
	// training spectrum of that class, over the valid pixels whose nearest
	// class it is (the training pixels left out).
	ClassDistanceP99 []float32 `json:"class_distance_p99"`
	// DistanceQuantiles are the 50th, 90th, 99th and 99.9th percentiles
	// of the distance to the nearest training spectrum of any class over the
	// same pixels: the spectral-distance distribution of the training scene.
	DistanceQuantiles []float32 `json:"distance_quantiles"`
	// ClassDistanceP50 is, per class, the median of the same distances: a
	// new scene's are compared with it class by class (distanceRatio).
	ClassDistanceP50 []float32 `json:"class_distance_p50"`
	// Reliability is the mean spectral reliability (SpectralReference
	// agreement of the final label, 0..1) over the training scene's valid
	// pixels, and ClassReliability its mean over the pixels labelled with
	// each class: a new scene's is compared with what its own mix of labels
	// gave on the training scene.
	Reliability      float64   `json:"reliability_mean"`
	ClassReliability []float32 `json:"class_reliability"`
	// Pixels is the number of valid pixels these statistics are over.
	Pixels int64 `json:"pixels"`

	// The network's own terms (file format 4). FeatureDistanceP50 and
	// FeatureDistanceP90 are, per class, the median and 90th percentile of
	// the feature distance (1 - cos between a cell's fused features and
	// its nearest prototype) over the training scene's valid cells of the
	// network's stride-4 grid whose nearest prototype is that class's;
	// ClassPrototypeMargin is the mean over the same cells of the nearest
	// prototype's cosine minus the second's. Cells is their number.
	FeatureDistanceP50   []float32 `json:"feature_distance_p50"`
	FeatureDistanceP90   []float32 `json:"feature_distance_p90"`
	ClassPrototypeMargin []float32 `json:"class_prototype_margin"`
	Cells                int64     `json:"cells"`
	// ClassUncertainty is the mean G~ (the reliability gate's fused
	// uncertainty) and ClassMargin the mean margin of the recovered
	// probabilities (largest minus second, over their sum) of the valid
	// pixels labelled with each class.
	ClassUncertainty []float32 `json:"class_uncertainty"`
	ClassMargin      []float32 `json:"class_margin"`
	// ClassMeanSpectrum is, per class, the mean raw spectrum of the
	// training scene's valid pixels labelled with it ([classes][bands]):
	// what the recalibration probe estimates a scene's calibration against
	// (estimateCalibration).
	ClassMeanSpectrum []float32 `json:"class_mean_spectrum"`
}

// driftQuantiles are the percentiles of driftStats.DistanceQuantiles.
var driftQuantiles = []float64{50, 90, 99, 99.9}

// Drift is how far a scene is from a model's training scene, and the
// verdict on it.
type Drift struct {
	Verdict DriftVerdict
	Reasons []string // why the verdict is not ok, one phrase each
	// BandShiftSD is each band's mean over the scene's valid pixels minus
	// the training scene's, in the training scene's standard deviations;
	// BandShiftMeanSD is the mean of its absolute values, BandShiftMaxSD the
	// largest absolute value.
	BandShiftSD                     []float64
	BandShiftMeanSD, BandShiftMaxSD float64
	// BrightnessRatio is the median over bands of the scene's band mean
	// over the training scene's.
	BrightnessRatio float64
	// FarShare is the share of valid pixels farther from every class (by
	// spectral angle to its nearest training spectrum) than 99% of the
	// training scene's pixels of that class.
	FarShare float64
	// DistanceRatio compares the distances themselves: per class, the
	// median distance of the scene's pixels nearest that class over the
	// training scene's, averaged over the classes (geometric mean weighted
	// by pixels). A change of every spectrum's shape (a tilt, a band shift)
	// raises it; another mix of the same classes does not.
	DistanceRatio float64
	// Reliability is the mean spectral reliability of the valid pixels'
	// final labels, 0..1; ReliabilityBaseline what the training scene gave
	// for the same mix of labels (its per-class means weighted by this
	// scene's label counts), and ReliabilityRatio their ratio.
	Reliability, ReliabilityBaseline, ReliabilityRatio float64
	ValidPixels                                        int64

	// The figures in the network's own terms, each against what the
	// training scene gave. FeatureFarShare is the share of valid cells of
	// the network's stride-4 grid whose fused features are farther from
	// their nearest prototype than 90% of the training scene's cells
	// nearest that prototype (0.1 on the training scene);
	// FeatureDistanceRatio the class-wise median feature distance over the
	// training scene's (geometric mean weighted by cells, as DistanceRatio).
	FeatureFarShare, FeatureDistanceRatio float64
	// PrototypeMarginRatio is the mean margin between the nearest and the
	// second prototype's cosine over the training scene's for the same mix
	// of nearest prototypes.
	PrototypeMarginRatio float64
	// UncertaintyRatio is the mean G~ (the reliability gate's uncertainty)
	// of the valid pixels over the training scene's for the same mix of
	// labels; MarginRatio the mean margin of the recovered probabilities
	// (largest minus second) over the training scene's likewise.
	UncertaintyRatio, MarginRatio float64
	ValidCells                    int64

	// RecalibrationChangeShare is the share of the probe window's valid
	// pixels whose class changes when the scene is brought back to the
	// training scene's calibration (ProbeRecalibration): about what the
	// map lost to the calibration the network did not see past.
	// RecalibrationBandShift is the band shift the probe estimated,
	// bands; ProbePixels the window's valid pixels.
	RecalibrationChangeShare, RecalibrationBandShift float64
	ProbePixels                                      int64
}

// DriftMeter gathers a scene's drift from pieces: the spectra of each
// scene pixel once (AddSpectra), each valid pixel's class distances, network
// outputs and final label (AddPixel) and each valid cell of the network's
// grid once (AddCells), in any order and split. The three touch separate
// fields: each may run in a goroutine of its own (one per method), Report
// after all of them.
type DriftMeter struct {
	st      *driftStats
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
	thresholds                DriftThresholds
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

// HasDriftStats reports whether m stores the training statistics drift needs.
func (m *Model) HasDriftStats() bool { return m.meta.Drift != nil }

// NewDriftMeter starts measuring a scene's drift against m's training
// scene; ErrNoDriftStats when m has no statistics.
func (m *Model) NewDriftMeter() (*DriftMeter, error) {
	st := m.meta.Drift
	if st == nil {
		return nil, ErrNoDriftStats
	}
	k := len(st.ClassShare)
	d := &DriftMeter{st: st, bandSum: make([]float64, len(st.BandMean)), bandN: make([]float64, len(st.BandMean)),
		labelN: make([]int64, k), distHist: make([][]int64, k), outN: make([]int64, k),
		featHist: make([][]int64, k), protoN: make([]int64, k), probeShift: math.NaN(), thresholds: DefaultDriftThresholds}
	for c := range d.distHist {
		d.distHist[c] = make([]int64, distBins)
		d.featHist[c] = make([]int64, distBins)
	}
	return d, nil
}

// AddSpectra adds pixels of raw spectra ([n][bands], pixel-interleaved;
// valid may be nil) to the band means. Give each scene pixel once.
func (d *DriftMeter) AddSpectra(data []float32, valid []bool) {
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
		px := data[i*B : (i+1)*B : (i+1)*B]
		for b, v := range px {
			if v-v == 0 {
				sum[b] += float64(v)
			} else {
				bad[b]++
			}
		}
	}
	for b := range sum {
		d.bandSum[b] += sum[b]
		d.bandN[b] += float64(n) - bad[b]
	}
}

// AddPixel adds one valid pixel's class distances (SpectralReference.
// ClassDistances, blended over tiles or not), its recovered probabilities
// prob (one per class), its G~ and its final label (dense class index).
func (d *DriftMeter) AddPixel(dist, prob []float32, uncertainty float32, label int) {
	d.pixels++
	if m := probMargin(prob); label >= 0 && label < len(d.outN) && !math.IsNaN(m) && !math.IsNaN(float64(uncertainty)) {
		d.uncSum += float64(uncertainty)
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
	if near < len(d.distHist) && float64(dist[near]) < NoReference-1 {
		d.distHist[near][distBin(float64(dist[near]))]++
	}
	if a := AgreementOf(dist, label); !math.IsNaN(float64(a)) {
		d.relSum += float64(a)
		d.relN++
		if label >= 0 && label < len(d.labelN) {
			d.labelN[label]++
		}
	}
}

// probMargin is the largest of p minus the second, over their sum (NaN
// without probability mass): the margin reliability.
func probMargin(p []float32) float64 { return float64(ReliabilityMargin.Pixel(p, 0)) }

// nearestPrototype is the class of the largest of a cell's prototype
// cosines, its feature distance 1 - cos and the margin to the second
// largest; ok is false for a cell without data (NaN).
func nearestPrototype(cos []float32) (class int, dist, margin float64, ok bool) {
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

// AddCells adds cells [first, first+n) of p's stride-4 grid
// (p.PrototypeCos; cells without data are skipped). Give each scene cell
// once.
func (d *DriftMeter) AddCells(p Prediction, first, n int) {
	k := len(d.featHist)
	if p.Classes != k || len(p.PrototypeCos) != p.CellRows*p.CellCols*k {
		return
	}
	st := d.st
	for i := first; i < min(first+n, p.CellRows*p.CellCols); i++ {
		c, dist, margin, ok := nearestPrototype(p.PrototypeCos[i*k : (i+1)*k])
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
func (d *DriftMeter) AddRecalibration(r Recalibration) {
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
func (d *DriftMeter) Report() Drift {
	st := d.st
	r := Drift{ValidPixels: d.pixels, ReliabilityBaseline: st.Reliability, Reliability: math.NaN(),
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
		r.BrightnessRatio = percentile(ratios, 50)
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

// DriftOf measures the drift of a whole scene s given m's prediction on it
// (recovered with m's recovery, as products are), the spectral reference
// ref (m.SpectralReference) and a predictor p for the recalibration probe
// (on ProbeWindowOf(s)).
func (m *Model) DriftOf(ctx context.Context, p ScenePredictor, s Scene, pred Prediction, ref *SpectralReference) (Drift, error) {
	d, err := m.NewDriftMeter()
	if err != nil {
		return Drift{}, err
	}
	if err := measureScene(d, s, pred, ref, m); err != nil {
		return Drift{}, err
	}
	if w, ok := ProbeWindowOf(s); ok {
		r, err := m.ProbeRecalibration(ctx, p, CropScene(s, w))
		if err != nil {
			return Drift{}, fmt.Errorf("drift: %w", err)
		}
		d.AddRecalibration(r)
	}
	return d.Report(), nil
}

// measureScene feeds a whole scene and its prediction to d.
func measureScene(d *DriftMeter, s Scene, pred Prediction, ref *SpectralReference, m *Model) error {
	n := s.Rows * s.Cols
	k := pred.Classes
	if pred.Rows != s.Rows || pred.Cols != s.Cols || ref == nil || ref.Classes() != k || ref.Bands() != s.Bands {
		return fmt.Errorf("drift: prediction %dx%d of %d classes for a %dx%dx%d scene", pred.Rows, pred.Cols, k, s.Rows, s.Cols, s.Bands)
	}
	d.AddSpectra(s.Data, s.Valid)
	dist := make([]float32, n*k)
	if err := ref.ClassDistances(s.Data, s.Valid, dist); err != nil {
		return fmt.Errorf("drift: %w", err)
	}
	prec := tiling.Recover(pred.Prob, s.Valid, s.Rows, s.Cols, k, m.NetworkRecovery())
	for i := 0; i < n; i++ {
		if !s.valid(i) {
			continue
		}
		best := labelOf(prec[i*k : (i+1)*k])
		d.AddPixel(dist[i*k:(i+1)*k], prec[i*k:(i+1)*k], pred.Uncertainty[i], best)
	}
	d.AddCells(pred, 0, pred.CellRows*pred.CellCols)
	return nil
}

// trainDriftStats computes the drift statistics of m on its training scene
// s (training pixels left out of the distance distribution) with a
// predictor on backend: on the whole scene, or tile by tile on the grid a
// windowed model trained on (each pixel counted once, in the tile that
// owns it; its recovery and decision are the tile's).
func trainDriftStats(ctx context.Context, m *Model, s Scene, backend string) (*driftStats, error) {
	ref, err := m.SpectralReference()
	if err != nil {
		return nil, err
	}
	plan, err := m.trainedGrid()
	if err != nil {
		return nil, err
	}
	p, err := NewPredictor(m, backend)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	k := len(m.meta.Classes)
	pass := newDriftPass(s, k, m.meta.TrainIndices)
	for i := range plan.NumTiles() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, ts := plan.Tile(i), s
		if !plan.Whole {
			ts = tileScene(s, t)
		}
		if err := pass.addTile(ctx, m, p, ref, ts, t); err != nil {
			return nil, err
		}
	}
	return pass.finish()
}

// driftPass gathers trainDriftStats' figures over the parts of the
// training scene: the pixel tallies with and without the training pixels'
// distances, the class sums of the spectra, the cells' feature figures.
type driftPass struct {
	s                Scene
	k                int
	isTrain          []bool
	leaveOut, all    *driftTally
	stLeave, stAll   *driftStats
	specSum, specCnt []float64 // [k][bands] raw values by class-band label
	featByClass      [][]float64
	protoMargin      []float64
	cells            int
}

func newDriftPass(s Scene, k int, trainIdx []int) *driftPass {
	d := &driftPass{s: s, k: k, isTrain: make([]bool, s.Rows*s.Cols),
		leaveOut: newDriftTally(k), all: newDriftTally(k),
		stLeave: newDriftStats(s.Bands, k), stAll: newDriftStats(s.Bands, k),
		specSum: make([]float64, k*s.Bands), specCnt: make([]float64, k*s.Bands),
		featByClass: make([][]float64, k), protoMargin: make([]float64, k)}
	for _, i := range trainIdx {
		d.isTrain[i] = true
	}
	return d
}

// addTile predicts ts, tile t of the training scene (the scene itself for
// a whole-scene plan), and adds the pixels and cells t owns.
func (d *driftPass) addTile(ctx context.Context, m *Model, p *Predictor, ref *SpectralReference, ts Scene, t tiling.Tile) error {
	pred, err := p.Predict(ctx, ts)
	if err != nil {
		return err
	}
	k, n, B := d.k, ts.Rows*ts.Cols, ts.Bands
	dist := make([]float32, n*k)
	if err := ref.ClassDistances(ts.Data, ts.Valid, dist); err != nil {
		return err
	}
	prec := tiling.Recover(pred.Prob, ts.Valid, ts.Rows, ts.Cols, k, m.NetworkRecovery())
	// The recalibration probe compares a window's class means under the
	// class band's labels with these: under a fused decision they are the
	// fused labels, not the network's (which differ wherever the fusion
	// corrects the network, and would read as a calibration change of the
	// training scene itself).
	band := prec
	if m.Decision().Fused() {
		if band, err = m.Decide(ts, pred.Prob); err != nil {
			return err
		}
	}
	in, core := t.Input, t.Core
	for r := core.Row; r < core.Row+core.Rows; r++ {
		for c := core.Col; c < core.Col+core.Cols; c++ {
			i := (r-in.Row)*ts.Cols + (c - in.Col)
			if !ts.valid(i) {
				continue
			}
			px, pr, unc := dist[i*k:(i+1)*k], prec[i*k:(i+1)*k], float64(pred.Uncertainty[i])
			d.leaveOut.addPixel(d.stLeave, px, pr, unc, d.isTrain[r*d.s.Cols+c])
			d.all.addPixel(d.stAll, px, pr, unc, false)
			best := labelOf(band[i*k : (i+1)*k])
			for b, v := range ts.Data[i*B : (i+1)*B] {
				if v-v == 0 {
					d.specSum[best*B+b] += float64(v)
					d.specCnt[best*B+b]++
				}
			}
		}
	}
	for j := range pred.CellRows * pred.CellCols {
		r, c := in.Row+Stride*(j/pred.CellCols), in.Col+Stride*(j%pred.CellCols)
		if !core.Contains(c, r) {
			continue
		}
		cl, dd, mg, ok := nearestPrototype(pred.PrototypeCos[j*k : (j+1)*k])
		if !ok {
			continue
		}
		d.featByClass[cl] = append(d.featByClass[cl], dd)
		d.protoMargin[cl] += mg
		d.cells++
	}
	return nil
}

// finish is the statistics of the parts added.
func (d *driftPass) finish() (*driftStats, error) {
	st, t := d.stLeave, d.leaveOut
	if t.valid > 0 && len(t.nearest) == 0 {
		// Every valid pixel is a training pixel (a fully labelled scene
		// trained on all its labels): the distance distribution is then
		// the training pixels' own, nearer their prototypes than new
		// ground's, rather than no model at all.
		st, t = d.stAll, d.all
	}
	if t.valid == 0 || len(t.nearest) == 0 {
		return nil, errors.New("no valid pixel")
	}
	st.setBandSpread(d.s)
	st.setPixelStats(t)
	for i, n := range d.specCnt {
		if n > 0 {
			st.ClassMeanSpectrum[i] = float32(d.specSum[i] / n)
		}
	}
	if err := st.setFeatureStats(d.featByClass, d.protoMargin, d.cells); err != nil {
		return nil, err
	}
	return st, nil
}

// labelOf is the label the drift statistics give a pixel of class
// probabilities p: the first largest, and 0 when none is larger than the
// first (all zero or NaN), so that every valid pixel counts for a class.
func labelOf(p []float32) int {
	best := 0
	for c := 1; c < len(p); c++ {
		if p[c] > p[best] {
			best = c
		}
	}
	return best
}

// newDriftStats is empty statistics for B bands and k classes.
func newDriftStats(B, k int) *driftStats {
	return &driftStats{BandMean: make([]float32, B), BandStd: make([]float32, B), ClassShare: make([]float32, k),
		ClassDistanceP99: make([]float32, k), ClassDistanceP50: make([]float32, k), ClassReliability: make([]float32, k),
		FeatureDistanceP50: make([]float32, k), FeatureDistanceP90: make([]float32, k), ClassPrototypeMargin: make([]float32, k),
		ClassUncertainty: make([]float32, k), ClassMargin: make([]float32, k), ClassMeanSpectrum: make([]float32, k*B)}
}

// setBandSpread records each band's mean and standard deviation over the
// finite values of s's valid pixels.
func (st *driftStats) setBandSpread(s Scene) {
	B := s.Bands
	means := BandMeans(s)
	sq := make([]float64, B)
	cnt := make([]float64, B)
	for i := 0; i < s.Rows*s.Cols; i++ {
		if !s.valid(i) {
			continue
		}
		for b, v := range s.Data[i*B : (i+1)*B] {
			if x := float64(v); !math.IsNaN(x) && !math.IsInf(x, 0) {
				sq[b] += (x - means[b]) * (x - means[b])
				cnt[b]++
			}
		}
	}
	for b := range means {
		st.BandMean[b] = float32(means[b])
		if cnt[b] > 0 {
			st.BandStd[b] = float32(math.Sqrt(sq[b] / cnt[b]))
		}
	}
}

// driftTally sums the training scene's valid pixels for trainDriftStats:
// reliability, uncertainty and margin by predicted class, and the distance
// of each test pixel to its nearest class reference.
type driftTally struct {
	relByClass, relCount                []float64
	uncByClass, marginByClass, outCount []float64
	byClass                             [][]float64 // test pixels' nearest distances, by nearest class
	nearest                             []float64   // every test pixel's nearest distance
	relSum                              float64
	valid                               int64
}

func newDriftTally(k int) *driftTally {
	return &driftTally{relByClass: make([]float64, k), relCount: make([]float64, k),
		uncByClass: make([]float64, k), marginByClass: make([]float64, k), outCount: make([]float64, k),
		byClass: make([][]float64, k)}
}

// addPixel adds a valid pixel with class distances px, recovered
// probabilities prob and uncertainty unc; a training pixel (train) stays
// out of the distance distribution. It counts the predicted class's share
// in st.
func (t *driftTally) addPixel(st *driftStats, px, prob []float32, unc float64, train bool) {
	k := len(px)
	best := labelOf(prob)
	t.valid++
	st.ClassShare[best]++
	if a := AgreementOf(px, best); !math.IsNaN(float64(a)) {
		t.relSum += float64(a)
		t.relByClass[best] += float64(a)
		t.relCount[best]++
	}
	if mg := probMargin(prob); !math.IsNaN(mg) && !math.IsNaN(unc) {
		t.uncByClass[best] += unc
		t.marginByClass[best] += mg
		t.outCount[best]++
	}
	if train {
		return
	}
	near := 0
	for c := 1; c < k; c++ {
		if px[c] < px[near] {
			near = c
		}
	}
	if v := float64(px[near]); !math.IsNaN(v) && v < NoReference-1 {
		t.byClass[near] = append(t.byClass[near], v)
		t.nearest = append(t.nearest, v)
	}
}

// setPixelStats records the pixel statistics of t (which holds a valid
// pixel and a test pixel's distance): the shares, the mean reliability,
// uncertainty and margin by class, and the distance percentiles.
func (st *driftStats) setPixelStats(t *driftTally) {
	st.Pixels = t.valid
	st.Reliability = t.relSum / float64(t.valid)
	for c := range st.ClassShare {
		st.ClassShare[c] /= float32(t.valid)
		if t.relCount[c] > 0 {
			st.ClassReliability[c] = float32(t.relByClass[c] / t.relCount[c])
		}
		if t.outCount[c] > 0 {
			st.ClassUncertainty[c] = float32(t.uncByClass[c] / t.outCount[c])
			st.ClassMargin[c] = float32(t.marginByClass[c] / t.outCount[c])
		}
	}
	for c, v := range t.byClass {
		if len(v) == 0 {
			// A class no pixel is nearest to: any pixel's distance to it is
			// beyond every training pixel's.
			st.ClassDistanceP99[c] = 0
			continue
		}
		slices.Sort(v)
		st.ClassDistanceP99[c] = float32(percentile(v, 99))
		st.ClassDistanceP50[c] = float32(percentile(v, 50))
	}
	slices.Sort(t.nearest)
	for _, q := range driftQuantiles {
		st.DistanceQuantiles = append(st.DistanceQuantiles, float32(percentile(t.nearest, q)))
	}
}

// setFeatureStats records the feature space's statistics: every valid
// cell's distance to its nearest prototype (featByClass, by that class;
// the training pixels' cells too: the network's features of a whole cell,
// not one pixel's spectrum), the summed margins to the next prototype and
// the cell count.
func (st *driftStats) setFeatureStats(featByClass [][]float64, protoMargin []float64, cells int) error {
	st.Cells = int64(cells)
	if st.Cells == 0 {
		return errors.New("no valid cell")
	}
	for c, v := range featByClass {
		if len(v) == 0 {
			continue // as for the spectra: a cell nearest it is beyond every training cell
		}
		slices.Sort(v)
		st.FeatureDistanceP50[c] = float32(percentile(v, 50))
		st.FeatureDistanceP90[c] = float32(percentile(v, 90))
		st.ClassPrototypeMargin[c] = float32(protoMargin[c] / float64(len(v)))
	}
	return nil
}

// CalibrateDrift measures m's drift statistics again on its training scene
// s (the scene it was trained on, as given to Train) with a predictor on
// backend: for a model an experiment keeps on disk and reuses after the
// drift figures changed (LoadWithoutDrift). The checksum follows them.
func (m *Model) CalibrateDrift(ctx context.Context, s Scene, backend string) error {
	if s.Rows != m.meta.SceneRows || s.Cols != m.meta.SceneCols || s.Bands != m.meta.Bands {
		return fmt.Errorf("calibrate drift: a %dx%dx%d scene for a model trained on %dx%dx%d", s.Rows, s.Cols, s.Bands, m.meta.SceneRows, m.meta.SceneCols, m.meta.Bands)
	}
	st, err := trainDriftStats(ctx, m, s, backend)
	if err != nil {
		return fmt.Errorf("calibrate drift: %w", err)
	}
	m.meta.Drift = st
	if _, sum, err := m.fileBytes(); err == nil {
		m.checksum = sum
	}
	return nil
}

// checkDrift verifies stored drift statistics (none is valid).
func (m *Model) checkDrift() error {
	st := m.meta.Drift
	if st == nil {
		return nil
	}
	k := len(m.meta.Classes)
	switch {
	case len(st.BandMean) != m.meta.Bands || len(st.BandStd) != m.meta.Bands:
		return fmt.Errorf("drift statistics for %d/%d bands, want %d", len(st.BandMean), len(st.BandStd), m.meta.Bands)
	case len(st.ClassShare) != k || len(st.ClassDistanceP99) != k || len(st.ClassDistanceP50) != k || len(st.ClassReliability) != k:
		return fmt.Errorf("drift statistics for %d/%d/%d/%d classes, want %d", len(st.ClassShare), len(st.ClassDistanceP99), len(st.ClassDistanceP50), len(st.ClassReliability), k)
	case len(st.FeatureDistanceP50) != k || len(st.FeatureDistanceP90) != k || len(st.ClassPrototypeMargin) != k || len(st.ClassUncertainty) != k || len(st.ClassMargin) != k:
		return fmt.Errorf("feature drift statistics for %d/%d/%d/%d/%d classes, want %d", len(st.FeatureDistanceP50), len(st.FeatureDistanceP90), len(st.ClassPrototypeMargin), len(st.ClassUncertainty), len(st.ClassMargin), k)
	case len(st.ClassMeanSpectrum) == 0:
		return fmt.Errorf("drift statistics without the class mean spectra the recalibration probe needs (a model file of an earlier build of format 4): train the model again with this version: %w", ErrNoProbeStats)
	case len(st.ClassMeanSpectrum) != k*m.meta.Bands:
		return fmt.Errorf("class mean spectra of %d values, want %d classes x %d bands", len(st.ClassMeanSpectrum), k, m.meta.Bands)
	case len(st.DistanceQuantiles) != len(driftQuantiles):
		return fmt.Errorf("%d distance quantiles, want %d", len(st.DistanceQuantiles), len(driftQuantiles))
	case !(st.Reliability >= 0 && st.Reliability <= 1):
		return fmt.Errorf("reliability baseline %g outside 0..1", st.Reliability)
	}
	return nil
}
