package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/progress"
)

// augCases are radiometric changes of every kind (each tilt shape,
// fractional and negative band shifts, reversal, offset) and 30 drawn from
// wide bounds, all without noise, each with a sub-area or the whole scene.
func augCases(rows, cols int) []augDraw {
	cases := []augDraw{
		{r: Radiometric{}},
		{r: Radiometric{Gain: 0.7, Tilt: 0.2, TiltShape: TiltBow, Offset: 0.04}},
		{r: Radiometric{Tilt: -0.15, TiltShape: TiltWave, BandShift: -2.3}},
		{r: Radiometric{Reverse: true, BandShift: 0.5, Offset: -0.05}},
		{r: Radiometric{BandShift: 1}, crop: true, r0: 0, r1: rows, c0: 8, c1: cols},
		// Not at a multiple of Stride (augmentation cuts there, the graph
		// does not rely on it): cells straddle the edge.
		{r: Radiometric{Tilt: 0.1}, crop: true, r0: 3, r1: rows - 2, c0: 0, c1: cols - 5},
	}
	a := Augment{Prob: 1, Gain: 0.3, Tilt: 0.25, Offset: 0.05, BandShift: 2}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 30 {
		st := augDraw{r: a.draw(rng), r0: 0, r1: rows, c0: 0, c1: cols}
		if i%2 == 1 {
			st.crop = true
			if i%4 == 1 {
				st.r1 = 4 * (1 + rng.IntN(rows/4-1))
			} else {
				st.c0 = 4 * (1 + rng.IntN(cols/4-1))
			}
		}
		cases = append(cases, st)
	}
	return cases
}

// cropScene is s with its valid mask cut to st's sub-area.
func cropScene(s Scene, st augDraw) Scene {
	if !st.crop {
		return s
	}
	v := make([]bool, s.Rows*s.Cols)
	for i := range v {
		r, c := i/s.Cols, i%s.Cols
		v[i] = s.valid(i) && r >= st.r0 && r < st.r1 && c >= st.c0 && c < st.c1
	}
	s.Valid = v
	return s
}

// sameRel reports the largest |got-want| / max(1, |want|), NaN equal to NaN.
func sameRel(got, want []float32) (float64, int) {
	worst, at := 0.0, -1
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) && math.IsNaN(w) {
			continue
		}
		if d := math.Abs(g-w) / math.Max(1, math.Abs(w)); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	return worst, at
}

// augSceneExec compiles augNodes alone: the changed scene and the step's
// valid mask.
func augSceneExec(t *testing.T) *Exec {
	t.Helper()
	e, err := NewExec(testBackend(t), func(g *Graph, in []*Node) []*Node {
		v, valid := augNodes(in[0], in[1], in[2], in[3], in[4], in[5])
		return []*Node{v, valid}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Finalize)
	return e
}

// callAugScene runs augNodes on s for st with noise seed seed.
func callAugScene(t *testing.T, e *Exec, s Scene, st augDraw, means []float64, seed [3]uint32) ([]float32, []bool) {
	t.Helper()
	p := st.r.plan(s.Bands, means)
	bandI := append(append([]int32{}, p.src...), p.src2...)
	bandF := append(append(append(append([]float32{}, p.w2...), p.factor...), p.offset...), make([]float32, s.Bands)...)
	for b, sg := range p.sigma {
		bandF[3*s.Bands+b] = float32(sg)
	}
	rect := []int32{0, int32(s.Rows), 0, int32(s.Cols)}
	if st.crop {
		rect = []int32{int32(st.r0), int32(st.r1), int32(st.c0), int32(st.c1)}
	}
	raw, valid := rawTensor(s)
	out, err := e.Call(raw, valid, tensorOf(bandI, 2, s.Bands), tensorOf(bandF, 4, s.Bands), tensorOf(rect, 4),
		tensors.FromFlatDataAndDimensions(seed[:], 3))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[bool](out[1])
}

// TestAugNodesMatchHost: with the same change, the scene the graph makes
// (augNodes) equals the host's (Radiometric.applyInto) to 1e-6 of each
// value, and its valid mask is the sub-area's; from integer and float scenes.
func TestAugNodesMatchHost(t *testing.T) {
	e := augSceneExec(t)
	for _, floats := range []bool{false, true} {
		s := rawScene(19, 22, 7, floats, 3)
		means := BandMeans(s)
		for k, st := range augCases(s.Rows, s.Cols) {
			got, valid := callAugScene(t, e, s, st, means, [3]uint32{1, 2, 3})
			want := make([]float32, len(s.Data))
			st.r.applyInto(want, s, means, nil)
			if d, at := sameRel(got, want); d > 1e-6 {
				t.Errorf("floats=%v case %d (%s): value %d is %g in the graph, %g on the host (rel. diff %g)", floats, k, st.r, at, got[at], want[at], d)
			}
			cs := cropScene(s, st)
			for i, v := range valid {
				if v != cs.valid(i) {
					t.Fatalf("floats=%v case %d: pixel %d valid %v in the graph, %v on the host", floats, k, i, v, cs.valid(i))
				}
			}
		}
	}
}

// TestAugNodesNoise: the graph's noise is noiseAt's (the host's
// computation of the same hash) times the host's standard deviation (Noise
// x the band's mean), to 1e-5 sigma; per band it has mean 0 and
// standard deviation 1 (in sigma) within 0.1, about 4.6% of it lies beyond
// 2 sigma, neighbouring bands and pixels are uncorrelated; invalid pixels
// get none; the same seed gives the same noise and another seed other
// noise.
func TestAugNodesNoise(t *testing.T) {
	e := augSceneExec(t)
	s := rawScene(60, 50, 5, false, 4)
	means := BandMeans(s)
	st := augDraw{r: Radiometric{Noise: 0.05, Tilt: 0.1}}
	clean := make([]float32, len(s.Data))
	st.r.applyInto(clean, s, means, nil)
	seed := [3]uint32{7, 0x9000_0001, 12345}
	got, _ := callAugScene(t, e, s, st, means, seed)
	again, _ := callAugScene(t, e, s, st, means, seed)
	other, _ := callAugScene(t, e, s, st, means, [3]uint32{8, 0x9000_0001, 12345})
	if d, _ := sameRel(again, got); d != 0 {
		t.Errorf("the same seed gave other noise (rel. diff %g)", d)
	}
	if d, _ := sameRel(other, got); d == 0 {
		t.Error("another seed gave the same noise")
	}
	p := st.r.plan(s.Bands, means)
	want := make([]float32, len(clean))
	z := make([]float64, len(clean))
	for i := range s.Rows * s.Cols {
		for b := range s.Bands {
			j := i*s.Bands + b
			want[j] = clean[j]
			if s.valid(i) {
				z[j] = noiseAt(seed, uint32(i), uint32(b))
				want[j] += float32(p.sigma[b] * z[j])
			}
		}
	}
	// In sigma: the graph's Box-Muller in float32 and the rounding of values
	// near 2000 (1.2e-4) over sigma near 100 allow about 2e-6.
	worst, at := 0.0, -1
	for j := range got {
		if p.sigma[j%s.Bands] == 0 {
			continue
		}
		if d := math.Abs(float64(got[j]-want[j])) / p.sigma[j%s.Bands]; d > worst {
			worst, at = d, j
		}
	}
	if worst > 1e-5 {
		t.Errorf("value %d: %g in the graph, %g with noiseAt on the host: the noise differs by %.3g sigma", at, got[at], want[at], worst)
	}
	var beyond, total float64
	for b := range s.Bands {
		var n, sum, sq, crossBand, crossPix float64
		for i := range s.Rows * s.Cols {
			if !s.valid(i) {
				continue
			}
			v := z[i*s.Bands+b]
			n++
			sum += v
			sq += v * v
			if math.Abs(v) > 2 {
				beyond++
			}
			if b > 0 {
				crossBand += v * z[i*s.Bands+b-1]
			}
			if i > 0 {
				crossPix += v * z[(i-1)*s.Bands+b]
			}
		}
		total += n
		mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
		if math.Abs(mean) > 0.1 || math.Abs(sd-1) > 0.1 || math.Abs(crossBand/n) > 0.1 || math.Abs(crossPix/n) > 0.1 {
			t.Errorf("band %d: noise mean %.3f sd %.3f, correlation with the band before %.3f, with the pixel before %.3f; want 0, 1, 0, 0",
				b, mean, sd, crossBand/n, crossPix/n)
		}
	}
	if share := beyond / total; share < 0.035 || share > 0.057 {
		t.Errorf("%.2f%% of the noise beyond 2 sigma, want about 4.55%%", 100*share)
	}
}

// TestAugGraphStepMatchesHost: a step made by augGraph (the network input,
// masks, anchors, training classes and valid cells) equals the host's for
// the same change: the scene changed by applyInto and cut to the sub-area,
// then netInput, netMasks and trainTargets. Both encoders, the shape and
// stretch inputs, integer and float scenes.
func TestAugGraphStepMatchesHost(t *testing.T) {
	b := testBackend(t)
	for _, floats := range []bool{false, true} {
		s := rawScene(23, 26, 6, floats, 9)
		lo, hi, err := bandStretch(s)
		if err != nil {
			t.Fatal(err)
		}
		var trainIdx []int
		var ytrain []int32
		for i := 0; i < s.Rows*s.Cols; i += 7 {
			if s.valid(i) {
				trainIdx = append(trainIdx, i)
				ytrain = append(ytrain, int32(i%3))
			}
		}
		means := BandMeans(s)
		for _, mode := range []string{InputShape, InputStretch} {
			for _, enc := range []string{EncoderPaper, EncoderCell} {
				t.Run(fmt.Sprintf("floats=%v/%s/%s", floats, mode, enc), func(t *testing.T) {
					in := newInputSpec(mode, 0, lo, hi)
					ag, err := newAugGraph(b, s, in, enc, trainIdx, ytrain, 3, 1)
					if err != nil {
						t.Fatal(err)
					}
					defer ag.finalize()
					for k, st := range augCases(s.Rows, s.Cols) {
						o, err := ag.step(st)
						if err != nil {
							t.Fatal(err)
						}
						hs := cropScene(s, st)
						hs.Data = make([]float32, len(s.Data))
						st.r.applyInto(hs.Data, s, means, nil)
						x, _ := netInput(hs, in, enc)
						masks := netMasks(hs, enc)
						anchor, ytr := trainTargets(hs, enc, trainIdx, ytrain)
						if len(o.masks) != len(masks) {
							t.Fatalf("case %d: %d masks, want %d", k, len(o.masks), len(masks))
						}
						check := func(name string, got, want []float32) {
							if d, at := maxDiffAt(got, want); d > 1e-6 || len(got) != len(want) {
								t.Errorf("case %d (%s): %s differs by %g at %d (%d values, want %d)", k, st.r, name, d, at, len(got), len(want))
							}
						}
						check("input", tensors.MustCopyFlatData[float32](o.x), x)
						for j := range masks {
							check(fmt.Sprintf("mask %d", j), tensors.MustCopyFlatData[float32](o.masks[j]), masks[j])
						}
						check("valid cells", tensors.MustCopyFlatData[float32](o.cellMask), masks[len(masks)-1])
						for name, pair := range map[string][2][]int32{"anchors": {tensors.MustCopyFlatData[int32](o.anchor), anchor}, "training classes": {tensors.MustCopyFlatData[int32](o.ytr), ytr}} {
							got, want := pair[0], pair[1]
							for i := range want {
								if got[i] != want[i] {
									t.Fatalf("case %d: %s[%d] = %d in the graph, %d on the host", k, name, i, got[i], want[i])
								}
							}
						}
						ag.done()
					}
				})
			}
		}
	}
}

// TestTrainAugmentGraphMatchesHost: training with the augmentation in the
// graph (as on XLA) follows the host's augmentation step by step when the
// augmentation draws no noise (the one draw the two paths take from
// different streams): the same changes and sub-areas, so the same losses
// epoch by epoch and weights to float32 rounding grown over the steps
// (the bounds of TestTrainKernelsMatchGraph). Both encoders (the paper
// encoder all in the graph on both paths), per-image and clean-scene
// statistics. With noise (the default augmentation) the graph path is
// deterministic for a seed.
func TestTrainAugmentGraphMatchesHost(t *testing.T) {
	defer func(v bool) { useFullRes = v }(useFullRes)
	useFullRes = false
	s, labels := synthScene(26, 30, 8, 3, 12)
	s.Valid = make([]bool, s.Rows*s.Cols)
	for i := range s.Valid {
		s.Valid[i] = i%29 != 3
	}
	noNoise := DefaultAugment
	noNoise.Noise = 0
	train := func(t *testing.T, cfg Config, where string) (*Model, []float64) {
		t.Setenv(TrainAugmentEnv, where)
		var losses []float64
		builds := augGraphBuilds.Load()
		m, err := Train(t.Context(), s, labels, TrainOptions{Config: cfg, TrainPerClass: 6, Backend: "go",
			Progress: func(e progress.Event) { l, _ := e.Metric("loss"); losses = append(losses, l) }})
		if err != nil {
			t.Fatal(err)
		}
		if n, want := augGraphBuilds.Load()-builds, map[string]int64{"host": 0, "graph": 1}[where]; n != want {
			t.Fatalf("%s=%s: the augmentation graph was built %d times, want %d", TrainAugmentEnv, where, n, want)
		}
		return m, losses
	}
	for _, enc := range []string{EncoderPaper, EncoderCell} {
		for _, imageNorm := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/imagenorm=%v", enc, imageNorm), func(t *testing.T) {
				cfg := tinyConfig(10)
				cfg.Encoder, cfg.Augment = enc, noNoise
				cfg.Augment.ImageNorm = imageNorm
				mh, lh := train(t, cfg, "host")
				mg, lg := train(t, cfg, "graph")
				for e := range lh {
					if d := math.Abs(lh[e] - lg[e]); d > 1e-4*math.Max(1, math.Abs(lh[e])) {
						t.Errorf("epoch %d: loss %.7g with the host's augmentation, %.7g with the graph's", e+1, lh[e], lg[e])
					}
				}
				worst := 0.0
				for i := range mh.params {
					if d, _ := maxDiffAt(mh.params[i].Data, mg.params[i].Data); d > worst {
						worst = d
					}
				}
				t.Logf("losses %.6g .. %.6g; largest weight difference %.2g", lh[0], lh[len(lh)-1], worst)
				if worst > 1e-3 {
					t.Errorf("weights differ by up to %.3g", worst)
				}
			})
		}
	}
	t.Run("noise deterministic", func(t *testing.T) {
		cfg := tinyConfig(6)
		cfg.Encoder = EncoderCell
		a, _ := train(t, cfg, "graph")
		b, _ := train(t, cfg, "graph")
		for i := range a.params {
			if d, _ := maxDiffAt(a.params[i].Data, b.params[i].Data); d != 0 {
				t.Fatalf("%s differs by %g between two runs of one seed", a.params[i].Name, d)
			}
		}
	})
}

// TestTrainAugmentEnv: a bad PNEC_TRAIN_AUGMENT is refused naming it.
func TestTrainAugmentEnv(t *testing.T) {
	s, labels := synthScene(12, 12, 4, 2, 3)
	t.Setenv(TrainAugmentEnv, "gpu")
	_, err := Train(t.Context(), s, labels, TrainOptions{Config: tinyConfig(1), Backend: "go"})
	if err == nil || !strings.Contains(err.Error(), TrainAugmentEnv+`="gpu": want graph or host`) {
		t.Errorf("err = %v, want one naming %s", err, TrainAugmentEnv)
	}
}

// BenchmarkTrainAugmentPaviaU times making one augmented training step's
// input at Pavia University's size with the default augmentation's kind of
// change (a bow tilt, an offset, 2% noise, a fractional band shift) on the
// upper half of the scene: on the host (the changed scene, its network
// input and the sub-area's masks and targets, as Train does on the Go
// backend) and in the augmentation graph (augGraph, as on XLA), each on
// the Go backend. The training step itself is BenchmarkTrainStepPaviaU.
func BenchmarkTrainAugmentPaviaU(b *testing.B) {
	s, labels := benchScene()
	_, _, _, k := benchSize()
	idx, y := benchSplit(labels)
	cfg := DefaultConfig()
	lo, hi, err := bandStretch(s)
	if err != nil {
		b.Fatal(err)
	}
	in := newInputSpec(cfg.Input, cfg.InputLevels, lo, hi)
	st := augDraw{r: Radiometric{Gain: 1, Tilt: 0.2, TiltShape: TiltBow, Offset: 0.03, Noise: 0.02, BandShift: 0.6},
		crop: true, r0: 0, r1: 4 * (s.Rows / 8), c0: 0, c1: s.Cols}
	b.Run("host", func(b *testing.B) {
		a := newAugmenter(cfg.Augment, s, in, cfg.Encoder, 1)
		td := newTrainData(s, in, idx, y, cfg.Encoder, false)
		defer td.finalize()
		c0 := cpuSeconds()
		for range b.N {
			changed := a.apply(st)
			x, dims := netInput(changed, in, cfg.Encoder)
			a.x = tensorOf(x, dims...)
			_ = a.cropStep(td, idx, y, false)
			a.done()
		}
		b.ReportMetric((cpuSeconds()-c0)/float64(b.N), "cpu-s/op")
	})
	b.Run("graph", func(b *testing.B) {
		ag, err := newAugGraph(testBackend(b), s, in, cfg.Encoder, idx, y, k, 1)
		if err != nil {
			b.Fatal(err)
		}
		defer ag.finalize()
		if _, err := ag.step(st); err != nil { // compile outside the timing
			b.Fatal(err)
		}
		ag.done()
		b.ResetTimer()
		c0 := cpuSeconds()
		for range b.N {
			if _, err := ag.step(st); err != nil {
				b.Fatal(err)
			}
			ag.done()
		}
		b.ReportMetric((cpuSeconds()-c0)/float64(b.N), "cpu-s/op")
	})
}

// TestAugmentWhere: TrainOptions.AugmentWhere wins over PNEC_TRAIN_AUGMENT,
// which wins over the backend's own choice; a bad value is refused naming
// where it came from.
func TestAugmentWhere(t *testing.T) {
	goB := backend.Backend{Name: "go", Kind: backend.Go}
	xlaB := backend.Backend{Name: "xla:cuda", Kind: backend.XLACUDA, Plugin: "cuda"}
	for _, tc := range []struct {
		env, where string
		b          backend.Backend
		want       bool
		err        string
	}{
		{"", "", goB, false, ""},
		{"", "", xlaB, true, ""},
		{"graph", "", goB, true, ""},
		{"graph", "host", goB, false, ""},
		{"host", "graph", xlaB, true, ""},
		{"", "gpu", goB, false, `augment where="gpu"`},
		{"gpu", "", goB, false, TrainAugmentEnv + `="gpu"`},
	} {
		t.Setenv(TrainAugmentEnv, tc.env)
		got, err := augmentInGraph(tc.b, tc.where)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("env %q, field %q: %v, want an error naming %s", tc.env, tc.where, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("env %q, field %q on %s: in graph %v, %v; want %v", tc.env, tc.where, tc.b.Name, got, err, tc.want)
		}
	}
}
