package processor

import (
	"context"
	"fmt"
	"slices"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/buffers"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
)

// probeDrift runs the recalibration probe (model.ProbeRecalibration) on a
// window of the scene and adds what it found to d. The window (at most
// drift.ProbeSide pixels a side: the centred one, or the first of
// drift.ProbeCandidates with enough valid pixels, the last of them around
// near's pixel) is read again, as the
// tiles were (band plan, nodata, quality masks and the mask mk), so the
// probe stays apart from the tile pipeline and runs after it on the
// classifier's predictor: two runs of the network on the window, padded
// with no-data to the ladder as tiles are (padToLadder), or one when st
// holds the main pass's labels of a scene that is its own window
// (reusableProbeLabels; that run then takes the main pass's call,
// recovered in the graph when recovered says the main pass was, so that
// both runs meet the same compiled graph and recovery). Only a scene
// without a valid pixel leaves the probe's figures unmeasured (NaN), which
// the verdict reports: the window around st.near holds one whenever the
// tiles read one.
func (c *Classifier) probeDrift(ctx context.Context, sc *geo.Scene, mk *geo.Mask, info geo.Info, st *stitcher, recovered bool) error {
	d, whole := st.drift, st.probeLabels
	windows := drift.ProbeCandidates(info.Rows, info.Cols, st.near)
	var best model.Scene // the chosen window so far; no Data while none holds a valid pixel
	var bestWin tiling.Rect
	var counts []int
	var inside []bool
	for i, w := range windows {
		gw := geo.Window{Col: w.Col, Row: w.Row, Cols: w.Cols, Rows: w.Rows}
		blk, err := sc.ReadWindow(ctx, gw)
		if err != nil {
			return fmt.Errorf("drift probe: %w", err)
		}
		if mk != nil {
			inside = buffers.Resize(inside, w.Cols*w.Rows)
			if _, err := mk.Read(gw, inside); err != nil {
				return fmt.Errorf("drift probe: %w", err)
			}
			applyMask(blk, inside)
		}
		n := 0
		for _, v := range blk.Valid {
			if v {
				n++
			}
		}
		counts = append(counts, n)
		if drift.ChooseProbeWindow(windows[:i+1], counts) == i {
			best = model.Scene{Rows: w.Rows, Cols: w.Cols, Bands: blk.Bands, Data: blk.Data, Valid: blk.Valid}
			bestWin = w
		}
		if float64(n) >= drift.ProbeMinValidShare*float64(w.Rows*w.Cols) {
			break // the first window with enough valid pixels is the one
		}
	}
	if best.Data == nil {
		return nil
	}
	in := padToLadder(best)
	var asIs []int
	var p model.ScenePredictor = c.pred
	if whole != nil && bestWin == (tiling.Rect{Rows: info.Rows, Cols: info.Cols}) {
		asIs = whole // laid out on the padded input, as in is
		if w, ok := c.pred.(wholeRecoverer); ok && recovered {
			p = recoveringPredictor{w}
		}
	}
	r, err := c.m.ProbeRecalibrationFrom(ctx, p, in, asIs)
	if err != nil {
		return err
	}
	d.AddRecalibration(r)
	return nil
}

// padToLadder is w padded at the bottom and right with invalid pixels to
// the ladder's next rung (tiling.Rung, tiling.LadderStep), as the plan pads
// the tiles: the probe's window then has a network input shape the scene's
// own tiles already compiled (a scene up to the probe's side runs both on
// the same shape). Padding is no-data, which the probe does not count.
func padToLadder(w model.Scene) model.Scene {
	rows, cols := tiling.Rung(w.Rows, tiling.LadderStep), tiling.Rung(w.Cols, tiling.LadderStep)
	if rows == w.Rows && cols == w.Cols {
		return w
	}
	return model.PadScene(w, rows, cols)
}

// reusableProbeLabels reports whether the main pass's labels can stand for
// the probe's first run: the scene is its own probe window (no side over
// drift.ProbeSide) and runs whole on the shape padToLadder gives that
// window, so the network sees the same input in both. Any other plan
// classifies the window apart from its neighbours' context, which the
// probe must not count as change.
func reusableProbeLabels(plan *tiling.Plan, info geo.Info, m *model.Model) bool {
	// The probe's runs decide by the network alone (the drift statistics'
	// recalibration is of the network): a fused decision's labels are not
	// theirs to reuse.
	return !m.Decision().Fused() && plan.Whole && info.Rows <= drift.ProbeSide && info.Cols <= drift.ProbeSide &&
		plan.TileRows == tiling.Rung(info.Rows, tiling.LadderStep) &&
		plan.TileCols == tiling.Rung(info.Cols, tiling.LadderStep)
}

// recoveringPredictor calls the network as a whole scene's recovered call
// (wholeRecoverer.PredictRecovered): the probe's run on a scene whose
// main pass was so recovered takes the same graph and recovery.
type recoveringPredictor struct{ wholeRecoverer }

func (p recoveringPredictor) Predict(ctx context.Context, s model.Scene) (model.Prediction, error) {
	return p.PredictRecovered(ctx, s)
}

// ProbeShape is the network input shape the drift probe's own runs call
// for a rows x cols scene with m and opts (tile calls, not recovered), and
// false when it calls none of its own: m has no drift statistics, or the
// scene is its own probe window and runs whole, so that the probe takes
// the main pass's labels and call (reusableProbeLabels). pnec backends
// --precompile compiles these beside SceneShape's.
func ProbeShape(rows, cols int, m *model.Model, opts Options) (model.CallShape, bool, error) {
	if !m.HasDriftStats() {
		return model.CallShape{}, false, nil
	}
	info := assumedInfo(rows, cols, m.Bands())
	p, err := planGrid(info, m, opts, true)
	if err != nil {
		return model.CallShape{}, false, err
	}
	if reusableProbeLabels(&p, info, m) {
		return model.CallShape{}, false, nil
	}
	w := drift.ProbeWindows(rows, cols)[0] // every candidate has its size
	return model.CallShape{Rows: tiling.Rung(w.Rows, tiling.LadderStep), Cols: tiling.Rung(w.Cols, tiling.LadderStep)}, true, nil
}

// ProbeShapes is every shape ProbeShape gives scenes of any size with m
// and opts, each once: with the default grid 64x128, 128x64 and 128x128
// (a probe window is at most drift.ProbeSide a side, padded to the
// ladder).
func ProbeShapes(m *model.Model, opts Options) ([]model.CallShape, error) {
	var out []model.CallShape
	sides := []int{1, tiling.LadderStep, tiling.LadderStep + 1, drift.ProbeSide, drift.ProbeSide + 1, gridTile(opts) + 1}
	for _, rows := range sides {
		for _, cols := range sides {
			sh, ok, err := ProbeShape(rows, cols, m, opts)
			if err != nil {
				return nil, err
			}
			if ok && !slices.Contains(out, sh) {
				out = append(out, sh)
			}
		}
	}
	return out, nil
}
