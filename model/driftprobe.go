package model

import (
	"context"
	"fmt"
	"math"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/tiling"
)

// The recalibration probe (the drift package says what it measures and
// why): its windows and calibration maths are drift's; the model runs the
// network on a window as it is and with the calibration undone.

// PadScene is s padded at the bottom and right with invalid pixels to
// rows x cols (at least s's size): a scene as a padded network input lays
// it out.
func PadScene(s Scene, rows, cols int) Scene {
	B := s.Bands
	out := Scene{Rows: rows, Cols: cols, Bands: B, WavelengthsNM: s.WavelengthsNM,
		Data: make([]float32, rows*cols*B), Valid: make([]bool, rows*cols)}
	for r := 0; r < s.Rows; r++ {
		copy(out.Data[r*cols*B:(r*cols+s.Cols)*B], s.Data[r*s.Cols*B:(r+1)*s.Cols*B])
		for c := 0; c < s.Cols; c++ {
			out.Valid[r*cols+c] = s.Valid == nil || s.Valid[r*s.Cols+c]
		}
	}
	return out
}

// CropScene is the rectangle w of s.
func CropScene(s Scene, w tiling.Rect) Scene {
	out := Scene{Rows: w.Rows, Cols: w.Cols, Bands: s.Bands, WavelengthsNM: s.WavelengthsNM, Data: make([]float32, w.Rows*w.Cols*s.Bands)}
	if s.Valid != nil {
		out.Valid = make([]bool, w.Rows*w.Cols)
	}
	B := s.Bands
	for r := 0; r < w.Rows; r++ {
		src := (w.Row+r)*s.Cols + w.Col
		copy(out.Data[r*w.Cols*B:(r+1)*w.Cols*B], s.Data[src*B:(src+w.Cols)*B])
		if s.Valid != nil {
			copy(out.Valid[r*w.Cols:(r+1)*w.Cols], s.Valid[src:src+w.Cols])
		}
	}
	return out
}

// ProbeWindowOf is the window of s the recalibration probe runs on
// (ProbeCandidates, ChooseProbeWindow) and ok false when none holds a valid
// pixel.
func ProbeWindowOf(s Scene) (tiling.Rect, bool) {
	near := drift.NewNearestValid(s.Rows, s.Cols)
	for r := range s.Rows {
		var valid []bool
		if s.Valid != nil {
			valid = s.Valid[r*s.Cols : (r+1)*s.Cols]
		}
		near.AddRow(r, 0, s.Cols, valid)
	}
	ws := drift.ProbeCandidates(s.Rows, s.Cols, near)
	counts := make([]int, len(ws))
	for i, w := range ws {
		for r := w.Row; r < w.Row+w.Rows; r++ {
			for c := w.Col; c < w.Col+w.Cols; c++ {
				if s.valid(r*s.Cols + c) {
					counts[i]++
				}
			}
		}
	}
	i := drift.ChooseProbeWindow(ws, counts)
	if i < 0 {
		return tiling.Rect{}, false
	}
	return ws[i], true
}

// ScenePredictor runs the network on a scene: a Predictor, or what a
// caller wraps one in.
type ScenePredictor interface {
	Predict(ctx context.Context, s Scene) (Prediction, error)
}

// ProbeRecalibration runs the recalibration probe on w (a window of a
// scene, ProbeWindowOf; its pixels as read, raw values) with p: the window
// is classified as it is, its calibration against the training scene is
// estimated from its pixels and labels (drift.EstimateCalibration), and it is
// classified again with that calibration undone.
func (m *Model) ProbeRecalibration(ctx context.Context, p ScenePredictor, w Scene) (drift.Recalibration, error) {
	return m.ProbeRecalibrationFrom(ctx, p, w, nil)
}

// ProbeRecalibrationFrom is ProbeRecalibration given asIs, w's labels as p
// gives them for w itself (a dense class index per pixel of w, -1 where w
// is invalid), so that the probe runs the network once instead of twice: a
// classifier that ran the same input whole already has them. asIs nil
// means the probe classifies w itself. The caller vouches that asIs are
// p's labels of w: labels of another input (the window inside a tiled
// run, which sees its neighbours) would count their differences as changes.
func (m *Model) ProbeRecalibrationFrom(ctx context.Context, p ScenePredictor, w Scene, asIs []int) (drift.Recalibration, error) {
	st := m.meta.Drift
	if st == nil {
		return drift.Recalibration{}, drift.ErrNoStats
	}
	k, B := len(m.meta.Classes), m.meta.Bands
	if len(st.ClassMeanSpectrum) != k*B {
		return drift.Recalibration{}, drift.ErrNoProbeStats
	}
	if w.Bands != B || len(w.Data) != w.Rows*w.Cols*B {
		return drift.Recalibration{}, fmt.Errorf("recalibration probe: a %dx%dx%d window for a model of %d bands: %w", w.Rows, w.Cols, w.Bands, B, ErrBandCount)
	}
	// The probe counts the class band's changes: under a fused decision
	// the product's map is the fused one, which holds under shifts the
	// network alone does not (a tilt the training spectra's copies cover),
	// so judging the network's labels would flag maps that held.
	ref, err := m.DecisionReference()
	if err != nil {
		return drift.Recalibration{}, fmt.Errorf("recalibration probe: %w", err)
	}
	labels := func(s Scene) ([]int, error) {
		pred, err := p.Predict(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("recalibration probe: %w", err)
		}
		if pred.Classes != k || len(pred.Prob) != s.Rows*s.Cols*k {
			return nil, fmt.Errorf("recalibration probe: prediction of %d classes for a model of %d", pred.Classes, k)
		}
		prob := pred.Prob
		switch {
		case pred.Recovered && m.Decision().Fused():
			return nil, fmt.Errorf("recalibration probe: a fused decision needs the network's probabilities before the recovery")
		case !pred.Recovered:
			if prob, err = m.decideWithRef(ref, s, pred.Prob, m.Recovery()); err != nil {
				return nil, fmt.Errorf("recalibration probe: %w", err)
			}
		}
		out := make([]int, s.Rows*s.Cols)
		for i := range out {
			out[i] = -1
			if !s.valid(i) {
				continue
			}
			out[i] = labelOf(prob[i*k : (i+1)*k])
		}
		return out, nil
	}
	l0 := asIs
	if l0 == nil {
		var err error
		if l0, err = labels(w); err != nil {
			return drift.Recalibration{}, err
		}
	} else if len(l0) != w.Rows*w.Cols {
		return drift.Recalibration{}, fmt.Errorf("recalibration probe: %d labels for a %dx%d window", len(l0), w.Rows, w.Cols)
	}
	cal, ok := drift.EstimateCalibration(w.Data, w.Bands, l0, st.ClassMeanSpectrum, k)
	if !ok {
		// No pixel with finite positive values to estimate from (a
		// degenerate scene): the probe measured nothing, its figures are
		// NaN, and the verdict says so.
		return drift.Recalibration{BandShift: math.NaN()}, nil
	}
	back := w
	back.Data = cal.Undo(w.Data, w.Valid, w.Bands)
	l1, err := labels(back)
	if err != nil {
		return drift.Recalibration{}, err
	}
	r := drift.Recalibration{BandShift: cal.BandShift}
	for i, l := range l0 {
		if l < 0 {
			continue
		}
		r.Pixels++
		if l1[i] != l {
			r.Changed++
		}
	}
	return r, nil
}
