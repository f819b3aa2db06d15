package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/internal/quantile"
	"github.com/pnec/pnec/tiling"
)

// HasDriftStats reports whether m stores the training statistics drift needs.
func (m *Model) HasDriftStats() bool { return m.meta.Drift != nil }

// DriftStats are the training scene's statistics m stores, that a scene's
// drift is measured against (drift.NewMeter); nil for a model without
// them.
func (m *Model) DriftStats() *drift.Stats { return m.meta.Drift }

// DriftPixel is what valid pixel i of a scene adds to its drift: its class
// distances dist (ClassDistances, blended over tiles or not), recovered
// probabilities prob (one per class), G~ and label (dense class index).
func DriftPixel(dist, prob []float32, uncertainty float32, label int) drift.Pixel {
	return drift.Pixel{Dist: dist, Agreement: AgreementOf(dist, label), Margin: ReliabilityMargin.Pixel(prob, 0),
		Uncertainty: uncertainty, Label: label}
}

// DriftOf measures the drift of a whole scene s given m's prediction on it
// (recovered with m's recovery, as products are), the spectral reference
// ref (m.SpectralReference) and a predictor p for the recalibration probe
// (on ProbeWindowOf(s)).
func (m *Model) DriftOf(ctx context.Context, p ScenePredictor, s Scene, pred Prediction, ref *SpectralReference) (drift.Report, error) {
	d, err := drift.NewMeter(m.meta.Drift, drift.DefaultThresholds)
	if err != nil {
		return drift.Report{}, err
	}
	if err := measureScene(d, s, pred, ref, m); err != nil {
		return drift.Report{}, err
	}
	if w, ok := ProbeWindowOf(s); ok {
		r, err := m.ProbeRecalibration(ctx, p, CropScene(s, w))
		if err != nil {
			return drift.Report{}, fmt.Errorf("drift: %w", err)
		}
		d.AddRecalibration(r)
	}
	return d.Report(), nil
}

// measureScene feeds a whole scene and its prediction to d.
func measureScene(d *drift.Meter, s Scene, pred Prediction, ref *SpectralReference, m *Model) error {
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
		d.AddPixel(DriftPixel(dist[i*k:(i+1)*k], prec[i*k:(i+1)*k], pred.Uncertainty[i], best))
	}
	if pred.Classes == k && len(pred.PrototypeCos) == pred.CellRows*pred.CellCols*k {
		d.AddCells(pred.PrototypeCos)
	}
	return nil
}

// trainDriftStats computes the drift statistics of m on its training scene
// s (training pixels left out of the distance distribution) with a
// predictor on backend: on the whole scene, or tile by tile on the grid a
// windowed model trained on (each pixel counted once, in the tile that
// owns it; its recovery and decision are the tile's).
func trainDriftStats(ctx context.Context, m *Model, s Scene, backend string) (*drift.Stats, error) {
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
	stLeave, stAll   *drift.Stats
	specSum, specCnt []float64 // [k][bands] raw values by class-band label
	featByClass      [][]float64
	protoMargin      []float64
	cells            int
}

func newDriftPass(s Scene, k int, trainIdx []int) *driftPass {
	d := &driftPass{s: s, k: k, isTrain: make([]bool, s.Rows*s.Cols),
		leaveOut: newDriftTally(k), all: newDriftTally(k),
		stLeave: drift.NewStats(s.Bands, k), stAll: drift.NewStats(s.Bands, k),
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
		cl, dd, mg, ok := drift.NearestPrototype(pred.PrototypeCos[j*k : (j+1)*k])
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
func (d *driftPass) finish() (*drift.Stats, error) {
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
	if err := setBandSpread(st, d.s); err != nil {
		return nil, err
	}
	setPixelStats(st, t)
	for i, n := range d.specCnt {
		if n > 0 {
			st.ClassMeanSpectrum[i] = float32(d.specSum[i] / n)
		}
	}
	if err := setFeatureStats(st, d.featByClass, d.protoMargin, d.cells); err != nil {
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

// setBandSpread records in st each band's mean and standard deviation over the
// finite values of s's valid pixels.
func setBandSpread(st *drift.Stats, s Scene) error {
	B := s.Bands
	var means, sq, cnt []float64
	if s.Streamed() {
		var err error
		if means, sq, cnt, err = streamedSpread(s); err != nil {
			return fmt.Errorf("band spread: %w", err)
		}
	} else {
		means = BandMeans(s)
		sq, cnt = make([]float64, B), make([]float64, B)
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
	}
	for b := range means {
		st.BandMean[b] = float32(means[b])
		if cnt[b] > 0 {
			st.BandStd[b] = float32(math.Sqrt(sq[b] / cnt[b]))
		}
	}
	return nil
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
func (t *driftTally) addPixel(st *drift.Stats, px, prob []float32, unc float64, train bool) {
	k := len(px)
	best := labelOf(prob)
	t.valid++
	st.ClassShare[best]++
	if a := AgreementOf(px, best); !math.IsNaN(float64(a)) {
		t.relSum += float64(a)
		t.relByClass[best] += float64(a)
		t.relCount[best]++
	}
	if mg := float64(ReliabilityMargin.Pixel(prob, 0)); !math.IsNaN(mg) && !math.IsNaN(unc) {
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
	if v := float64(px[near]); !math.IsNaN(v) && v < drift.NoReferenceAbove {
		t.byClass[near] = append(t.byClass[near], v)
		t.nearest = append(t.nearest, v)
	}
}

// setPixelStats records in st the pixel statistics of t (which holds a valid
// pixel and a test pixel's distance): the shares, the mean reliability,
// uncertainty and margin by class, and the distance percentiles.
func setPixelStats(st *drift.Stats, t *driftTally) {
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
		st.ClassDistanceP99[c] = float32(quantile.Percentile(v, 99))
		st.ClassDistanceP50[c] = float32(quantile.Percentile(v, 50))
	}
	slices.Sort(t.nearest)
	for _, q := range drift.Quantiles {
		st.DistanceQuantiles = append(st.DistanceQuantiles, float32(quantile.Percentile(t.nearest, q)))
	}
}

// setFeatureStats records in st the feature space's statistics: every valid
// cell's distance to its nearest prototype (featByClass, by that class;
// the training pixels' cells too: the network's features of a whole cell,
// not one pixel's spectrum), the summed margins to the next prototype and
// the cell count.
func setFeatureStats(st *drift.Stats, featByClass [][]float64, protoMargin []float64, cells int) error {
	st.Cells = int64(cells)
	if st.Cells == 0 {
		return errors.New("no valid cell")
	}
	for c, v := range featByClass {
		if len(v) == 0 {
			continue // as for the spectra: a cell nearest it is beyond every training cell
		}
		slices.Sort(v)
		st.FeatureDistanceP50[c] = float32(quantile.Percentile(v, 50))
		st.FeatureDistanceP90[c] = float32(quantile.Percentile(v, 90))
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
	if m.meta.Drift == nil {
		return nil
	}
	return m.meta.Drift.Check(m.meta.Bands, len(m.meta.Classes))
}
