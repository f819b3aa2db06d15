package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/pnec/pnec/model/backend"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/pnec/pnec/tiling"

	"github.com/pnec/pnec/model/internal/kernels"
)

// CallShape is one network input shape a run calls the network on. Recovered
// says the call recovers a whole scene (PredictRecovered: its own compiled
// graph where the backend recovers in the graph, Backend.PrepInGraph),
// else it is a tile's (Predict).
type CallShape struct {
	Rows, Cols int
	Recovered  bool
}

func (s CallShape) String() string {
	if s.Recovered {
		return fmt.Sprintf("%dx%d (whole scenes)", s.Rows, s.Cols)
	}
	return fmt.Sprintf("%dx%d (tiles)", s.Rows, s.Cols)
}

// Predictor runs a model on one backend; compiled executables are reused
// for scenes of the same shape (GoMLX's Exec caches one per input shape).
type Predictor struct {
	m       *Model
	backend compute.Backend
	desc    backend.Backend
	exec    *Exec
	weights []*tensors.Tensor // prototype bank then params, as graph inputs
	// fullRes, when set, runs the paper encoder's full-resolution stage on
	// pnec's own kernels (model/internal/kernels) and the graph starts at its
	// output; frStats are the stored embedding GroupNorm statistics it uses
	// (nil: the scene's own).
	fullRes       *kernels.FullRes
	frMean, frVar []float64
	// mem is the device's memory (zero when the network runs in host
	// memory or the device's is unknown); marked the shapes compiled
	// through the compile cache.
	mem    backend.DeviceMemory
	marked map[[2]int]bool
	// prep runs the input preparation in the graph (prepgraph.go):
	// exec takes the raw scene, execRec also recovers; stretch are the
	// model's per-band lo and 1/(hi-lo).
	prep    bool
	execRec *Exec
	stretch []*tensors.Tensor
	// slots bounds the calls whose inputs are on the device at once
	// (SetDeviceTiles): a call takes a slot before it stages its inputs
	// and gives it back once its buffers are released.
	slots chan struct{}
	smu   sync.Mutex // guards slots, and backend for stagePrep
	mu    sync.Mutex
}

// NewPredictor prepares m on backend (see backend.Decide; "" = the default
// for a job of unknown size).
func NewPredictor(m *Model, backend string) (*Predictor, error) {
	return NewPredictorPrep(m, backend, PrepAuto)
}

// Prep says where a predictor prepares the network's input (normalisation,
// masks, interpolation) and recovers a whole scene.
type Prep int

const (
	// PrepAuto is the backend's choice (Backend.PrepInGraph): in the
	// compiled graph on XLA, on the host on the Go backend.
	PrepAuto Prep = iota
	// PrepHost prepares on the host on every backend.
	PrepHost
	// PrepGraph prepares in the compiled graph on every backend: on the
	// Go backend it runs the graphs XLA runs, to check them (and what is
	// built on them) on a machine without an accelerator.
	PrepGraph
)

// NewPredictorPrep is NewPredictor with the input preparation placed by
// prep. The maps of both placements agree (TestPredictInGraphMatchesHost).
func NewPredictorPrep(m *Model, backend string, prep Prep) (*Predictor, error) {
	switch prep {
	case PrepHost:
		return newPredictor(m, backend, true, false, true)
	case PrepGraph:
		return newPredictor(m, backend, true, true, false)
	}
	return newPredictor(m, backend, true, prepInGraph, prepOnHost)
}

// prepInGraph forces the in-graph input preparation (prepgraph.go) on
// every backend, prepOnHost the host's; tests and benchmarks set them to
// compare the two on one backend.
var prepInGraph, prepOnHost = false, false

// newPredictor is NewPredictor; fused allows the fused inference layers
// (graphBuilder.fused) where the backend has them (tests compare with them off);
// inGraph and onHost force the input preparation's place (Prep).
func newPredictor(m *Model, name string, fused, inGraph, onHost bool) (*Predictor, error) {
	if m == nil {
		return nil, fmt.Errorf("new predictor: nil model")
	}
	d, err := makeDims(m.meta.Config, m.meta.Bands, len(m.meta.Classes))
	if err != nil {
		return nil, fmt.Errorf("new predictor: %w", err)
	}
	b, desc, err := backend.OpenName(name)
	if err != nil {
		return nil, err
	}
	p := &Predictor{m: m, backend: b, desc: desc, marked: map[[2]int]bool{}, prep: !onHost && (inGraph || desc.PrepInGraph()),
		slots: make(chan struct{}, 1)}
	if mem, err := desc.DeviceMemory(); err == nil {
		p.mem = mem
	}
	// The fused layers are Go-backend kernels (see graphBuilder.fused).
	n := &graphBuilder{d: d, cfg: m.meta.Config, fused: fused && desc.Kind == backend.Go}
	n.f0Input = useFullRes && n.fused && fullResInput(m.meta.Config) && !p.prep
	ig := &inferGraph{m: m, n: n, stats: m.meta.GroupNormStats}
	for _, prm := range m.params {
		ig.names = append(ig.names, prm.Name)
	}
	if n.f0Input {
		ig.stats = p.takeEmbedStats(d)
	}
	ig.spec = m.inputSpec()
	if err := p.compile(b, ig); err != nil {
		b.Finalize()
		return nil, fmt.Errorf("new predictor: %w", err)
	}
	p.setWeights(d, ig.stats)
	return p, nil
}

// takeEmbedStats sets up the kernels of the full-resolution stage (the
// model's embedding) with the embedding's GroupNorm statistics, and
// returns the other statistics, which go to the graph.
func (p *Predictor) takeEmbedStats(d dims) []normStat {
	m := p.m
	p.fullRes = newFullResWeights(d, m.params, runtime.GOMAXPROCS(0))
	var stats []normStat
	for _, st := range m.meta.GroupNormStats {
		if st.Key == "embed.gn" {
			p.frMean, p.frVar = float64s(st.Mean), float64s(st.Var)
			continue
		}
		stats = append(stats, st)
	}
	return stats
}

// compile compiles the predictor's graphs of ig on b: the network, and
// with the in-graph input preparation the recovered variant beside it.
func (p *Predictor) compile(b compute.Backend, ig *inferGraph) error {
	fn := ig.plain()
	if p.prep {
		fn = ig.prepared(false)
		rec, err := NewExec(b, ig.prepared(true))
		if err != nil {
			return err
		}
		p.execRec = rec.WithName("pnec_predict_recovered").SetMaxCache(-1)
		p.stretch = []*tensors.Tensor{tensorOf(ig.spec.lo, len(ig.spec.lo)), tensorOf(ig.spec.scale, len(ig.spec.scale))}
	}
	exec, err := NewExec(b, fn)
	if err != nil {
		return err
	}
	// One executable per input shape, kept for the predictor's life: the
	// planner's ladder bounds the shapes of the model's grid (36; a scene
	// of another size reuses one), while GoMLX's default of 32 per Exec
	// failed the 33rd shape a long batch or a precompile met. Shapes
	// outside the grid (forced tiles, library calls) add one each.
	p.exec = exec.WithName("pnec_predict").SetMaxCache(-1)
	return nil
}

// setWeights holds the graph's weight inputs: the prototype bank, the
// parameters and the GroupNorm statistics stats, in inferGraph's order.
func (p *Predictor) setWeights(d dims, stats []normStat) {
	m := p.m
	p.weights = append(p.weights, tensorOf(m.protos, d.K, d.D))
	for _, prm := range m.params {
		p.weights = append(p.weights, tensorOf(prm.Data, prm.Shape...))
	}
	for _, st := range stats {
		p.weights = append(p.weights, tensorOf(st.Mean, len(st.Mean)), tensorOf(st.Var, len(st.Var)))
	}
}

// inferGraph builds the predictor's graphs of m on n: names are the
// parameters' names and stats the GroupNorm statistics the graph takes as
// inputs; spec prepares the input in the graph.
type inferGraph struct {
	m     *Model
	n     *graphBuilder
	names []string
	stats []normStat
	spec  inputSpec
}

// network runs the network on its input x and masks; in holds the
// prototype bank, the parameters and the statistics, in p.weights' order.
func (ig *inferGraph) network(g *Graph, x, ur, uc *Node, in, masks []*Node) (prob, gt, cos *Node) {
	n, names, stats := ig.n, ig.names, ig.stats
	protos := in[0]
	n.p = make(map[string]*Node, len(names))
	for i, name := range names {
		n.p[name] = in[1+i]
	}
	n.normCalls, n.fixedNorm = nil, nil
	if len(stats) > 0 {
		// Inference mode: every GroupNorm uses the statistics stored at
		// training, so the result does not depend on the scene's extent.
		n.fixedNorm = make(map[string][2]*Node, len(stats))
		base := 1 + len(names)
		for j, st := range stats {
			n.fixedNorm[st.Key] = [2]*Node{in[base+2*j], in[base+2*j+1]}
		}
	}
	n.setMasks(masks...)
	o := ig.m.inferForward(n, x, protos)
	forgetBMM(g)
	prob = Softmax(upsample(o.Zcal, ur, uc), -1)
	gt = upsample(InsertAxes(o.Gtilde, -1), ur, uc)
	// The cells' prototype cosines: the drift's feature-space figures.
	return prob, Reshape(gt, gt.Shape().Dimensions[0], gt.Shape().Dimensions[1]), o.Cos
}

// plain is the graph on the prepared input: x, the upsampling matrices,
// the weights, then the masks.
func (ig *inferGraph) plain() func(g *Graph, in []*Node) []*Node {
	nw := 1 + len(ig.names) + 2*len(ig.stats)
	return func(g *Graph, in []*Node) []*Node {
		prob, gt, cos := ig.network(g, in[0], in[1], in[2], in[3:3+nw], in[3+nw:])
		return []*Node{prob, gt, cos}
	}
}

// prepared is the in-graph variant: it takes the raw scene, its valid
// mask and the stretch (lo, scale) before the weights; with recovery it
// returns the recovered probabilities.
func (ig *inferGraph) prepared(recover bool) func(g *Graph, in []*Node) []*Node {
	return func(g *Graph, in []*Node) []*Node {
		cfg := ig.m.meta.Config
		raw, valid := in[0], in[1]
		x, masks := prepNodes(raw, valid, in[2], in[3], ig.spec, cfg.Encoder)
		rows, cols := raw.Shape().Dimensions[0], raw.Shape().Dimensions[1]
		hs, ws := lowRes(rows, cfg.Encoder), lowRes(cols, cfg.Encoder)
		prob, gt, cos := ig.network(g, x, upMatrixNode(g, rows, hs), upMatrixNode(g, cols, ws), in[4:], masks)
		if recover {
			rp := ig.m.NetworkRecovery()
			prob = recoverNode(prob, ConvertDType(valid, prob.DType()), rp.Window, rp.Eta)
		}
		return []*Node{prob, gt, cos}
	}
}

// inferForward is the inference forward pass: no anchor classes, and
// calibration on except for the variants trained without it.
func (m *Model) inferForward(n *graphBuilder, x, protos *Node) forwardOutputs {
	g := x.Graph()
	enc := m.meta.Config.Encoder
	var l int
	switch {
	case n.f0Input:
		l = x.Shape().Dimensions[0] // F0 [L, D]
	case enc == EncoderPaper:
		l = lowRes(x.Shape().Dimensions[0], enc) * lowRes(x.Shape().Dimensions[1], enc)
	default:
		l = x.Shape().Dimensions[0] * x.Shape().Dimensions[1] // the cell encoder's input is the grid
	}
	anchor := AddScalar(Const(g, tensorOf(make([]int32, l), l)), -1)
	calib := 1.0
	if ab := m.meta.Config.Ablation; ab == AblationBase || ab == AblationNoEC {
		calib = 0
	}
	return n.forward(x, func(*Node) *Node { return protos }, anchor, Scalar(g, x.DType(), calib))
}

// groupNormStats runs the inference pass of m once on its training scene s
// with per-image statistics and returns each GroupNorm call's per-group
// mean and variance, for the inference mode (like BatchNorm's running
// statistics, but from the one training scene the paper trains on). With
// them, Predict on s gives what the per-image network gives, and any tile
// or other scene is normalised the same way. fr, when not nil, is the
// paper encoder's full-resolution stage on pnec's kernels (set up for s):
// it gives the embedding's statistics and the graph's input. A model that
// trained on tiles (trainedGrid) takes them over the grid's tiles
// (tiledNormStats).
func groupNormStats(b compute.Backend, m *Model, s Scene, fr *kernels.FullRes) ([]normStat, error) {
	ne, err := newNormExec(b, m, fr)
	if err != nil {
		return nil, err
	}
	defer ne.exec.Finalize()
	plan, err := m.trainedGrid()
	if err != nil {
		return nil, err
	}
	if !plan.Whole {
		return ne.tiled(s, plan)
	}
	return ne.of(s)
}

// of is the statistics of one pass on s (with the kernels: set up for s).
func (ne *normExec) of(s Scene) ([]normStat, error) {
	m, fr := ne.m, ne.fr
	var x *tensors.Tensor
	var first []normStat
	masks := netMasks(s, m.meta.Config.Encoder)
	if fr != nil {
		w := map[string][]float32{}
		for _, p := range m.params {
			w[p.Name] = p.Data
		}
		fr.SetWeights(w["embed.w"], w["embed.b"], w["embed.gn.g"], w["embed.gn.b"], w["conv.w"], w["conv.b"])
		cellRows, cellCols := fr.Cells()
		f0 := make([]float32, cellRows*cellCols*ne.d.D)
		mean, vr := fr.Forward(nil, nil, f0, false)
		st := normStat{Key: "embed.gn", Mean: make([]float32, ne.d.Groups), Var: make([]float32, ne.d.Groups)}
		for g := range st.Mean {
			st.Mean[g], st.Var[g] = float32(mean[g]), float32(vr[g])
		}
		first = append(first, st)
		x = tensorOf(f0, cellRows*cellCols, ne.d.D)
		masks = masks[len(masks)-1:]
	} else {
		xv, xdims := netInput(s, m.inputSpec(), m.meta.Config.Encoder)
		x = tensorOf(xv, xdims...)
	}
	stats, err := ne.call(x, masks)
	if err != nil {
		return nil, err
	}
	return append(first, stats...), nil
}

// normExec is the compiled pass of groupNormStats.
type normExec struct {
	m    *Model
	d    dims
	fr   *kernels.FullRes // the full-resolution stage's kernels, or nil
	exec *Exec
	keys []string // the GroupNorm calls' keys, in the graph's output order
}

func newNormExec(b compute.Backend, m *Model, fr *kernels.FullRes) (*normExec, error) {
	d, err := makeDims(m.meta.Config, m.meta.Bands, len(m.meta.Classes))
	if err != nil {
		return nil, err
	}
	ne := &normExec{m: m, d: d, fr: fr}
	n := &graphBuilder{d: d, cfg: m.meta.Config, f0Input: fr != nil}
	fn := func(g *Graph, in []*Node) []*Node {
		x, protos := in[0], in[1]
		n.p = make(map[string]*Node, len(m.params))
		for i, prm := range m.params {
			n.p[prm.Name] = in[2+i]
		}
		n.setMasks(in[2+len(m.params):]...)
		var recs []normRecord
		n.recordNorm, n.normCalls, n.fixedNorm = &recs, nil, nil
		o := m.inferForward(n, x, protos)
		forgetBMM(g)
		ne.keys = ne.keys[:0]
		// The logits keep the whole pass in the graph.
		out := []*Node{ReduceAllSum(o.Zcal)}
		for _, r := range recs {
			ne.keys = append(ne.keys, r.key)
			out = append(out, r.mean, r.vr)
		}
		return out
	}
	if ne.exec, err = NewExec(b, fn); err != nil {
		return nil, err
	}
	return ne, nil
}

// call runs the pass on input x (taken: released here) with the valid
// masks and returns the statistics of its GroupNorm calls.
func (ne *normExec) call(x *tensors.Tensor, masks [][]float32) ([]normStat, error) {
	m, d := ne.m, ne.d
	var own callTensors
	defer own.release()
	args := []any{own.add(x), own.add(tensorOf(m.protos, d.K, d.D))}
	for _, prm := range m.params {
		args = append(args, own.add(tensorOf(prm.Data, prm.Shape...)))
	}
	for _, mk := range masks {
		args = append(args, own.add(tensorOf(mk, len(mk))))
	}
	out, err := ne.exec.Call(args...)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, t := range out {
			t.FinalizeAll()
		}
	}()
	var stats []normStat
	for j, k := range ne.keys {
		st := normStat{Key: k}
		if st.Mean, err = tensors.CopyFlatData[float32](out[1+2*j]); err != nil {
			return nil, err
		}
		if st.Var, err = tensors.CopyFlatData[float32](out[2+2*j]); err != nil {
			return nil, err
		}
		stats = append(stats, st)
	}
	return stats, nil
}

// tiled is the statistics pooled over the tiles of plan on s: each
// group's mean and variance over the union of the tiles' valid pixels,
// each tile weighing by its valid pixels (the variance from the tiles'
// second moments). Later layers' statistics are those of tiles normalised
// on their own, as the training steps normalised them.
func (ne *normExec) tiled(s Scene, plan tiling.Plan) ([]normStat, error) {
	var out []normStat
	var mom1, mom2 [][]float64 // per call, per group: weighted first and second moments
	weight := 0.0
	for i := range plan.NumTiles() {
		ts := tileScene(s, plan.Tile(i))
		w := 0.0
		for _, v := range ts.Valid {
			if v {
				w++
			}
		}
		if w == 0 {
			continue
		}
		if ne.fr != nil {
			setFullResScene(ne.fr, ts, ne.m.inputSpec())
		}
		stats, err := ne.of(ts)
		if err != nil {
			return nil, fmt.Errorf("tile %d: %w", i, err)
		}
		if out == nil {
			out = stats
			mom1, mom2 = make([][]float64, len(stats)), make([][]float64, len(stats))
			for j, st := range stats {
				mom1[j], mom2[j] = make([]float64, len(st.Mean)), make([]float64, len(st.Mean))
			}
		}
		for j, st := range stats {
			for g, mu := range st.Mean {
				mom1[j][g] += w * float64(mu)
				mom2[j][g] += w * (float64(st.Var[g]) + float64(mu)*float64(mu))
			}
		}
		weight += w
	}
	if weight == 0 {
		return nil, errors.New("no valid pixel")
	}
	for j := range out {
		for g := range out[j].Mean {
			mu := mom1[j][g] / weight
			out[j].Mean[g] = float32(mu)
			out[j].Var[g] = float32(max(mom2[j][g]/weight-mu*mu, 0))
		}
	}
	return out, nil
}

// upsample maps z [Hs*Ws, C] on the stride-4 grid to [Rows, Cols, C] with
// the separable bilinear matrices ur [Rows, Hs] and uc [Cols, Ws] (two
// matmuls; GoMLX's Interpolate has a wrong gradient and is slower).
func upsample(z, ur, uc *Node) *Node {
	hs, ws := ur.Shape().Dimensions[1], uc.Shape().Dimensions[1]
	c := z.Shape().Dimensions[1]
	t := Einsum("rh,hwc->rwc", ur, Reshape(z, hs, ws, c))
	return Einsum("sw,rwc->rsc", uc, t)
}

// predictPadded predicts s, smaller than a stride in a dimension, as the
// top-left part of a scene of at least Stride x Stride whose other pixels
// are no-data (which the network leaves out of every statistic, as a
// scene's own no-data).
func (p *Predictor) predictPadded(ctx context.Context, s Scene, recovered bool) (Prediction, error) {
	rows, cols := max(s.Rows, Stride), max(s.Cols, Stride)
	ps := s
	ps.Rows, ps.Cols = rows, cols
	ps.Data = make([]float32, rows*cols*s.Bands)
	ps.Valid = make([]bool, rows*cols)
	for r := range s.Rows {
		copy(ps.Data[r*cols*s.Bands:], s.Data[r*s.Cols*s.Bands:(r+1)*s.Cols*s.Bands])
		for c := range s.Cols {
			ps.Valid[r*cols+c] = s.valid(r*s.Cols + c)
		}
	}
	pp, err := p.predict(ctx, ps, recovered)
	if err != nil {
		return Prediction{}, err
	}
	k := pp.Classes
	pred := Prediction{Rows: s.Rows, Cols: s.Cols, Classes: k, Recovered: pp.Recovered,
		Prob: make([]float32, s.Rows*s.Cols*k), Uncertainty: make([]float32, s.Rows*s.Cols),
		CellRows: pp.CellRows, CellCols: pp.CellCols, PrototypeCos: pp.PrototypeCos}
	for r := range s.Rows {
		copy(pred.Prob[r*s.Cols*k:(r+1)*s.Cols*k], pp.Prob[r*cols*k:])
		copy(pred.Uncertainty[r*s.Cols:(r+1)*s.Cols], pp.Uncertainty[r*cols:])
	}
	return pred, nil
}

// Backend names the backend in use ("go", "xla:cuda", ...).
func (p *Predictor) Backend() string { return p.desc.Label() }

// Describe is the backend in use, described (kind, plugin, why chosen).
func (p *Predictor) Describe() backend.Backend { return p.desc }

// Predict runs the network on s: P_up and G~ (before recovery).
func (p *Predictor) Predict(ctx context.Context, s Scene) (Prediction, error) {
	return p.predict(ctx, s, false)
}

// PredictRecovered runs the network on s as a whole scene and applies the
// model's AvgPool recovery (tiling.Recover over s's valid pixels): in the
// compiled graph on XLA backends (Backend.PrepInGraph), on the host
// otherwise. Prediction.Recovered is set. A tile must not be recovered
// alone (its neighbours' pixels are part of its border's windows): tiled
// runs stitch P_up first and recover the canvas.
func (p *Predictor) PredictRecovered(ctx context.Context, s Scene) (Prediction, error) {
	return p.predict(ctx, s, true)
}

func (p *Predictor) predict(ctx context.Context, s Scene, recovered bool) (pred Prediction, err error) {
	if err := ctx.Err(); err != nil {
		return Prediction{}, err
	}
	if err := p.m.sceneCheck(s); err != nil {
		return Prediction{}, fmt.Errorf("predict: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("predict %dx%d on %s: %v", s.Rows, s.Cols, p.Backend(), r)
		}
	}()
	enc := p.m.meta.Config.Encoder
	if enc == EncoderPaper && (s.Rows < Stride || s.Cols < Stride) {
		// The paper's floor grid has no cell below one stride: the scene
		// padded with no-data pixels to a stride, then its own pixels.
		return p.predictPadded(ctx, s, recovered)
	}
	if need := p.m.DeviceNeedBytes(s.Rows, s.Cols); p.mem.LimitBytes > 0 && need > p.mem.LimitBytes {
		return Prediction{}, fmt.Errorf("predict %dx%d on %s: %w: needs about %d MiB, the allocator may take %d MiB of the %s's %d MiB",
			s.Rows, s.Cols, p.Backend(), ErrDeviceMemory, need>>20, p.mem.LimitBytes>>20, p.mem.Device, p.mem.TotalBytes>>20)
	}
	// The call holds one of the device's tiles (SetDeviceTiles) from its
	// upload until its buffers are freed; with two, its scene is staged
	// (converted and uploaded) while another call runs the network.
	release, err := p.takeSlot(ctx)
	if err != nil {
		return Prediction{}, err
	}
	defer release()
	var own callTensors
	var staged []any
	if p.prep {
		if staged, err = p.stagePrep(s, &own); err != nil {
			own.release()
			return Prediction{}, fmt.Errorf("predict %dx%d on %s: upload: %w", s.Rows, s.Cols, p.Backend(), err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer own.release()
	if p.exec == nil {
		return Prediction{}, fmt.Errorf("predict %dx%d on %s: the predictor is closed", s.Rows, s.Cols, p.Backend())
	}
	var out []*tensors.Tensor
	if p.prep {
		out, err = p.callPrep(staged, recovered)
	} else {
		out, err = p.callHost(s, &own)
	}
	if err != nil {
		return Prediction{}, fmt.Errorf("predict %dx%d on %s: %w", s.Rows, s.Cols, p.Backend(), err)
	}
	defer func() {
		for _, t := range out {
			t.FinalizeAll()
		}
	}()
	if shape := [2]int{s.Rows, s.Cols}; !p.marked[shape] && p.desc.OnDevice() {
		p.desc.GraphMark(p.m.graphKey(s.Rows, s.Cols))
		p.marked[shape] = true
	}
	pred = Prediction{Rows: s.Rows, Cols: s.Cols, Classes: len(p.m.meta.Classes)}
	if pred.Prob, err = tensors.CopyFlatData[float32](out[0]); err != nil {
		return Prediction{}, fmt.Errorf("predict: read probabilities: %w", err)
	}
	if pred.Uncertainty, err = tensors.CopyFlatData[float32](out[1]); err != nil {
		return Prediction{}, fmt.Errorf("predict: read uncertainty: %w", err)
	}
	if pred.PrototypeCos, err = tensors.CopyFlatData[float32](out[2]); err != nil {
		return Prediction{}, fmt.Errorf("predict: read prototype cosines: %w", err)
	}
	pred.CellRows, pred.CellCols = lowRes(s.Rows, enc), lowRes(s.Cols, enc)
	// Cells without a valid pixel have no features to judge: NaN, which the
	// drift's figures skip.
	masks := netMasks(s, enc)
	cellMask, k, nan := masks[len(masks)-1], pred.Classes, float32(math.NaN())
	for c, v := range cellMask {
		if v == 0 {
			for j := range k {
				pred.PrototypeCos[c*k+j] = nan
			}
		}
	}
	if recovered && !p.prep {
		pred.Prob = tiling.Recover(pred.Prob, s.Valid, s.Rows, s.Cols, pred.Classes, p.m.NetworkRecovery())
	}
	pred.Recovered = recovered
	return pred, nil
}

// stagePrep makes the in-graph variant's inputs of s, the raw scene and
// its valid mask (rawTensor), and moves them to the backend's device
// (their host copies freed), outside p.mu: what a call holds of its device
// tile before the network is free.
func (p *Predictor) stagePrep(s Scene, own *callTensors) ([]any, error) {
	raw, valid := rawTensor(s)
	own.add(raw)
	own.add(valid)
	p.smu.Lock()
	b := p.backend
	p.smu.Unlock()
	if b == nil {
		return nil, errors.New("the predictor is closed")
	}
	for _, t := range []*tensors.Tensor{raw, valid} {
		if err := t.ToDevice(b, 0); err != nil {
			return nil, err
		}
	}
	return []any{raw, valid}, nil
}

// callPrep runs the in-graph variant on the staged raw scene and valid
// mask (stagePrep): everything else happens on the device.
func (p *Predictor) callPrep(staged []any, recovered bool) ([]*tensors.Tensor, error) {
	args := append(staged, p.stretch[0], p.stretch[1])
	for _, w := range p.weights {
		args = append(args, w)
	}
	if recovered {
		return p.execRec.Call(args...)
	}
	return p.exec.Call(args...)
}

// takeSlot waits for one of the device tiles (SetDeviceTiles) and returns
// the function that gives it back.
func (p *Predictor) takeSlot(ctx context.Context) (func(), error) {
	p.smu.Lock()
	slots := p.slots
	p.smu.Unlock()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SetDeviceTiles is how many calls' buffers the device holds at once, as
// the planner decided from backend.DeviceMemory (tiling.Flight.Device): with 2 a
// call's scene is converted and uploaded while another call runs the
// network (the classifier then runs two tiles' calls at once), with 1 (or
// less) a call starts only once the previous one's buffers are freed.
// The network itself runs one call at a time either way.
func (p *Predictor) SetDeviceTiles(n int) {
	p.smu.Lock()
	defer p.smu.Unlock()
	if n = min(max(n, 1), tiling.MaxInFlight); n != cap(p.slots) {
		p.slots = make(chan struct{}, n) // calls holding the old slots give them back there
	}
}

// DeviceTiles is the calls whose buffers the device holds at once
// (SetDeviceTiles).
func (p *Predictor) DeviceTiles() int {
	p.smu.Lock()
	defer p.smu.Unlock()
	return cap(p.slots)
}

// PrepInGraph reports whether p prepares its input and recovers a whole
// scene in the compiled graph (Prep).
func (p *Predictor) PrepInGraph() bool { return p.prep }

// DeviceMemory is what the planner knows of p's device for one call on a
// rows x cols input (tiling.DeviceMemory): the allocator's limit
// (backend.DeviceMemory.LimitBytes: the card's memory from nvidia-smi times the
// memory fraction), what is held there whatever the input
// (Model.DeviceResidentBytes: the weights and the allocator's and cuDNN's
// workspaces) as InUseBytes, and the rest of Model.DeviceNeedBytes as
// TileBytes, so that InUseBytes + TileBytes is the need Predict checks and
// a second tile in flight counts the weights once. Without an accelerator,
// or where the device's memory is unknown (a card other than NVIDIA's, no
// nvidia-smi), it is the zero value: the host budget alone plans the run
// and Predict checks nothing, as before the device was known.
func (p *Predictor) DeviceMemory(rows, cols int) (tiling.DeviceMemory, error) {
	if p.mem.LimitBytes <= 0 {
		return tiling.DeviceMemory{}, nil
	}
	resident := p.m.DeviceResidentBytes()
	return tiling.DeviceMemory{
		Device:     fmt.Sprintf("%s device %d (%s)", p.Backend(), p.desc.Device, p.mem.Device),
		LimitBytes: p.mem.LimitBytes, InUseBytes: resident,
		TileBytes: p.m.DeviceNeedBytes(rows, cols) - resident,
	}, nil
}

// callHost runs the network on s prepared on the host (netInput, netMasks,
// upMatrix; the paper encoder's full-resolution stage on pnec's kernels
// where they run).
func (p *Predictor) callHost(s Scene, own *callTensors) ([]*tensors.Tensor, error) {
	enc := p.m.meta.Config.Encoder
	hs, ws := lowRes(s.Rows, enc), lowRes(s.Cols, enc)
	masks := netMasks(s, enc)
	var in *tensors.Tensor
	if p.fullRes != nil {
		// The full-resolution stage on pnec's kernels; the graph takes F0
		// and the low-resolution mask only.
		f0 := make([]float32, hs*ws*p.m.meta.Config.Hidden)
		setFullResScene(p.fullRes, s, p.m.inputSpec())
		p.fullRes.Forward(p.frMean, p.frVar, f0, false)
		p.fullRes.Release()
		in = own.add(tensorOf(f0, hs*ws, p.m.meta.Config.Hidden))
		masks = masks[1:]
	} else {
		x, xdims := netInput(s, p.m.inputSpec(), enc)
		in = own.add(tensorOf(x, xdims...))
	}
	args := []any{
		in,
		own.add(tensorOf(upMatrix(s.Rows, hs), s.Rows, hs)),
		own.add(tensorOf(upMatrix(s.Cols, ws), s.Cols, ws)),
	}
	for _, w := range p.weights {
		args = append(args, w)
	}
	for _, mk := range masks {
		args = append(args, own.add(tensorOf(mk, len(mk))))
	}
	return p.exec.Call(args...)
}

// Close releases the backend.
func (p *Predictor) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exec != nil {
		p.exec.Finalize()
		p.exec = nil
	}
	if p.execRec != nil {
		p.execRec.Finalize()
		p.execRec = nil
	}
	for _, w := range append(p.weights, p.stretch...) {
		w.FinalizeAll()
	}
	p.weights = nil
	if p.backend != nil {
		p.backend.Finalize()
		p.smu.Lock()
		p.backend = nil
		p.smu.Unlock()
	}
	// The kernels compiled here serve the next processes; a cache that
	// cannot be written only costs a later run time.
	_ = backend.PublishCompileCache()
	return nil
}
