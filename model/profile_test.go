package model

import (
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkNetworkParts times the network's parts on a Pavia University
// sized grid: forward, and forward+backward with respect to the part's
// weights (sub-benchmarks PART/forward and PART/grad), in wall time per
// call and CPU seconds per call (cpu-s/op). It compiles 14 graphs, so it
// runs only when asked (PNEC_PROFILE=1), not in make bench:
//
//	PNEC_PROFILE=1 go test ./model -run '^$' -bench NetworkParts/mamba
func BenchmarkNetworkParts(tb *testing.B) {
	if os.Getenv("PNEC_PROFILE") == "" {
		tb.Skip("set PNEC_PROFILE=1 to time the network's parts")
	}
	b := testBackend(tb)
	rows, cols, bands, k := benchSize()
	cfg := DefaultConfig()
	d, _ := makeDims(cfg, bands, k)
	params := initParams(d, cfg, rand.New(rand.NewPCG(1, 1)))
	hs, ws := padTo(rows)/Stride, padTo(cols)/Stride
	l := hs * ws
	rng := rand.New(rand.NewPCG(2, 2))
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	x := tensorOf(rnd(l*bands), hs, ws, bands)
	f := tensorOf(rnd(l*d.D), l, d.D)
	z := tensorOf(rnd(l*d.K), l, d.K)
	ur, uc := tensorOf(upMatrix(rows, hs), rows, hs), tensorOf(upMatrix(cols, ws), cols, ws)
	parts := []struct {
		name   string
		input  any
		prefix []string
		fn     func(n *graphBuilder, in *Node, g *Graph, ur, uc *Node) *Node
	}{
		{"embed+gn+silu", x, []string{"embed"}, func(n *graphBuilder, in *Node, _ *Graph, _, _ *Node) *Node {
			return silu(n.groupNorm(n.linear(Reshape(in, l, bands), "embed"), "embed.gn"))
		}},
		{"conv3x3+gn+silu", f, []string{"conv"}, func(n *graphBuilder, in *Node, _ *Graph, _, _ *Node) *Node {
			return n.conv3x3NormSilu(Reshape(in, hs, ws, d.D), "conv", "conv.gn")
		}},
		{"mamba block (spa)", f, []string{"spa."}, func(n *graphBuilder, in *Node, _ *Graph, _, _ *Node) *Node {
			return Add(in, silu(n.groupNorm(n.mamba(in, "spa"), "spa.gn")))
		}},
		{"ssd scan only", f, nil, func(n *graphBuilder, in *Node, _ *Graph, _, _ *Node) *Node {
			xs := Reshape(Concatenate([]*Node{in, in}, 1), l, d.Heads, d.HeadDim)
			dA := Neg(Square(Slice(in, AxisRange(), AxisRange(0, d.Heads))))
			return ssdScan(xs, MulScalar(dA, 0.1), Slice(in, AxisRange(), AxisRange(0, d.N)), Slice(in, AxisRange(), AxisRange(d.N, 2*d.N)), d.Chunk, false)
		}},
		{"in_proj+conv1d+silu", f, []string{"spa.in", "spa.conv1d"}, func(n *graphBuilder, in *Node, _ *Graph, _, _ *Node) *Node {
			proj := n.linear(in, "spa.in")
			return silu(n.causalConvWB(Slice(proj, AxisRange(), AxisRange(d.E, 2*d.E+2*d.N)), n.p["spa.conv1d.w"], n.p["spa.conv1d.b"]))
		}},
		{"head", f, []string{"head"}, func(n *graphBuilder, in *Node, _ *Graph, _, _ *Node) *Node { return n.head(in) }},
		{"upsample+softmax", z, nil, func(n *graphBuilder, in *Node, _ *Graph, ur, uc *Node) *Node {
			return Softmax(upsample(in, ur, uc), -1)
		}},
	}
	for _, part := range parts {
		for _, withGrad := range []bool{false, true} {
			name := part.name + "/forward"
			if withGrad {
				name = part.name + "/grad"
			}
			tb.Run(name, func(tb *testing.B) {
				var idx []int
				for i, p := range params {
					for _, pre := range part.prefix {
						if len(p.Name) >= len(pre) && p.Name[:len(pre)] == pre {
							idx = append(idx, i)
						}
					}
				}
				n := &graphBuilder{d: d, cfg: cfg}
				exec, err := NewExec(b, func(g *Graph, in []*Node) []*Node {
					n.p = map[string]*Node{}
					for j, i := range idx {
						n.p[params[i].Name] = in[3+j]
					}
					out := part.fn(n, in[0], g, in[1], in[2])
					loss := ReduceAllSum(Mul(out, out))
					if !withGrad || len(idx) == 0 {
						return []*Node{loss}
					}
					return append([]*Node{loss}, Gradient(loss, in[3:]...)...)
				})
				if err != nil {
					tb.Fatal(err)
				}
				defer exec.Finalize()
				args := []any{part.input, ur, uc}
				for _, i := range idx {
					args = append(args, tensorOf(params[i].Data, params[i].Shape...))
				}
				if _, err := exec.Call(args...); err != nil { // compiles, outside the timing
					tb.Fatal(err)
				}
				calls, c0 := 0, cpuSeconds()
				for tb.Loop() {
					out, err := exec.Call(args...)
					if err != nil {
						tb.Fatal(err)
					}
					for _, o := range out {
						o.FinalizeAll()
					}
					calls++
				}
				tb.ReportMetric((cpuSeconds()-c0)/float64(calls), "cpu-s/op")
			})
		}
	}
}
