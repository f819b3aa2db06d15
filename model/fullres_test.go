package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/pnec/pnec/model/internal/kernels"
)

// fullResCase is a random scene and random weights of the paper encoder's
// full-resolution stage.
type fullResCase struct {
	s                           Scene
	lo, hi                      []float32
	d                           dims
	we, be, gamma, beta, wc, bc []float32
	levels                      int    // input quantisation (Config.InputLevels)
	mode                        string // input mode (Config.Input; "" = InputStretch)
}

// inputSpec is the case's input mode with its stretch and quantisation.
func (fc fullResCase) inputSpec() inputSpec {
	return newInputSpec(fc.mode, fc.levels, fc.lo, fc.hi)
}

func newFullResCase(rows, cols, bands, hidden int, seed uint64, invalidShare float64) fullResCase {
	rng := rand.New(rand.NewPCG(seed, 99))
	cfg := DefaultConfig()
	cfg.Hidden = hidden
	d, _ := makeDims(cfg, bands, 3)
	s := Scene{Rows: rows, Cols: cols, Bands: bands, Data: make([]float32, rows*cols*bands), Valid: make([]bool, rows*cols)}
	for i := range s.Valid {
		s.Valid[i] = rng.Float64() >= invalidShare
		for b := 0; b < bands; b++ {
			s.Data[i*bands+b] = float32(100 + 50*rng.NormFloat64() + 10*float64(b))
		}
	}
	lo, hi, _ := bandStretch(s)
	rnd := func(n int, sd, mean float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + sd*rng.NormFloat64())
		}
		return v
	}
	return fullResCase{s: s, lo: lo, hi: hi, d: d,
		we: rnd(bands*hidden, 0.5, 0), be: rnd(hidden, 0.2, 0), gamma: rnd(hidden, 0.3, 1), beta: rnd(hidden, 0.3, 0),
		wc: rnd(9*hidden*hidden, 0.1, 0), bc: rnd(hidden, 0.2, 0)}
}

// graphFullRes runs paperEncoder's graph on the case in float64 (per-image
// statistics, or the given ones) and returns F0 [L, D] and, with r, the
// gradients of sum(F0 * r) with respect to the six weights.
func graphFullRes(t *testing.T, fc fullResCase, stats [][2][]float32, r []float32) (f0 []float64, grads [][]float64) {
	t.Helper()
	b := testBackend(t)
	d := fc.d
	names := []string{"embed.w", "embed.b", "embed.gn.g", "embed.gn.b", "conv.w", "conv.b"}
	shapes := [][]int{{d.Bands, d.D}, {d.D}, {d.D}, {d.D}, {9 * d.D, d.D}, {d.D}}
	vals := [][]float32{fc.we, fc.be, fc.gamma, fc.beta, fc.wc, fc.bc}
	to64 := func(v []float32) []float64 {
		o := make([]float64, len(v))
		for i, x := range v {
			o[i] = float64(x)
		}
		return o
	}
	x := pixelInputs(fc.s, fc.inputSpec())
	masks := netMasks(fc.s, EncoderPaper)
	hs, ws := fc.s.Rows/Stride, fc.s.Cols/Stride
	exec, err := NewExec(b, func(g *Graph, in []*Node) []*Node {
		n := &graphBuilder{d: d, cfg: DefaultConfig(), keepGradients: true}
		n.cfg.Encoder = EncoderPaper
		n.p = map[string]*Node{}
		for i, name := range names {
			n.p[name] = in[3+i]
		}
		n.setMasks(in[1], in[2])
		if stats != nil {
			n.fixedNorm = map[string][2]*Node{"embed.gn": {Const(g, tensorOf(to64(stats[0][0]), d.Groups)), Const(g, tensorOf(to64(stats[0][1]), d.Groups))}}
		}
		out := n.paperEncoder(in[0])
		res := []*Node{out}
		if r != nil {
			loss := ReduceAllSum(Mul(out, Const(g, tensorOf(to64(r), hs*ws, d.D))))
			res = append(res, Gradient(loss, in[3:]...)...)
		}
		return res
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	args := []any{tensorOf(to64(x), fc.s.Rows, fc.s.Cols, d.Bands), tensorOf(to64(masks[0]), len(masks[0])), tensorOf(to64(masks[1]), len(masks[1]))}
	for i, v := range vals {
		args = append(args, tensorOf(to64(v), shapes[i]...))
	}
	out, err := exec.Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	read := func(tn *tensors.Tensor) []float64 {
		v, err := tensors.CopyFlatData[float64](tn)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	f0 = read(out[0])
	for _, o := range out[1:] {
		grads = append(grads, read(o))
	}
	return f0, grads
}

func maxRelDiff(t *testing.T, what string, got []float32, want []float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale, worst float64
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range got {
		worst = math.Max(worst, math.Abs(float64(got[i])-want[i]))
	}
	return worst / math.Max(scale, 1e-30)
}

// TestFullResMatchesGraph: pnec's own full-resolution kernels give the
// paper encoder's output and its weight gradients as the GoMLX graph
// computes them (float64), on scenes whose sizes are and are not multiples
// of 4, with nodata pixels, with per-image and with stored GroupNorm
// statistics, on one and on two workers, with the input quantised to 8
// bits (21 bands: vector and scalar stretch paths).
func TestFullResMatchesGraph(t *testing.T) {
	if !kernels.FullResAvailable(32) {
		t.Skip("pnec's full-resolution kernels need AVX-512 and GOEXPERIMENT=simd")
	}
	for _, tc := range []struct {
		name                      string
		rows, cols, bands, hidden int
		invalid                   float64
		workers                   int
		fixed                     bool
		levels                    int
		mode                      string
	}{
		{"24x32", 24, 32, 7, 32, 0, 1, false, 0, ""},
		{"23x30-nodata", 23, 30, 9, 32, 0.1, 2, false, 0, ""},
		{"37x301-wide", 37, 301, 5, 16, 0.05, 2, false, 0, ""},
		{"26x22-fixed", 26, 22, 6, 48, 0.1, 2, true, 0, ""},
		{"24x36-8bit", 24, 36, 21, 32, 0.05, 2, false, 256, ""},
		{"24x32-shape", 24, 32, 21, 32, 0.05, 2, false, 0, InputShape},
		{"26x22-snv-fixed", 26, 22, 9, 32, 0.1, 1, true, 0, InputSNV},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFullResCase(tc.rows, tc.cols, tc.bands, tc.hidden, 7, tc.invalid)
			fc.levels, fc.mode = tc.levels, tc.mode
			hs, ws := tc.rows/Stride, tc.cols/Stride
			rng := rand.New(rand.NewPCG(5, 6))
			r := make([]float32, hs*ws*tc.hidden)
			for i := range r {
				r[i] = float32(rng.NormFloat64())
			}
			f := newFullRes(fc.d, fc.s, fc.inputSpec(), tc.workers)
			f.SetWeights(fc.we, fc.be, fc.gamma, fc.beta, fc.wc, fc.bc)
			var stats [][2][]float32
			var mean, vr []float64
			if tc.fixed {
				m32, v32 := make([]float32, fc.d.Groups), make([]float32, fc.d.Groups)
				mean, vr = make([]float64, fc.d.Groups), make([]float64, fc.d.Groups)
				for g := range m32 {
					m32[g], v32[g] = float32(rng.NormFloat64()), float32(0.5+rng.Float64())
					mean[g], vr[g] = float64(m32[g]), float64(v32[g])
				}
				stats = [][2][]float32{{m32, v32}}
			}
			want, grads := graphFullRes(t, fc, stats, r)
			got := make([]float32, hs*ws*tc.hidden)
			f.Forward(mean, vr, got, true)
			if e := maxRelDiff(t, "F0", got, want); e > 2e-5 {
				t.Errorf("F0: largest difference %.2g of the largest value", e)
			} else {
				t.Logf("F0: %.2g (largest |F0| %.3g)", e, maxAbs(want))
			}
			if tc.fixed {
				return // the graph's gradients then skip the statistics; the training path always uses its own
			}
			dwe, dbe, dg, db, dwc, dbc := f.Backward(r)
			for i, g := range [][]float32{dwe, dbe, dg, db, dwc, dbc} {
				name := []string{"embed.w", "embed.b", "embed.gn.g", "embed.gn.b", "conv.w", "conv.b"}[i]
				if e := maxRelDiff(t, name, g, grads[i]); e > 1e-4 {
					t.Errorf("d %s: largest difference %.2g of the largest value", name, e)
				} else {
					t.Logf("d %s: %.2g", name, e)
				}
			}
		})
	}
}

func maxAbs(v []float64) float64 {
	var m float64
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// BenchmarkFullRes times the paper encoder's full-resolution stage on
// pnec's kernels at Pavia University's size (benchSize), D = 128: inference
// (stored statistics), the training forward pass (the scene's statistics,
// windows kept) and the backward pass, in wall and process CPU seconds.
func BenchmarkFullRes(b *testing.B) {
	if !kernels.FullResAvailable(128) {
		b.Skip("pnec's full-resolution kernels need AVX-512 and GOEXPERIMENT=simd")
	}
	rows, cols, bands, _ := benchSize()
	fc := newFullResCase(rows, cols, bands, 128, 3, 0)
	f := newFullRes(fc.d, fc.s, fc.inputSpec(), runtime.GOMAXPROCS(0))
	f.SetWeights(fc.we, fc.be, fc.gamma, fc.beta, fc.wc, fc.bc)
	f0 := make([]float32, (rows/Stride)*(cols/Stride)*128)
	mean, vr := f.Forward(nil, nil, f0, true)
	for _, mode := range []string{"infer", "train-forward", "backward"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "backward" {
				f.Forward(nil, nil, f0, true)
			}
			c0 := cpuSeconds()
			for b.Loop() {
				switch mode {
				case "infer":
					f.Forward(mean, vr, f0, false)
				case "train-forward":
					f.Forward(nil, nil, f0, true)
				case "backward":
					f.Backward(f0)
				}
			}
			b.ReportMetric((cpuSeconds()-c0)/float64(b.N), "cpu-s/op")
		})
	}
}
