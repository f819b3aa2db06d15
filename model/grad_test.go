package model

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
)

// TestGradientsMatchFiniteDifferences checks the graph's gradient of the
// full training loss (evidence calibration on, every loss term active)
// against central differences, in float64, on a tiny network.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, enc := range []string{EncoderCell, EncoderPaper} {
		t.Run(enc, func(t *testing.T) { testGradients(t, enc) })
	}
}

func testGradients(t *testing.T, encoder string) {
	b := testBackend(t)
	cfg := tinyConfig(1)
	cfg.Encoder = encoder
	cfg.Hidden, cfg.HeadDim, cfg.DState, cfg.Chunk = 8, 4, 3, 4
	const rows, cols, bands, k = 10, 9, 5, 3
	d, err := makeDims(cfg, bands, k)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	params := initParams(d, cfg, rng)
	// Non-zero evidence heads so that every weight gets a gradient.
	for i := range params {
		if params[i].Name == "gpos.2.w" || params[i].Name == "gneg.2.w" {
			for j := range params[i].Data {
				params[i].Data[j] = float32(rng.NormFloat64() * 0.3)
			}
		}
	}
	hs, ws := lowRes(rows, encoder), lowRes(cols, encoder)
	l := hs * ws
	xr, xc := hs, ws
	if encoder == EncoderPaper {
		xr, xc = rows, cols
	}
	x := make([]float64, xr*xc*bands)
	for i := range x {
		x[i] = rng.Float64()
	}
	protos := make([]float64, k*d.D)
	for i := range protos {
		protos[i] = rng.NormFloat64()
	}
	anchor := make([]int32, l)
	for i := range anchor {
		anchor[i] = -1 // bank fixed: its update is not differentiated
	}
	ur, uc := upMatrix(rows, hs), upMatrix(cols, ws)
	train := []int{3, 17, 40, 55, 71, 88}
	wtr := make([]float64, len(train)*l)
	ytr := make([]int32, len(train))
	for ti, i := range train {
		r, c := i/cols, i%cols
		ytr[ti] = int32(ti % k)
		for a := 0; a < hs; a++ {
			for bb := 0; bb < ws; bb++ {
				wtr[ti*l+a*ws+bb] = float64(ur[r*hs+a] * uc[c*ws+bb])
			}
		}
	}
	ones := make([]float64, l)
	for i := range ones {
		ones[i] = 1
	}
	// Valid masks with a few invalid rows, so that the masked GroupNorm
	// statistics are differentiated too.
	var masks []any
	if encoder == EncoderPaper {
		pix := make([]float64, rows*cols)
		for i := range pix {
			pix[i] = float64(min(1, i%7))
		}
		masks = append(masks, tensorOf(pix, rows*cols))
	}
	cellMask := append([]float64{}, ones...)
	cellMask[l-1] = 0
	masks = append(masks, tensorOf(cellMask, l))
	fixed := []any{
		tensorOf(x, xr, xc, bands), tensorOf(anchor, l), tensorOf(wtr, len(train), l), tensorOf(ytr, len(train)),
		tensorOf(ones, l), float64(1), tensorOf(protos, k, d.D), tensorOf(make([]float64, k), k),
	}
	fixed = append(fixed, masks...)
	nm := len(masks)
	n := &graphBuilder{d: d, cfg: cfg, keepGradients: true}
	np := len(params)
	exec, err := NewExec(b, func(g *Graph, in []*Node) []*Node {
		n.p = map[string]*Node{}
		for i, p := range params {
			n.p[p.Name] = in[8+nm+i]
		}
		n.setMasks(in[8 : 8+nm]...)
		loss, _, _, _ := n.loss(in[0], in[1], in[2], in[3], in[4], in[5], in[6], Add(in[7], OnesLike(in[7])))
		grads := Gradient(loss, in[8+nm:8+nm+np]...)
		forgetBMM(g)
		return append([]*Node{loss}, grads...)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	values := make([][]float64, np)
	for i, p := range params {
		values[i] = make([]float64, len(p.Data))
		for j, v := range p.Data {
			values[i][j] = float64(v)
		}
	}
	run := func() []*tensors.Tensor {
		args := append([]any{}, fixed...)
		for i, p := range params {
			args = append(args, tensorOf(values[i], p.Shape...))
		}
		out, err := exec.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := run()
	const eps = 1e-5
	checked := 0
	for i, p := range params {
		grad := tensors.MustCopyFlatData[float64](out[1+i])
		// A few entries of every tensor.
		for _, j := range []int{0, len(p.Data) / 2, len(p.Data) - 1} {
			orig := values[i][j]
			values[i][j] = orig + eps
			up := tensors.MustCopyFlatData[float64](run()[0])[0]
			values[i][j] = orig - eps
			down := tensors.MustCopyFlatData[float64](run()[0])[0]
			values[i][j] = orig
			fd := (up - down) / (2 * eps)
			if diff := math.Abs(fd - grad[j]); diff > 1e-5+1e-3*math.Abs(fd) {
				t.Errorf("%s[%d]: gradient %.8g, finite difference %.8g", p.Name, j, grad[j], fd)
			}
			checked++
		}
	}
	t.Logf("checked %d gradient entries over %d tensors", checked, np)
}
