package model

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/pnec/pnec/tiling"
)

// rawScene is a scene of integer digital numbers (what sensors deliver)
// with a no-data corner and a few dark and saturated pixels; with floats
// the values get fractions and a NaN.
func rawScene(rows, cols, bands int, floats bool, seed uint64) Scene {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := Scene{Rows: rows, Cols: cols, Bands: bands, Data: make([]float32, rows*cols*bands), Valid: make([]bool, rows*cols)}
	for i := range s.Valid {
		r, c := i/cols, i%cols
		s.Valid[i] = !(r < rows/5 && c < cols/4)
		base := 500 + 3000*rng.Float64()
		for b := range bands {
			v := base * (1 + 0.3*math.Sin(float64(b)/3+float64(r)/7))
			if i%97 == 0 {
				v = 0 // a dark pixel: no shape
			}
			if floats {
				s.Data[i*bands+b] = float32(v / 1000)
			} else {
				s.Data[i*bands+b] = float32(math.Round(v))
			}
		}
	}
	if floats {
		s.Data[5*bands+1] = float32(math.NaN())
	}
	return s
}

// TestPrepNodesMatchHost: the in-graph input, masks and interpolation
// matrices equal the host's for every input mode and both encoders, from
// integer and from float scenes.
func TestPrepNodesMatchHost(t *testing.T) {
	b := testBackend(t)
	for _, floats := range []bool{false, true} {
		s := rawScene(19, 22, 7, floats, 3)
		lo, hi, err := bandStretch(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []struct {
			name   string
			levels int
		}{{InputStretch, 0}, {InputStretch, 256}, {InputShape, 0}, {InputStretchShape, 0}, {InputSNV, 0}} {
			for _, enc := range []string{EncoderPaper, EncoderCell} {
				t.Run(fmt.Sprintf("floats=%v/%s/levels=%d/%s", floats, mode.name, mode.levels, enc), func(t *testing.T) {
					in := newInputSpec(mode.name, mode.levels, lo, hi)
					e, err := NewExec(b, func(g *Graph, nodes []*Node) []*Node {
						x, masks := prepNodes(nodes[0], nodes[1], nodes[2], nodes[3], in, enc)
						hs, ws := lowRes(s.Rows, enc), lowRes(s.Cols, enc)
						return append([]*Node{x, upMatrixNode(g, s.Rows, hs), upMatrixNode(g, s.Cols, ws)}, masks...)
					})
					if err != nil {
						t.Fatal(err)
					}
					defer e.Finalize()
					raw, valid := rawTensor(s)
					if want := "Int16"; !floats && raw.DType().String() != want {
						t.Errorf("integer scene uploaded as %s, want %s", raw.DType(), want)
					}
					out, err := e.Call(raw, valid, tensorOf(in.lo, len(in.lo)), tensorOf(in.scale, len(in.scale)))
					if err != nil {
						t.Fatal(err)
					}
					x, _ := netInput(s, in, enc)
					hs, ws := lowRes(s.Rows, enc), lowRes(s.Cols, enc)
					want := append([][]float32{x, upMatrix(s.Rows, hs), upMatrix(s.Cols, ws)}, netMasks(s, enc)...)
					names := []string{"input", "up rows", "up cols", "mask", "mask 2"}
					for i, w := range want {
						got := tensors.MustCopyFlatData[float32](out[i])
						if len(got) != len(w) {
							t.Fatalf("%s: %d values, want %d", names[i], len(got), len(w))
						}
						if d, at := maxDiffAt(got, w); d > 1e-6 {
							t.Errorf("%s differs by %g at %d: graph %g, host %g", names[i], d, at, got[at], w[at])
						}
					}
				})
			}
		}
	}
}

// TestRecoverNodeMatchesHost: the in-graph recovery equals tiling.Recover
// (valid pixels of the clipped window, zero at no-data) for several
// windows and strengths.
func TestRecoverNodeMatchesHost(t *testing.T) {
	b := testBackend(t)
	rows, cols, k := 23, 17, 4
	rng := rand.New(rand.NewPCG(1, 2))
	prob := make([]float32, rows*cols*k)
	for i := range prob {
		prob[i] = rng.Float32()
	}
	valid := make([]bool, rows*cols)
	validF := make([]float32, rows*cols)
	for i := range valid {
		valid[i] = rng.Float64() > 0.2
		if valid[i] {
			validF[i] = 1
		}
	}
	for _, rp := range []tiling.Recovery{{Window: 9, Eta: 1}, {Window: 3, Eta: 0.5}, {Window: 1, Eta: 1}, {Window: 9, Eta: 0}} {
		e, err := NewExec(b, func(p, v *Node) *Node { return recoverNode(p, v, rp.Window, rp.Eta) })
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Call(tensorOf(prob, rows, cols, k), tensorOf(validF, rows, cols))
		if err != nil {
			t.Fatal(err)
		}
		got := tensors.MustCopyFlatData[float32](out[0])
		want := tiling.Recover(prob, valid, rows, cols, k, rp)
		if d, at := maxDiffAt(got, want); d > 1e-6 {
			t.Errorf("%+v: differs by %g at %d", rp, d, at)
		}
		e.Finalize()
	}
}

// TestPredictInGraphMatchesHost: a predictor preparing its input in the
// graph (as on XLA) gives the host-prepared predictor's probabilities and
// uncertainty within 1e-5 and the same class map, with and without the
// recovery, for both encoders, an integer and a float scene, and a scene
// smaller than a stride.
func TestPredictInGraphMatchesHost(t *testing.T) {
	train := rawScene(32, 28, 6, false, 1)
	labels := make([]int32, train.Rows*train.Cols)
	for i := range labels {
		if train.Valid[i] {
			labels[i] = int32(1 + (i/train.Cols)*3/train.Rows)
		}
	}
	for _, enc := range []string{EncoderPaper, EncoderCell} {
		cfg := tinyConfig(2)
		cfg.Encoder = enc
		m, err := Train(context.Background(), train, labels, TrainOptions{Config: cfg, Backend: "go"})
		if err != nil {
			t.Fatal(err)
		}
		// The host side runs the encoder in the graph too (no pnec kernels),
		// so that only the preparation differs.
		useFullRes = false
		host, err := NewPredictor(m, "go")
		useFullRes = true
		if err != nil {
			t.Fatal(err)
		}
		prepInGraph = true
		dev, err := NewPredictor(m, "go")
		prepInGraph = false
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []Scene{rawScene(30, 26, 6, false, 9), rawScene(21, 33, 6, true, 4), cropRows(rawScene(30, 26, 6, false, 9), 3)} {
			name := fmt.Sprintf("%s/%dx%d", enc, s.Rows, s.Cols)
			want, err := host.Predict(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dev.Predict(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			comparePredictions(t, name, got, want, s.Valid)
			wantRec := want
			// PredictRecovered recovers the network's probabilities with
			// the network's window (a fused model chooses its own for the
			// decision).
			wantRec.Prob = tiling.Recover(want.Prob, s.Valid, s.Rows, s.Cols, want.Classes, m.NetworkRecovery())
			gotRec, err := dev.PredictRecovered(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if !gotRec.Recovered {
				t.Errorf("%s: PredictRecovered did not mark its output recovered", name)
			}
			comparePredictions(t, name+" recovered", gotRec, wantRec, s.Valid)
			hostRec, err := host.PredictRecovered(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			comparePredictions(t, name+" recovered on the host", hostRec, wantRec, s.Valid)
		}
		host.Close()
		dev.Close()
	}
}

func comparePredictions(t *testing.T, name string, got, want Prediction, valid []bool) {
	t.Helper()
	if d, at := maxDiffAt(got.Prob, want.Prob); d > 1e-5 {
		t.Errorf("%s: probabilities differ by %g at %d", name, d, at)
	}
	if d, at := maxDiffAt(got.Uncertainty, want.Uncertainty); d > 1e-5 {
		t.Errorf("%s: uncertainty differs by %g at %d", name, d, at)
	}
	for i := range got.Rows * got.Cols {
		if valid != nil && !valid[i] {
			continue
		}
		if a, b := argmaxRow(got.Prob, i, got.Classes), argmaxRow(want.Prob, i, want.Classes); a != b {
			t.Errorf("%s: pixel %d class %d, host %d", name, i, a, b)
			return
		}
	}
}
