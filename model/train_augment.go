package model

import (
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/tensors"
)

// augmenter makes the network input of each augmented training step: the
// training scene changed by a Radiometric drawn from the Augment bounds,
// normalised with the clean scene's statistics (in). Its random source is
// its own (seeded from the run seed), so training without augmentation
// draws exactly what it drew before augmentation existed.
type augmenter struct {
	cfg     Augment
	s       Scene
	in      inputSpec
	encoder string
	means   []float64
	rng     *rand.Rand
	buf     []float32       // the changed scene's values
	x       *tensors.Tensor // the current step's input, released by done
	// Sub-areas (Augment.Crop): their own random source, so that the
	// radiometric stream is the same with and without them.
	cropRng *rand.Rand
	valid   []bool            // the current sub-area's valid mask
	cropped bool              // the current step sees only the pixels valid in valid
	held    []*tensors.Tensor // the current step's other inputs, released by done
}

func newAugmenter(cfg Augment, s Scene, in inputSpec, encoder string, seed int64) *augmenter {
	a := &augmenter{cfg: cfg, s: s, in: in, encoder: encoder}
	if cfg.On() {
		a.means = BandMeans(s)
		a.rng = rand.New(rand.NewPCG(uint64(seed), 0x61756720))
	}
	if cfg.Crop > 0 {
		a.cropRng = rand.New(rand.NewPCG(uint64(seed), 0x63726f70))
		a.valid = make([]bool, s.Rows*s.Cols)
	}
	return a
}

// setScene makes s the scene the next steps change: a windowed run's tile
// (of one size for the whole run). The band means stay the training
// scene's.
func (a *augmenter) setScene(s Scene) {
	a.s = s
	if a.valid != nil && len(a.valid) != s.Rows*s.Cols {
		a.valid = make([]bool, s.Rows*s.Cols)
	}
	if a.buf != nil && len(a.buf) != len(s.Data) {
		a.buf = nil
	}
}

// next returns the input of step epoch of epochs (from 1), or nil for the
// clean input.
func (a *augmenter) next(epoch, epochs int) *tensors.Tensor {
	changed, ok := a.nextScene(epoch, epochs)
	if !ok {
		return nil
	}
	x, dims := netInput(changed, a.in, a.encoder)
	a.x = tensorOf(x, dims...)
	return a.x
}

// nextScene is next's changed scene itself (its values in a.buf and its
// valid mask in a.valid, both valid until the next call), or false for the
// clean scene. next and nextScene draw the same random numbers, so training
// on the graph and on pnec's kernels (kernels.FullRes, which takes the scene) sees
// the same steps.
func (a *augmenter) nextScene(epoch, epochs int) (Scene, bool) {
	st, ok := a.draw(epoch, epochs)
	if !ok {
		return Scene{}, false
	}
	return a.apply(st), true
}

// apply makes the scene of draw st on the host (nextScene).
func (a *augmenter) apply(st augDraw) Scene {
	changed := a.s
	if !st.r.IsIdentity() {
		if a.buf == nil {
			a.buf = make([]float32, len(a.s.Data))
		}
		// The noise comes from the same stream as the changes (as it always
		// has: the Go backend's training results stay as they were).
		st.r.applyInto(a.buf, a.s, a.means, a.rng)
		changed.Data = a.buf
	}
	if st.crop {
		for i := range a.valid {
			row, col := i/a.s.Cols, i%a.s.Cols
			a.valid[i] = a.s.valid(i) && row >= st.r0 && row < st.r1 && col >= st.c0 && col < st.c1
		}
		changed.Valid = a.valid
		a.cropped = true
	}
	return changed
}

// augDraw is one training step's augmentation: the radiometric change r
// and, when crop, the sub-area rows [r0, r1) and columns [c0, c1).
type augDraw struct {
	r              Radiometric
	r0, r1, c0, c1 int
	crop           bool
}

// draw picks step epoch's change (of epochs, from 1): false for the clean
// scene (no augmentation, the clean tail, or nothing drawn). The random
// numbers drawn do not depend on the outcome, so that every step draws
// the same whatever the schedule.
func (a *augmenter) draw(epoch, epochs int) (augDraw, bool) {
	a.cropped = false
	if a.rng == nil {
		return augDraw{}, false
	}
	var st augDraw
	st.r = a.cfg.draw(a.rng)
	st.r0, st.r1, st.c0, st.c1, st.crop = a.drawCrop()
	if float64(epoch) > float64(epochs)*(1-a.cfg.CleanTail) {
		return augDraw{}, false // the clean tail (drawn all the same: the stream stays the same)
	}
	if st.r.IsIdentity() && !st.crop {
		return augDraw{}, false
	}
	return st, true
}

// drawCrop draws one step's sub-area (Augment.Crop), rows [r0, r1) and
// columns [c0, c1): false for the whole scene. The cut is at a multiple of
// Stride, so that the sub-area's cells are the scene's, as a sub-area of a
// new acquisition cut from the same grid would be.
func (a *augmenter) drawCrop() (r0, r1, c0, c1 int, ok bool) {
	if a.cropRng == nil {
		return 0, 0, 0, 0, false
	}
	rng := a.cropRng
	u, acrossCols, low, keep := rng.Float64(), rng.IntN(2) == 1, rng.IntN(2) == 1, 0.4+0.35*rng.Float64()
	r0, r1, c0, c1 = 0, a.s.Rows, 0, a.s.Cols
	if u >= a.cfg.Crop {
		return r0, r1, c0, c1, false
	}
	n := a.s.Rows
	if acrossCols {
		n = a.s.Cols
	}
	share := keep
	if !low {
		share = 1 - keep
	}
	cut := Stride * int(math.Round(share*float64(n)/Stride))
	if cut <= 0 || cut >= n {
		return r0, r1, c0, c1, false
	}
	lo, hi := 0, cut
	if !low {
		lo, hi = cut, n
	}
	if acrossCols {
		c0, c1 = lo, hi
	} else {
		r0, r1 = lo, hi
	}
	return r0, r1, c0, c1, true
}

// cropStep is the step data td for the current sub-area (a.cropped): the
// valid masks, anchors and valid cells of the sub-area, and the training
// pixels outside it out of the loss and the prototype update (class -1,
// whose one-hot row is zero). The tensors are released by done.
func (a *augmenter) cropStep(td trainData, trainIdx []int, ytrain []int32, kernels bool) trainData {
	s := a.s
	s.Valid = a.valid
	step := td
	step.masks = nil
	masks := stepMasks(s, a.encoder, kernels)
	for _, mk := range masks {
		step.masks = append(step.masks, tensorOf(mk, len(mk)))
	}
	anchor, ytr := trainTargets(s, a.encoder, trainIdx, ytrain)
	step.anchor, step.cellMask, step.ytr = tensorOf(anchor, len(anchor)), tensorOf(masks[len(masks)-1], len(anchor)), tensorOf(ytr, len(ytr))
	a.held = append(append(a.held, step.masks...), step.anchor, step.cellMask, step.ytr)
	return step
}

// done releases the step's input.
func (a *augmenter) done() {
	if a.x != nil {
		a.x.FinalizeAll()
		a.x = nil
	}
	for _, t := range a.held {
		t.FinalizeAll()
	}
	a.held = a.held[:0]
}
