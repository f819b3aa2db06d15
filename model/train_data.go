package model

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
)

// trainData is everything a training step needs besides the weights.
type trainData struct {
	x *tensors.Tensor // the network's input (netInput)
	// xAug, when set, is an augmented input: the step runs the network on
	// it with the GroupNorm statistics of x (see trainer.augExec).
	xAug     *tensors.Tensor
	masks    []*tensors.Tensor // netMasks: valid rows of the grids GroupNorm runs on
	anchor   *tensors.Tensor   // [L] int32 dense class of cells holding a training pixel, else -1
	wtr      *tensors.Tensor   // [Ntr, L] bilinear weights of the training pixels
	ytr      *tensors.Tensor   // [Ntr] int32 dense class
	cellMask *tensors.Tensor   // [L] 1 for cells with a valid pixel
	// ceScale is the step's rows over its training pixels (graphBuilder.ceScale): 0
	// or 1 for a whole-scene step, more for a windowed step's padded rows.
	ceScale float32
}

// setAugmented makes x the step's augmented input: the network's input
// itself with per-image statistics (imageNorm), else the input normalised
// with the clean input's statistics (xAug).
func (td *trainData) setAugmented(x *tensors.Tensor, imageNorm bool) {
	if imageNorm {
		td.x = x
	} else {
		td.xAug = x
	}
}

// newTrainData prepares the constant inputs of the training step: the
// normalised padded scene, the anchor class of cells holding a training
// pixel, the bilinear weights from the stride-4 grid to each training pixel,
// and the valid-cell mask.
//
// With kernels (the paper encoder's full-resolution stage on pnec's own
// kernels, kernels.FullRes) the graph's input is the stage's output, made at every
// step: x stays nil and only the low-resolution mask is kept. Train passes
// kernels also when the augmentation graph makes the input (augGraph.clean
// then fills x and the masks).
func newTrainData(s Scene, in inputSpec, trainIdx []int, ytrain []int32, encoder string, kernels bool) trainData {
	hs, ws := lowRes(s.Rows, encoder), lowRes(s.Cols, encoder)
	l := hs * ws
	var td trainData
	if !kernels {
		x, xdims := netInput(s, in, encoder)
		td.x = tensorOf(x, xdims...)
	}
	masks := stepMasks(s, encoder, kernels)
	for _, mk := range masks {
		td.masks = append(td.masks, tensorOf(mk, len(mk)))
	}
	anchor, ytr := trainTargets(s, encoder, trainIdx, ytrain)
	ur, uc := upMatrix(s.Rows, hs), upMatrix(s.Cols, ws)
	ntr := len(trainIdx)
	wtr := make([]float32, ntr*l)
	for t, i := range trainIdx {
		if ytrain[t] < 0 {
			continue // a padding row (trainWindows): no pixel
		}
		r, c := i/s.Cols, i%s.Cols
		for a := 0; a < hs; a++ {
			if wa := ur[r*hs+a]; wa != 0 {
				for bb := 0; bb < ws; bb++ {
					wtr[t*l+a*ws+bb] = wa * uc[c*ws+bb]
				}
			}
		}
	}
	td.anchor, td.cellMask = tensorOf(anchor, l), tensorOf(masks[len(masks)-1], l)
	td.wtr, td.ytr = tensorOf(wtr, ntr, l), tensorOf(ytr, ntr)
	return td
}

// stepMasks are the valid masks the training step takes for s (netMasks;
// with kernels only the low-resolution one, the last).
func stepMasks(s Scene, encoder string, kernels bool) [][]float32 {
	masks := netMasks(s, encoder)
	if kernels {
		masks = masks[len(masks)-1:]
	}
	return masks
}

// trainTargets are the step's anchors, [Hs*Ws], the dense class of the cell
// each training pixel lies in, else -1 (the last pixel wins, like the
// reference; pixels past the paper's floor grid go to the nearest cell),
// and the training pixels' classes, -1 for a pixel not valid in s (outside
// a sub-area of Augment.Crop: its one-hot row is zero, so it has no loss
// term and no prototype update).
func trainTargets(s Scene, encoder string, trainIdx []int, ytrain []int32) (anchor, ytr []int32) {
	hs, ws := lowRes(s.Rows, encoder), lowRes(s.Cols, encoder)
	anchor = make([]int32, hs*ws)
	for i := range anchor {
		anchor[i] = -1
	}
	ytr = make([]int32, len(trainIdx))
	for t, i := range trainIdx {
		ytr[t] = -1
		if !s.valid(i) || ytrain[t] < 0 {
			continue
		}
		ytr[t] = ytrain[t]
		r, c := i/s.Cols, i%s.Cols
		anchor[min(r/Stride, hs-1)*ws+min(c/Stride, ws-1)] = ytr[t]
	}
	return anchor, ytr
}

// stepInputs are the training step's inputs by name, in the order step
// passes them (and splitStepInputs takes them): the data (x, anchor, wtr,
// ytr, cellMask), the schedule (calib, and Adam's bias-corrected scales a1
// and c2), the cross-entropy's scale (trainData.ceScale), the valid masks (trainData.masks), then the state (trainer.state):
// the prototype bank and its initialised flags, the parameters, Adam's
// first and second moments; an augmented step's scene comes last.
type stepInputs struct {
	x, anchor, wtr, ytr, cellMask *Node
	calib, a1, c2                 *Node
	ceScale                       *Node
	masks                         []*Node
	protos, protoInit             *Node
	params, adamM, adamV          []*Node
	xAug                          *Node // the augmented scene (augmented steps only, after the state)
}

// stepDataInputs is how many inputs come before the valid masks: the data,
// the schedule and the scale of stepInputs.
const stepDataInputs = 9

// splitStepInputs names in: masks valid masks, np parameters (and as many
// moments of each kind).
func splitStepInputs(in []*Node, masks, np int) stepInputs {
	take := func(n int) []*Node {
		s := in[:n]
		in = in[n:]
		return s
	}
	var s stepInputs
	d := take(stepDataInputs)
	s.x, s.anchor, s.wtr, s.ytr, s.cellMask, s.calib, s.a1, s.c2, s.ceScale = d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8]
	s.masks = take(masks)
	bank := take(2)
	s.protos, s.protoInit = bank[stateProtos], bank[stateProtoInit]
	s.params, s.adamM, s.adamV = take(np), take(np), take(np)
	if len(in) > 0 {
		s.xAug = in[0]
	}
	return s
}

// Indices into trainer.state: the bank, its flags, then the parameters
// (then Adam's moments).
const (
	stateProtos    = 0
	stateProtoInit = 1
	stateParams    = 2
)

// finalize releases the tensors of td.
func (td *trainData) finalize() {
	for _, t := range append([]*tensors.Tensor{td.x, td.anchor, td.wtr, td.ytr, td.cellMask}, td.masks...) {
		if t != nil {
			t.FinalizeAll()
		}
	}
	*td = trainData{}
}
