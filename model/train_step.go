package model

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/pnec/pnec/model/internal/kernels"
)

// trainer holds the compiled training step and the current state as tensors.
type trainer struct {
	exec *Exec
	// augExec is the step on an augmented input normalised with the
	// GroupNorm statistics of the clean input (trainData.xAug), built on
	// first use: a pass of the network over the clean scene gives the
	// statistics, the augmented pass uses them as constants. At inference
	// every scene is normalised with the training scene's statistics, so
	// this is how a changed scene is normalised there; per-image statistics
	// (Augment.ImageNorm) would normalise much of a brightness change away
	// during training and teach the network nothing about it.
	augExec *Exec
	build   func(aug bool) func(g *Graph, in []*Node) []*Node
	b       compute.Backend
	cfg     Config
	names   []string          // every weight, initParams' order
	gidx    []int             // positions in names of the graph's weights
	state   []*tensors.Tensor // protos, protoInit, graph params..., adamM..., adamV...
	t       int
	masks   int // valid masks the step takes (trainData.masks)
	enc     *encState
}

// encState is the paper encoder's full-resolution stage when it trains on
// pnec's own kernels (kernels.FullRes) beside the graph: the graph's input is the
// stage's output F0 and the graph returns the loss's gradient with respect
// to it; FullRes.Backward turns that into the stage's weight gradients and
// Adam updates them here, with the graph's formula.
type encState struct {
	fr      *kernels.FullRes
	idx     []int // positions in the trainer's names, in fullResNames order
	w, m, v [][]float32
	f0      []float32
	l, d    int
}

// trainGraphBuilds counts the training step's graph builds, each of which
// the backend compiles (tests check that epochs do not recompile it).
var trainGraphBuilds atomic.Int64

// traceTrainGraph, when set, sees the training step's graph (diagnostics).
var traceTrainGraph func(g *Graph, outs []*Node)

// useFullRes lets Train and NewPredictor run the paper encoder's
// full-resolution stage on pnec's own kernels where they are available;
// tests turn it off to compare with the graph.
var useFullRes = true

// fullResNames are the weights of the paper encoder's full-resolution
// stage, in the order FullRes.Backward returns their gradients.
var fullResNames = [6]string{"embed.w", "embed.b", "embed.gn.g", "embed.gn.b", "conv.w", "conv.b"}

// newTrainer compiles the training step for the weights params (the
// full-resolution stage's on fr's kernels when fr is set) and holds its
// initial state.
func newTrainer(b compute.Backend, d dims, cfg Config, params paramSet, fr *kernels.FullRes) (*trainer, error) {
	tr := &trainer{cfg: cfg}
	for _, p := range params {
		tr.names = append(tr.names, p.Name)
	}
	if fr != nil {
		enc, err := newEncState(fr, d, tr.names, params)
		if err != nil {
			return nil, err
		}
		tr.enc = enc
	}
	for i := range params {
		if tr.enc == nil || !slices.Contains(tr.enc.idx, i) {
			tr.gidx = append(tr.gidx, i)
		}
	}
	n := &graphBuilder{d: d, cfg: cfg, f0Input: fr != nil, training: true}
	tr.masks = 1 // valid masks (netMasks): the stride-4 grid, and full resolution for the paper encoder in the graph
	if cfg.Encoder == EncoderPaper && fr == nil {
		tr.masks = 2
	}
	build := func(aug bool) func(g *Graph, in []*Node) []*Node { return tr.stepGraph(n, aug) }
	exec, err := NewExec(b, build(false))
	if err != nil {
		return nil, err
	}
	tr.exec = exec.WithName("pnec_train_step")
	tr.build, tr.b = build, b
	tr.state = initialTrainState(d, params, tr.gidx)
	return tr, nil
}

// newEncState holds the full-resolution stage's weights (fullResNames,
// found in names) and their Adam moments for fr.
func newEncState(fr *kernels.FullRes, d dims, names []string, params paramSet) (*encState, error) {
	cellRows, cellCols := fr.Cells()
	enc := &encState{fr: fr, l: cellRows * cellCols, d: d.D}
	enc.f0 = make([]float32, enc.l*d.D)
	for _, name := range fullResNames {
		i := slices.Index(names, name)
		if i < 0 {
			return nil, fmt.Errorf("no weight %s", name)
		}
		enc.idx = append(enc.idx, i)
		enc.w = append(enc.w, slices.Clone(params[i].Data))
		enc.m = append(enc.m, make([]float32, len(params[i].Data)))
		enc.v = append(enc.v, make([]float32, len(params[i].Data)))
	}
	return enc, nil
}

// initialTrainState is the trainer's state before the first step: an
// empty prototype bank and its init flags, the graph's weights (gidx of
// params) and zero Adam moments.
func initialTrainState(d dims, params paramSet, gidx []int) []*tensors.Tensor {
	state := []*tensors.Tensor{tensorOf(make([]float32, d.K*d.D), d.K, d.D), tensorOf(make([]float32, d.K), d.K)}
	for _, i := range gidx {
		state = append(state, tensorOf(params[i].Data, params[i].Shape...))
	}
	for range 2 {
		for _, i := range gidx {
			state = append(state, tensorOf(make([]float32, len(params[i].Data)), params[i].Shape...))
		}
	}
	return state
}

// stepGraph builds the training step's graph on n: the loss, the accuracy
// and the updated prototype bank, then Adam's update of the graph's
// weights, and, with the kernels, the loss's gradient with respect to F0.
// aug makes the step on an augmented input normalised with the clean
// input's statistics (trainer.augExec).
func (tr *trainer) stepGraph(n *graphBuilder, aug bool) func(g *Graph, in []*Node) []*Node {
	nm, np := tr.masks, len(tr.gidx)
	return func(g *Graph, in []*Node) []*Node {
		trainGraphBuilds.Add(1) // one per compilation: GoMLX builds a graph per new input shape
		if traceTrainGraph != nil {
			g.SetTraced(true)
		}
		s := splitStepInputs(in, nm, np)
		x, anchor, wtr, ytr, cellMask, calib, a1, c2 := s.x, s.anchor, s.wtr, s.ytr, s.cellMask, s.calib, s.a1, s.c2
		n.ceScale = s.ceScale
		n.setMasks(s.masks...)
		protos, protoInit := s.protos, s.protoInit
		pNodes, mNodes, vNodes := s.params, s.adamM, s.adamV
		n.p = make(map[string]*Node, np)
		for j, i := range tr.gidx {
			n.p[tr.names[i]] = pNodes[j]
		}
		n.normCalls, n.fixedNorm, n.recordNorm = nil, nil, nil
		if aug {
			n.fixNormFrom(x, protos, anchor, calib)
			x = s.xAug
		}
		loss, acc, newProtos, newInit := n.loss(x, anchor, wtr, ytr, cellMask, calib, protos, protoInit)
		n.fixedNorm, n.ceScale = nil, nil
		wrt := pNodes
		if tr.enc != nil {
			wrt = append(slices.Clone(pNodes), x) // and dLoss/dF0 for the kernels' backward pass
		}
		grads := Gradient(loss, wrt...)
		forgetBMM(g)
		out := []*Node{loss, acc, newProtos, newInit}
		var dF0 *Node
		if tr.enc != nil {
			dF0, grads = grads[np], grads[:np]
		}
		out = append(out, adamNodes(grads, pNodes, mNodes, vNodes, a1, c2)...)
		if dF0 != nil {
			out = append(out, dF0)
		}
		if traceTrainGraph != nil {
			traceTrainGraph(g, out)
		}
		return out
	}
}

// fixNormFrom runs the network on the clean input x and fixes its
// GroupNorm statistics for the next pass. The gradient flows through the
// statistics as in per-image normalisation: with constant statistics
// training failed (SalinasA OA 67-79%).
func (n *graphBuilder) fixNormFrom(x, protos, anchor, calib *Node) {
	var recs []normRecord
	n.recordNorm = &recs
	n.forward(x, func(*Node) *Node { return protos }, anchor, calib)
	n.recordNorm, n.normCalls = nil, nil
	n.fixedNorm = make(map[string][2]*Node, len(recs))
	for _, r := range recs {
		n.fixedNorm[r.key] = [2]*Node{r.mean, r.vr}
	}
}

// loss is the training objective on one full-image forward pass (see
// Train), the accuracy on the training pixels, and the updated prototype bank.
func (n *graphBuilder) loss(x, anchor, wtr, ytr, cellMask, calib, protos, protoInit *Node) (loss, acc, newProtos, newInit *Node) {
	d, cfg := n.d, n.cfg
	bank := func(f *Node) *Node {
		// The class means come from the features at the training pixels,
		// bilinearly sampled from the grid (as the reference does).
		feats := MatMul(wtr, n.stopGradient(f)) // [Ntr, D]
		newProtos, newInit = updateBank(feats, ytr, protos, protoInit, d.K, cfg.Momentum)
		return newProtos
	}
	o := n.forward(x, bank, anchor, calib)
	ce := func(z *Node) *Node {
		logp := LogSoftmax(MatMul(wtr, z), 1)
		return n.scaleCE(Neg(ReduceAllMean(ReduceSum(Mul(logp, OneHot(ytr, d.K, logp.DType())), 1))))
	}
	loss = ce(o.Zcal)
	loss = Add(loss, MulScalar(Add(ce(o.Zspa), ce(o.Zdiff)), cfg.LambdaBranch))
	lambdaProto, lambdaCon := cfg.LambdaProto, cfg.LambdaCon
	if cfg.Ablation == AblationBase {
		lambdaProto, lambdaCon = 0, 0
	}
	if lambdaProto != 0 {
		loss = Add(loss, MulScalar(ce(o.S), lambdaProto))
	}
	if lambdaCon != 0 {
		// (1 - G~)-weighted KL(P_raw || P_cal) over the valid cells; P_raw
		// is the target, so no gradient flows into it (as in the reference).
		lraw, lcal := LogSoftmax(n.stopGradient(o.Zraw), 1), LogSoftmax(o.Zcal, 1)
		kl := ReduceSum(Mul(Exp(lraw), Sub(lraw, lcal)), 1)
		w := Mul(OneMinus(n.stopGradient(o.Gtilde)), cellMask)
		lcon := Div(ReduceAllSum(Mul(w, kl)), MaxScalar(ReduceAllSum(cellMask), 1))
		loss = Add(loss, MulScalar(lcon, lambdaCon))
	}
	pred := ArgMax(MatMul(wtr, o.Zcal), 1, dtypes.Int32)
	acc = n.scaleCE(ReduceAllMean(ConvertDType(Equal(pred, ytr), loss.DType())))

	return loss, acc, newProtos, newInit
}

// scaleCE is a mean over the step's rows made a mean over its training
// pixels (graphBuilder.ceScale); unchanged without a scale.
func (n *graphBuilder) scaleCE(v *Node) *Node {
	if n.ceScale == nil {
		return v
	}
	return Mul(v, n.ceScale)
}

// updateBank is the momentum update of the prototype bank from the class
// means of the features f [N, D] of rows with a class in anchor [N] (-1:
// none): an
// uninitialised prototype (init 0) takes the normalised mean, the others
// Norm(m p + (1-m) mean); classes absent from this step keep theirs.
func updateBank(f, anchor, protos, init *Node, k int, momentum float64) (newProtos, newInit *Node) {
	hot := OneHot(anchor, k, f.DType())     // rows of -1 are all zero
	sums := MatMul(Transpose(hot, 0, 1), f) // [K, D]
	counts := ReduceSum(hot, 0)             // [K]
	mean := l2normalize(Div(sums, InsertAxes(MaxScalar(counts, 1), -1)), 1)
	mixed := l2normalize(Add(MulScalar(protos, momentum), MulScalar(mean, 1-momentum)), 1)
	zero := ScalarZero(f.Graph(), f.DType())
	dd := f.Shape().Dimensions[1]
	has := BroadcastToDims(InsertAxes(GreaterThan(counts, zero), -1), k, dd)
	wasInit := BroadcastToDims(InsertAxes(GreaterThan(init, zero), -1), k, dd)
	newProtos = Where(has, Where(wasInit, mixed, mean), protos)
	newInit = Max(init, ConvertDType(GreaterThan(counts, zero), f.DType()))
	return newProtos, newInit
}

// step runs one full-image training step and keeps the new state.
func (tr *trainer) step(td trainData, calib float32) (loss, acc float64, err error) {
	tr.t++
	bc1 := 1 - math.Pow(adamBeta1, float64(tr.t))
	bc2 := 1 - math.Pow(adamBeta2, float64(tr.t))
	a1 := float32(tr.cfg.LearningRate / bc1)
	c2 := float32(1 / math.Sqrt(bc2))
	var x any = td.x
	if e := tr.enc; e != nil {
		w := e.w
		e.fr.SetWeights(w[0], w[1], w[2], w[3], w[4], w[5])
		e.fr.Forward(nil, nil, e.f0, true)
		x = tensorOf(e.f0, e.l, e.d)
	}
	scale := td.ceScale
	if scale == 0 {
		scale = 1
	}
	args := []any{x, td.anchor, td.wtr, td.ytr, td.cellMask, calib, a1, c2, scale} // stepInputs' order
	if len(td.masks) != tr.masks {
		return 0, 0, fmt.Errorf("training data has %d valid masks, the step takes %d", len(td.masks), tr.masks)
	}
	for _, t := range td.masks {
		args = append(args, t)
	}
	for _, t := range tr.state {
		args = append(args, t)
	}
	exec := tr.exec
	if td.xAug != nil {
		if tr.augExec == nil {
			e, err := NewExec(tr.b, tr.build(true))
			if err != nil {
				return 0, 0, err
			}
			tr.augExec = e.WithName("pnec_train_step_augmented")
		}
		exec = tr.augExec
		args = append(args, td.xAug)
	}
	out, err := exec.Call(args...)
	if err != nil {
		return 0, 0, err
	}
	lossV, err := tensors.CopyFlatData[float32](out[0])
	if err != nil {
		return 0, 0, err
	}
	accV, err := tensors.CopyFlatData[float32](out[1])
	if err != nil {
		return 0, 0, err
	}
	out[0].FinalizeAll()
	out[1].FinalizeAll()
	for _, t := range tr.state {
		t.FinalizeAll()
	}
	if e := tr.enc; e != nil {
		last := out[len(out)-1]
		dF0, err := tensors.CopyFlatData[float32](last)
		last.FinalizeAll()
		out = out[:len(out)-1]
		if err != nil {
			return 0, 0, err
		}
		dwe, dbe, dg, db, dwc, dbc := e.fr.Backward(dF0)
		for k, g := range [][]float32{dwe, dbe, dg, db, dwc, dbc} {
			adamStep(e.w[k], e.m[k], e.v[k], g, a1, c2)
		}
	}
	tr.state = out[2:]
	return float64(lossV[0]), float64(accV[0]), nil
}

// weights copies the trained parameters and the prototype bank out of the state.
func (tr *trainer) weights() (paramSet, []float32, error) {
	protos, err := tensors.CopyFlatData[float32](tr.state[stateProtos])
	if err != nil {
		return nil, nil, err
	}
	ps := make(paramSet, len(tr.names))
	for j, i := range tr.gidx {
		t := tr.state[stateParams+j]
		data, err := tensors.CopyFlatData[float32](t)
		if err != nil {
			return nil, nil, err
		}
		ps[i] = param{Name: tr.names[i], Shape: t.Shape().Dimensions, Data: data}
	}
	if e := tr.enc; e != nil {
		d, bands := e.d, len(e.w[0])/e.d
		shapes := [][]int{{bands, d}, {d}, {d}, {d}, {9 * d, d}, {d}}
		for k, i := range e.idx {
			ps[i] = param{Name: tr.names[i], Shape: shapes[k], Data: slices.Clone(e.w[k])}
		}
	}
	return ps, protos, nil
}

func (tr *trainer) finalize() {
	for _, t := range tr.state {
		t.FinalizeAll()
	}
	tr.state = nil
	if tr.exec != nil {
		tr.exec.Finalize()
		tr.exec = nil
	}
	if tr.augExec != nil {
		tr.augExec.Finalize()
		tr.augExec = nil
	}
}
