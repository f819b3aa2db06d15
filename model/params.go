package model

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// param is one trained weight tensor, stored flat in row-major order.
type param struct {
	Name  string
	Shape []int
	Data  []float32
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// dims are the derived sizes of a network.
type dims struct {
	In, Bands, D, K, E, N, Heads, HeadDim, DConv, Chunk, Groups, DiffWindow int
}

func makeDims(cfg Config, bands, classes int) (dims, error) {
	d := dims{In: inputChannels(cfg.Input, bands), Bands: bands, D: cfg.Hidden, K: classes, E: cfg.Expand * cfg.Hidden, N: cfg.DState,
		HeadDim: cfg.HeadDim, DConv: cfg.DConv, Chunk: cfg.Chunk, Groups: cfg.Groups, DiffWindow: cfg.DiffWindow}
	switch {
	case bands < 1:
		return d, fmt.Errorf("band count %d: need at least 1", bands)
	case classes < 2:
		return d, fmt.Errorf("%d classes: need at least 2", classes)
	case d.D < 1 || d.Groups < 1 || d.D%d.Groups != 0:
		return d, fmt.Errorf("hidden %d must be a positive multiple of the %d norm groups", d.D, d.Groups)
	case d.HeadDim < 1 || d.E%d.HeadDim != 0:
		return d, fmt.Errorf("inner width %d (expand x hidden) must be a multiple of head size %d", d.E, d.HeadDim)
	case d.N < 1 || d.DConv < 1 || d.Chunk < 1 || d.DiffWindow < 1 || d.DiffWindow%2 == 0:
		return d, fmt.Errorf("state %d, conv %d, chunk %d must be positive and diff window %d odd", d.N, d.DConv, d.Chunk, d.DiffWindow)
	}
	d.Heads = d.E / d.HeadDim
	return d, nil
}

// paramSet is the ordered list of a network's weights.
type paramSet []param

func (ps paramSet) index() map[string]int {
	m := make(map[string]int, len(ps))
	for i, p := range ps {
		m[p.Name] = i
	}
	return m
}

// initParams (rng nil: the shapes only, no weights) creates the weights of a network with sizes d, drawn from rng
// like PyTorch's defaults (uniform +-1/sqrt(fan_in) for linear layers).
func initParams(d dims, cfg Config, rng *rand.Rand) paramSet {
	var ps paramSet
	add := func(name string, shape []int, fill func(i int) float32) {
		p := param{Name: name, Shape: shape}
		if rng == nil { // shapes only (to check loaded files, to estimate memory): nothing allocated
			ps = append(ps, p)
			return
		}
		p.Data = make([]float32, numel(shape))
		for i := range p.Data {
			p.Data[i] = fill(i)
		}
		ps = append(ps, p)
	}
	uniform := func(fanIn int) func(int) float32 {
		bound := 1 / math.Sqrt(float64(fanIn))
		return func(int) float32 { return float32((rng.Float64()*2 - 1) * bound) }
	}
	constant := func(v float32) func(int) float32 { return func(int) float32 { return v } }
	linear := func(name string, in, out int, zero bool) {
		if zero {
			add(name+".w", []int{in, out}, constant(0))
			add(name+".b", []int{out}, constant(0))
			return
		}
		add(name+".w", []int{in, out}, uniform(in))
		add(name+".b", []int{out}, uniform(in))
	}
	norm := func(name string, ch int) {
		add(name+".g", []int{ch}, constant(1))
		add(name+".b", []int{ch}, constant(0))
	}

	linear("embed", d.In, d.D, false)
	norm("embed.gn", d.D)
	linear("conv", 9*d.D, d.D, false)
	if cfg.Encoder != EncoderPaper { // the paper's 3x3 conv is followed by pooling, not a norm
		norm("conv.gn", d.D)
	}
	for _, br := range []string{"spa", "diff"} {
		xbc := d.E + 2*d.N
		add(br+".in.w", []int{d.D, d.E + xbc + d.Heads}, uniform(d.D)) // Mamba's projections have no bias
		linear(br+".conv1d", d.DConv, xbc, false)                      // depthwise: one weight per tap and channel
		// dt bias: inverse softplus of dt drawn log-uniformly in [1e-3, 1e-1] (Mamba's init).
		add(br+".dtbias", []int{d.Heads}, func(int) float32 {
			dt := math.Exp(rng.Float64()*(math.Log(0.1)-math.Log(0.001)) + math.Log(0.001))
			return float32(dt + math.Log(-math.Expm1(-dt)))
		})
		add(br+".alog", []int{d.Heads}, func(int) float32 { return float32(math.Log(1 + 15*rng.Float64())) })
		add(br+".dskip", []int{d.Heads}, constant(1))
		add(br+".out.w", []int{d.E, d.D}, uniform(d.E))
		norm(br+".gn", d.D)
		linear(br+".aux", d.D, d.K, false)
	}
	add("diff.a", []int{}, constant(0.5))
	add("fuse.w", []int{2}, constant(0))
	linear("head.1", d.D, d.D, false)
	norm("head.gn", d.D)
	linear("head.2", d.D, d.K, false)
	add("tau", []int{}, constant(float32(cfg.TauInit))) // the scale itself, as the paper writes it
	for _, ev := range []string{"gpos", "gneg"} {
		linear(ev+".1", 4*d.D, d.D, false)
		linear(ev+".2", d.D, d.D, true) // zero-initialised: calibration starts as the identity
	}
	// Uncertainty fusion: a 1x1 conv of the three sources, PyTorch's default init.
	add("gate.w", []int{3}, uniform(3))
	add("gate.b", []int{}, uniform(3))
	return ps
}
