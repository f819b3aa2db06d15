package model

import (
	"context"
	"fmt"
	"sync"

	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
)

// Predictor runs a model on one backend; compiled executables are reused
// for scenes of the same shape (GoMLX's Exec caches one per input shape).
type Predictor struct {
	m       *Model
	backend compute.Backend
	config  string
	exec    *Exec
	weights []*tensors.Tensor // prototype bank then params, as graph inputs
	mu      sync.Mutex
}

// NewPredictor prepares m on backend ("" = default: GOMLX_BACKEND, else XLA
// when a PJRT plugin is installed, else "go").
func NewPredictor(m *Model, backend string) (*Predictor, error) {
	if m == nil {
		return nil, fmt.Errorf("new predictor: nil model")
	}
	d, err := makeDims(m.meta.Config, m.meta.Bands, len(m.meta.Classes))
	if err != nil {
		return nil, fmt.Errorf("new predictor: %w", err)
	}
	b, config, err := openBackend(backend)
	if err != nil {
		return nil, err
	}
	p := &Predictor{m: m, backend: b, config: config}
	n := &net{d: d, cfg: m.meta.Config}
	names := make([]string, len(m.params))
	for i, prm := range m.params {
		names[i] = prm.Name
	}
	fn := func(g *Graph, in []*Node) []*Node {
		x, ur, uc, protos := in[0], in[1], in[2], in[3]
		n.p = make(map[string]*Node, len(names))
		for i, name := range names {
			n.p[name] = in[4+i]
		}
		l := x.Shape().Dimensions[0] * x.Shape().Dimensions[1]
		anchor := Const(g, tensorOf(make([]int32, l), l))
		anchor = AddScalar(anchor, -1)
		// Calibration is on except for the variants trained without it.
		calib := 1.0
		if ab := m.meta.Config.Ablation; ab == AblationBase || ab == AblationNoEC {
			calib = 0
		}
		o := n.forward(x, func(*Node) *Node { return protos }, anchor, Scalar(g, x.DType(), calib))
		forgetBMM(g)
		prob := Softmax(upsample(o.Zcal, ur, uc), -1)
		gt := upsample(InsertAxes(o.Gtilde, -1), ur, uc)
		return []*Node{prob, Reshape(gt, gt.Shape().Dimensions[0], gt.Shape().Dimensions[1])}
	}
	exec, err := NewExec(b, fn)
	if err != nil {
		b.Finalize()
		return nil, fmt.Errorf("new predictor: %w", err)
	}
	p.exec = exec.WithName("pnec_predict")
	p.weights = append(p.weights, tensorOf(m.protos, d.K, d.D))
	for _, prm := range m.params {
		p.weights = append(p.weights, tensorOf(prm.Data, prm.Shape...))
	}
	return p, nil
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

// Backend names the backend in use ("go", "xla:cuda", ...).
func (p *Predictor) Backend() string { return backendLabel(p.config) }

// Predict runs the network on s.
func (p *Predictor) Predict(ctx context.Context, s Scene) (pred Prediction, err error) {
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
	p.mu.Lock()
	defer p.mu.Unlock()
	x := cellMeans(s, p.m.meta.StretchLo, p.m.meta.StretchHi)
	hp, wp := padTo(s.Rows), padTo(s.Cols)
	args := []any{
		tensorOf(x, hp/Stride, wp/Stride, s.Bands),
		tensorOf(upMatrix(s.Rows), s.Rows, hp/Stride),
		tensorOf(upMatrix(s.Cols), s.Cols, wp/Stride),
	}
	for _, w := range p.weights {
		args = append(args, w)
	}
	out, err := p.exec.Call(args...)
	if err != nil {
		return Prediction{}, fmt.Errorf("predict %dx%d on %s: %w", s.Rows, s.Cols, p.Backend(), err)
	}
	defer func() {
		for _, t := range out {
			t.FinalizeAll()
		}
	}()
	pred = Prediction{Rows: s.Rows, Cols: s.Cols, Classes: len(p.m.meta.Classes)}
	if pred.Prob, err = tensors.CopyFlatData[float32](out[0]); err != nil {
		return Prediction{}, fmt.Errorf("predict: read probabilities: %w", err)
	}
	if pred.Uncertainty, err = tensors.CopyFlatData[float32](out[1]); err != nil {
		return Prediction{}, fmt.Errorf("predict: read uncertainty: %w", err)
	}
	return pred, nil
}

// Close releases the backend.
func (p *Predictor) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exec != nil {
		p.exec.Finalize()
		p.exec = nil
	}
	for _, w := range p.weights {
		w.FinalizeAll()
	}
	p.weights = nil
	if p.backend != nil {
		p.backend.Finalize()
		p.backend = nil
	}
	return nil
}
