package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/pnec/pnec/internal/shareddata"

	"github.com/pnec/pnec/model/internal/kernels"
)

// refTensor is one array of the reference files: shape and row-major data.
type refTensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

// refFile is ../shared/reference/reference_{full,cell}.json (README there).
type refFile struct {
	Config struct {
		H, W, Bands, K, D, Groups int
		DState                    int     `json:"d_state"`
		DConv                     int     `json:"d_conv"`
		Expand                    int     `json:"expand"`
		HeadDim                   int     `json:"headdim"`
		Chunk                     int     `json:"chunk"`
		Rho                       float64 `json:"rho"`
		AlphaE                    float64 `json:"alpha_e"`
		BetaE                     float64 `json:"beta_e"`
		DiffK                     int     `json:"diff_k"`
		Encoder                   string  `json:"encoder"`
		LowRes                    []int   `json:"low_res"`
	} `json:"config"`
	Input   refTensor            `json:"input"`
	Params  map[string]refTensor `json:"params"`
	Outputs map[string]refTensor `json:"outputs"`
}

// referenceDir finds ../shared/reference ($PNEC_REFERENCE, else beside the
// shared data folder).
func referenceDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("PNEC_REFERENCE"); d != "" {
		return d
	}
	data, err := shareddata.Find(".")
	if err != nil {
		t.Skipf("no reference outputs: %v", err)
	}
	return filepath.Join(filepath.Dir(data), "reference")
}

// TestParityWithReference loads the reference network's weights into
// pnec's and checks every low-resolution output of one forward pass
// (inference mode, calibration on, no training labels) within 1e-4, for
// both encoders.
func TestParityWithReference(t *testing.T) {
	dir := referenceDir(t)
	for _, c := range []struct {
		file, encoder string
		kernels       bool
	}{{"reference_full.json", EncoderPaper, false}, {"reference_full.json", EncoderPaper, true}, {"reference_cell.json", EncoderCell, false}} {
		name := c.encoder
		if c.kernels {
			// The paper encoder's full-resolution stage on pnec's own kernels
			// (kernels.FullRes), as Predict and Train run it on the Go backend.
			name += "-kernels"
		}
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, c.file))
			if err != nil {
				t.Skipf("no reference output: %v", err)
			}
			var ref refFile
			if err := json.Unmarshal(b, &ref); err != nil {
				t.Fatalf("%s: %v", c.file, err)
			}
			checkParity(t, &ref, c.encoder, c.kernels)
		})
	}
}

func checkParity(t *testing.T, ref *refFile, encoder string, onKernels bool) {
	rc := ref.Config
	cfg := DefaultConfig()
	cfg.Encoder = encoder
	cfg.Input = InputStretch // the reference's input (the default may differ)
	cfg.Hidden, cfg.DState, cfg.DConv, cfg.Expand, cfg.HeadDim, cfg.Chunk, cfg.Groups = rc.D, rc.DState, rc.DConv, rc.Expand, rc.HeadDim, rc.Chunk, rc.Groups
	cfg.DiffWindow, cfg.GateFloor, cfg.Alpha, cfg.Beta = rc.DiffK, rc.Rho, rc.AlphaE, rc.BetaE
	d, err := makeDims(cfg, rc.Bands, rc.K)
	if err != nil {
		t.Fatal(err)
	}
	params, err := paramsFromReference(ref, d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := Scene{Rows: rc.H, Cols: rc.W, Bands: rc.Bands, Data: make([]float32, len(ref.Input.Data))}
	for i, v := range ref.Input.Data {
		s.Data[i] = float32(v)
	}
	lo, hi := make([]float32, rc.Bands), make([]float32, rc.Bands)
	for i := range hi {
		hi[i] = 1 // the input is already stretched to [0, 1]
	}
	// The reference's input path: the per-band stretch (here the identity).
	x, xdims := netInput(s, newInputSpec(InputStretch, 0, lo, hi), encoder)
	hs, ws := lowRes(rc.H, encoder), lowRes(rc.W, encoder)
	if onKernels {
		if !kernels.FullResAvailable(d.D) {
			t.Skip("pnec's full-resolution kernels need AVX-512 and GOEXPERIMENT=simd")
		}
		fr := newFullResWeights(d, params, 2)
		setFullResScene(fr, s, newInputSpec(InputStretch, 0, lo, hi))
		x, xdims = make([]float32, hs*ws*d.D), []int{hs * ws, d.D}
		fr.Forward(nil, nil, x, false)
	}
	if len(rc.LowRes) != 2 || rc.LowRes[0] != hs || rc.LowRes[1] != ws {
		t.Fatalf("low-resolution grid %dx%d, reference %v", hs, ws, rc.LowRes)
	}
	l := hs * ws
	protos := ref.Params["protos"]

	b := testBackend(t)
	n := &graphBuilder{d: d, cfg: cfg, f0Input: onKernels}
	exec, err := NewExec(b, func(g *Graph, in []*Node) []*Node {
		n.p = map[string]*Node{}
		for i, p := range params {
			n.p[p.Name] = in[2+i]
		}
		anchor := AddScalar(Const(g, tensorOf(make([]int32, l), l)), -1)
		o := n.forward(in[0], func(*Node) *Node { return in[1] }, anchor, Scalar(g, in[0].DType(), 1))
		forgetBMM(g)
		return []*Node{o.Zraw, o.Fspa, o.Zspa, o.Zdiff, o.S, InsertAxes(o.Gtilde, -1), o.U, o.Zcal}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	args := []any{tensorOf(x, xdims...), tensorOf(f32(protos.Data), rc.K, rc.D)}
	for _, p := range params {
		args = append(args, tensorOf(p.Data, p.Shape...))
	}
	out, err := exec.Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"Z_raw", "", "Z_spa", "Z_diff", "S", "G_t", "U", "Z_cal"}
	for i, name := range names {
		if name == "" {
			continue
		}
		got := tensors.MustCopyFlatData[float32](out[i]) // [L, C]
		want := ref.Outputs[name]                        // [C, h, w]
		ch := want.Shape[0]
		if len(got) != l*ch || len(want.Data) != l*ch {
			t.Fatalf("%s: %d values, reference %d (%v)", name, len(got), len(want.Data), want.Shape)
		}
		worst, at := 0.0, 0
		for c := 0; c < ch; c++ {
			for j := 0; j < l; j++ {
				if e := math.Abs(float64(got[j*ch+c]) - want.Data[c*l+j]); e > worst {
					worst, at = e, c*l+j
				}
			}
		}
		t.Logf("%-6s max |pnec - reference| = %.2e", name, worst)
		if worst > 1e-4 {
			t.Errorf("%s: max difference %.3g at [%d, %d, %d] (reference %.6g), want <= 1e-4", name, worst, at/l, at%l/ws, at%ws, want.Data[at])
		}
	}
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// paramsFromReference maps the reference's state_dict (PyTorch layouts)
// onto pnec's weights, in initParams' order.
func paramsFromReference(ref *refFile, d dims, cfg Config) (paramSet, error) {
	want := initParams(d, cfg, nil)
	embed, embedGN := "embed.0", "embed.1"
	if cfg.Encoder == EncoderCell {
		embed, embedGN = "embed.1", "embed.2" // embed.0 is the 4x4 AvgPool
	}
	get := func(name string) (refTensor, error) {
		t, ok := ref.Params[name]
		if !ok {
			return t, fmt.Errorf("reference has no %s", name)
		}
		return t, nil
	}
	// conv1x1 [out, in, 1, 1] or linear [out, in] -> [in, out]
	transposed := func(name string) ([]float32, error) {
		t, err := get(name)
		if err != nil {
			return nil, err
		}
		out, in := t.Shape[0], len(t.Data)/t.Shape[0]
		v := make([]float32, len(t.Data))
		for o := 0; o < out; o++ {
			for i := 0; i < in; i++ {
				v[i*out+o] = float32(t.Data[o*in+i])
			}
		}
		return v, nil
	}
	plain := func(name string) ([]float32, error) {
		t, err := get(name)
		if err != nil {
			return nil, err
		}
		return f32(t.Data), nil
	}
	src := map[string]func() ([]float32, error){
		"embed.w":    func() ([]float32, error) { return transposed(embed + ".weight") },
		"embed.b":    func() ([]float32, error) { return plain(embed + ".bias") },
		"embed.gn.g": func() ([]float32, error) { return plain(embedGN + ".weight") },
		"embed.gn.b": func() ([]float32, error) { return plain(embedGN + ".bias") },
		"conv.w": func() ([]float32, error) { // [out, in, 3, 3] -> [(ky*3+kx)*in + i, out]
			t, err := get("down.0.weight")
			if err != nil {
				return nil, err
			}
			out, in := t.Shape[0], t.Shape[1]
			v := make([]float32, len(t.Data))
			for o := 0; o < out; o++ {
				for i := 0; i < in; i++ {
					for k := 0; k < 9; k++ {
						v[(k*in+i)*out+o] = float32(t.Data[(o*in+i)*9+k])
					}
				}
			}
			return v, nil
		},
		"conv.b":    func() ([]float32, error) { return plain("down.0.bias") },
		"conv.gn.g": func() ([]float32, error) { return plain("down.1.weight") },
		"conv.gn.b": func() ([]float32, error) { return plain("down.1.bias") },
		"diff.a":    func() ([]float32, error) { return plain("diff_alpha") },
		"fuse.w":    func() ([]float32, error) { return plain("fuse_w") },
		"head.1.w":  func() ([]float32, error) { return transposed("cls_head.0.weight") },
		"head.1.b":  func() ([]float32, error) { return plain("cls_head.0.bias") },
		"head.gn.g": func() ([]float32, error) { return plain("cls_head.1.weight") },
		"head.gn.b": func() ([]float32, error) { return plain("cls_head.1.bias") },
		"head.2.w":  func() ([]float32, error) { return transposed("cls_head.3.weight") },
		"head.2.b":  func() ([]float32, error) { return plain("cls_head.3.bias") },
		"tau":       func() ([]float32, error) { return plain("tau") },
		"gate.w":    func() ([]float32, error) { return plain("u_fuse.weight") },
		"gate.b":    func() ([]float32, error) { return plain("u_fuse.bias") },
	}
	for br, names := range map[string][3]string{"spa": {"spa_mamba", "spa_proj", "head_spa"}, "diff": {"diff_mamba", "diff_proj", "head_diff"}} {
		mb, proj, aux := names[0], names[1], names[2]
		src[br+".in.w"] = func() ([]float32, error) { return transposed(mb + ".in_proj.weight") }
		src[br+".conv1d.w"] = func() ([]float32, error) { return transposed(mb + ".conv1d.weight") } // [ch, 1, k] -> [k, ch]
		src[br+".conv1d.b"] = func() ([]float32, error) { return plain(mb + ".conv1d.bias") }
		src[br+".dtbias"] = func() ([]float32, error) { return plain(mb + ".dt_bias") }
		src[br+".alog"] = func() ([]float32, error) { return plain(mb + ".A_log") }
		src[br+".dskip"] = func() ([]float32, error) { return plain(mb + ".D") }
		src[br+".out.w"] = func() ([]float32, error) { return transposed(mb + ".out_proj.weight") }
		src[br+".gn.g"] = func() ([]float32, error) { return plain(proj + ".0.weight") }
		src[br+".gn.b"] = func() ([]float32, error) { return plain(proj + ".0.bias") }
		src[br+".aux.w"] = func() ([]float32, error) { return transposed(aux + ".weight") }
		src[br+".aux.b"] = func() ([]float32, error) { return plain(aux + ".bias") }
	}
	for _, ev := range []string{"gpos", "gneg"} {
		r := map[string]string{"gpos": "g_pos", "gneg": "g_neg"}[ev]
		src[ev+".1.w"] = func() ([]float32, error) { return transposed(r + ".0.weight") }
		src[ev+".1.b"] = func() ([]float32, error) { return plain(r + ".0.bias") }
		src[ev+".2.w"] = func() ([]float32, error) { return transposed(r + ".2.weight") }
		src[ev+".2.b"] = func() ([]float32, error) { return plain(r + ".2.bias") }
	}
	out := make(paramSet, len(want))
	for i, p := range want {
		f, ok := src[p.Name]
		if !ok {
			return nil, fmt.Errorf("no reference source for pnec weight %s", p.Name)
		}
		v, err := f()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		if len(v) != numel(p.Shape) {
			return nil, fmt.Errorf("%s: %d values from the reference, want %v", p.Name, len(v), p.Shape)
		}
		out[i] = param{Name: p.Name, Shape: p.Shape, Data: v}
	}
	return out, nil
}
