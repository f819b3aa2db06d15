package model

// Training augmentation on the device. The host path
// (augmenter.next, nextScene) changes the whole scene on the host and sends
// the network input of every augmented step to the backend: at Pavia size
// 21 million noise draws and an 85 MB copy per step, most of what a GPU
// training run spent. augGraph does the same work in a compiled graph: the
// raw scene goes up once (rawTensor: int16 when its values are integers),
// and each step sends only its change (a bandPlan: six numbers per band),
// the sub-area's rectangle and a noise seed; the graph makes the changed
// scene, its network input and masks (prepNodes) and the step's training
// targets, all left on the device for the training step.
//
// The graph's noise is a hash of a per-step seed (drawn from a stream of
// its own), the pixel and the band (noiseNodes): the same on every
// backend. The host draws its noise from the augmenter's stream between
// the changes, so with noise the two paths see different (equally
// distributed) steps. The Go backend keeps the host path by default, so
// that its training results stay as they were; XLA backends take the graph
// (PrepInGraph). PNEC_TRAIN_AUGMENT=graph|host chooses either on any
// backend.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/pnec/pnec/model/backend"
)

// TrainAugmentEnv names the environment variable that chooses where
// training's augmentation runs when TrainOptions.AugmentWhere does not:
// "graph" (in a compiled graph feeding the training step, augGraph; the
// default on XLA) or "host" (the default on the Go backend).
const TrainAugmentEnv = "PNEC_TRAIN_AUGMENT"

// augmentInGraph says whether training on backend desc augments in the
// graph: where (TrainOptions.AugmentWhere), else TrainAugmentEnv, else
// desc.PrepInGraph.
func augmentInGraph(desc backend.Backend, where string) (bool, error) {
	name := "augment where"
	if where == "" {
		where, name = os.Getenv(TrainAugmentEnv), TrainAugmentEnv
	}
	switch where {
	case "":
		return desc.PrepInGraph(), nil
	case "graph":
		return true, nil
	case "host":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: want graph or host", name, where)
	}
}

// augGraphBuilds counts the builds (so compilations) of augGraph's graph;
// tests check that epochs do not rebuild it.
var augGraphBuilds atomic.Int64

// augGraph makes the training step's inputs of augmented steps on the
// backend (see the top of this file).
type augGraph struct {
	exec  *Exec
	bands int
	rows  int
	cols  int
	// resident are the graph's constant inputs, sent once: the raw scene
	// and its valid mask, the stretch (lo, scale), the band means the
	// offset and noise are relative to, and the training pixels (their
	// pixel index, cell and dense class).
	resident []*tensors.Tensor
	means    []float64
	noise    *rand.Rand        // each step's noise seed
	held     []*tensors.Tensor // the current step's outputs, released by done
}

// augOut are one step's inputs made by augGraph (trainData's fields).
type augOut struct {
	x                     *tensors.Tensor
	masks                 []*tensors.Tensor
	anchor, ytr, cellMask *tensors.Tensor
}

// Inputs of augGraph's graph after the resident ones: the band plan's
// integers [2, B] (src, src2) and floats [4, B] (w2, factor, offset,
// sigma), the sub-area [4] (r0, r1, c0, c1) and the noise's seed [3]
// (uint32, noiseNodes).
const augResident = 7

func newAugGraph(b compute.Backend, s Scene, in inputSpec, encoder string, trainIdx []int, ytrain []int32, classes int, seed int64) (*augGraph, error) {
	hs, ws := lowRes(s.Rows, encoder), lowRes(s.Cols, encoder)
	pix := make([]int32, len(trainIdx))
	cell := make([]int32, len(trainIdx))
	for t, i := range trainIdx {
		r, c := i/s.Cols, i%s.Cols
		pix[t] = int32(i)
		cell[t] = int32(min(r/Stride, hs-1)*ws + min(c/Stride, ws-1)) // as trainTargets
	}
	ag := &augGraph{bands: s.Bands, rows: s.Rows, cols: s.Cols, means: BandMeans(s),
		noise: rand.New(rand.NewPCG(uint64(seed), 0x6e6f697365))}
	raw, valid := rawTensor(s)
	ag.resident = []*tensors.Tensor{raw, valid, tensorOf(in.lo, len(in.lo)), tensorOf(in.scale, len(in.scale)),
		tensorOf(pix, len(pix)), tensorOf(cell, len(cell)), tensorOf(ytrain, len(ytrain))}
	exec, err := NewExec(b, func(g *Graph, nodes []*Node) []*Node {
		augGraphBuilds.Add(1)
		raw, valid, lo, scale := nodes[0], nodes[1], nodes[2], nodes[3]
		pix, cell, y := nodes[4], nodes[5], nodes[6]
		p := nodes[augResident:]
		v, validStep := augNodes(raw, valid, p[0], p[1], p[2], p[3])
		x, masks := prepNodes(v, validStep, lo, scale, in, encoder)
		anchor, ytr := targetNodes(validStep, pix, cell, y, hs*ws, classes)
		return append([]*Node{x, anchor, ytr}, masks...)
	})
	if err != nil {
		ag.finalize()
		return nil, err
	}
	ag.exec = exec.WithName("pnec_train_augment")
	return ag, nil
}

// augNodes change the raw scene raw [R, C, B] by the band plan bandI [2, B]
// (int32: src, src2) and bandF [4, B] (float32: w2, factor, offset, sigma)
// as Radiometric.applyInto does, with the noise of seed (noiseNodes), and
// cut the valid mask valid [R, C] (bool) to the sub-area rect [4] (int32:
// rows [r0, r1), columns [c0, c1)). Invalid pixels keep their values, as
// on the host.
func augNodes(raw, valid, bandI, bandF, rect, seed *Node) (v, validStep *Node) {
	g := raw.Graph()
	dims := raw.Shape().Dimensions
	rows, cols, bands := dims[0], dims[1], dims[2]
	n := rows * cols
	in := ConvertDType(Reshape(raw, n, bands), dtypes.Float32)
	row := func(m *Node, i int) *Node { return Reshape(Slice(m, AxisElem(i)), 1, bands) }
	// band gathers in[:, idx[b]] for each output band b.
	band := func(idx *Node) *Node {
		return BackendGather(in, Reshape(idx, bands, 1), 1, []int{0}, []int{1}, []int{1}, []int{n, 1}, false)
	}
	x1, x2 := band(row(bandI, 0)), band(row(bandI, 1))
	w2, factor, offset, sigma := row(bandF, 0), row(bandF, 1), row(bandF, 2), row(bandF, 3)
	// The host skips the interpolation where w2 is 0 (a NaN in the other
	// band stays out).
	lerp := Where(BroadcastToDims(NotEqual(w2, ZerosLike(w2)), n, bands), Add(x1, Mul(w2, Sub(x2, x1))), x1)
	out := Add(Mul(factor, lerp), offset)
	out = Add(out, Mul(sigma, noiseNodes(g, seed, n, bands)))
	validN := BroadcastToDims(Reshape(valid, n, 1), n, bands)
	v = Reshape(Where(validN, out, in), rows, cols, bands)

	r := Iota(g, shapes.Make(dtypes.Int32, rows, cols), 0)
	c := Iota(g, shapes.Make(dtypes.Int32, rows, cols), 1)
	at := func(i int) *Node { return Reshape(Slice(rect, AxisElem(i)), 1, 1) }
	inside := LogicalAnd(LogicalAnd(GreaterOrEqual(r, at(0)), LessThan(r, at(1))),
		LogicalAnd(GreaterOrEqual(c, at(2)), LessThan(c, at(3))))
	return v, LogicalAnd(valid, inside)
}

// noiseNodes is standard normal noise [n, bands] for pixel i and band b
// given by noiseAt(seed, i, b): a counter-based hash of the seed [3]
// (uint32), the pixel and the band, then Box-Muller. Unlike the backends'
// random bit generators (PCG on the Go backend, Philox on XLA) it is the
// same on every backend, so an augmented step is the same scene wherever
// it is made, and a test can compute it on the host.
func noiseNodes(g *Graph, seed *Node, n, bands int) *Node {
	s := func(i int) *Node { return Reshape(Slice(seed, AxisElem(i)), 1, 1) }
	pix := Iota(g, shapes.Make(dtypes.Uint32, n, 1), 0)
	band := Iota(g, shapes.Make(dtypes.Uint32, 1, bands), 1)
	k := lowbias32Node(Add(pix, s(0)))
	h1 := lowbias32Node(BitwiseXor(k, Add(MulScalar(band, uint32(noiseBandMul)), s(1))))
	h2 := lowbias32Node(BitwiseXor(h1, s(2)))
	unit := func(h *Node) *Node { // the top 24 bits as a float32 in [0, 1), exactly
		return MulScalar(ConvertDType(BitwiseShiftRightLogicalScalar(h, uint32(8)), dtypes.Float32), 1.0/(1<<24))
	}
	u1 := AddScalar(unit(h1), 0.5/(1<<24)) // (0, 1): the log is finite
	u2 := unit(h2)
	return Mul(Sqrt(MulScalar(Log(u1), -2)), Cos(MulScalar(u2, 2*math.Pi)))
}

// noiseBandMul spreads the bands over the hash's input (the golden ratio's
// 32-bit fraction).
const noiseBandMul = 0x9e3779b9

// lowbias32Node is lowbias32 on uint32 nodes.
func lowbias32Node(x *Node) *Node {
	x = BitwiseXor(x, BitwiseShiftRightLogicalScalar(x, uint32(16)))
	x = MulScalar(x, uint32(0x7feb352d))
	x = BitwiseXor(x, BitwiseShiftRightLogicalScalar(x, uint32(15)))
	x = MulScalar(x, uint32(0x846ca68b))
	return BitwiseXor(x, BitwiseShiftRightLogicalScalar(x, uint32(16)))
}

// lowbias32 is Chris Wellons' 32-bit integer hash (a full-avalanche mix of
// xor-shifts and multiplications).
func lowbias32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// noiseAt is noiseNodes' value for pixel pix and band b, computed on the
// host in float64 (the graph computes in float32: they agree to about
// 1e-6).
func noiseAt(seed [3]uint32, pix, b uint32) float64 {
	k := lowbias32(pix + seed[0])
	h1 := lowbias32(k ^ (b*noiseBandMul + seed[1]))
	h2 := lowbias32(h1 ^ seed[2])
	u1 := (float64(h1>>8) + 0.5) / (1 << 24)
	u2 := float64(h2>>8) / (1 << 24)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// targetNodes are trainTargets in the graph for the step's valid mask
// valid [R, C] (bool): the training pixels' classes ytr [Ntr] (-1 for a
// pixel not valid in the step) and the anchors [cells] (the class of the
// last valid training pixel in each cell, else -1), from the training
// pixels' index pix, cell and dense class y [Ntr] (int32).
func targetNodes(valid, pix, cell, y *Node, cells, classes int) (anchor, ytr *Node) {
	g := valid.Graph()
	ntr := pix.Shape().Dimensions[0]
	dims := valid.Shape().Dimensions
	keep := Gather(Reshape(valid, dims[0]*dims[1]), Reshape(pix, ntr, 1))
	minus := func(nn int) *Node { return AddScalar(Zeros(g, shapes.Make(dtypes.Int32, nn)), -1) }
	ytr = Where(keep, y, minus(ntr))
	// The last pixel wins: the largest t*classes+y of a cell names both.
	t := Iota(g, shapes.Make(dtypes.Int32, ntr), 0)
	key := Where(keep, Add(MulScalar(t, classes), y), minus(ntr))
	best := ScatterMax(minus(cells), Reshape(cell, ntr, 1), key, false, false)
	anchor = Where(GreaterOrEqual(best, ZerosLike(best)), ModScalar(best, classes), minus(cells))
	return anchor, ytr
}

// step makes the inputs of an augmented step st on the backend; they stay
// valid until done.
func (ag *augGraph) step(st augDraw) (augOut, error) {
	p := st.r.plan(ag.bands, ag.means)
	bandI := append(append(make([]int32, 0, 2*ag.bands), p.src...), p.src2...)
	bandF := make([]float32, 0, 4*ag.bands)
	bandF = append(append(append(bandF, p.w2...), p.factor...), p.offset...)
	for _, s := range p.sigma {
		bandF = append(bandF, float32(s))
	}
	rect := []int32{0, int32(ag.rows), 0, int32(ag.cols)}
	if st.crop {
		rect = []int32{int32(st.r0), int32(st.r1), int32(st.c0), int32(st.c1)}
	}
	seed := []uint32{ag.noise.Uint32(), ag.noise.Uint32(), ag.noise.Uint32()}
	small := []*tensors.Tensor{tensorOf(bandI, 2, ag.bands), tensorOf(bandF, 4, ag.bands), tensorOf(rect, 4),
		tensors.FromFlatDataAndDimensions(seed, len(seed))}
	args := make([]any, 0, augResident+len(small))
	for _, t := range ag.resident {
		args = append(args, t)
	}
	for _, t := range small {
		args = append(args, t)
	}
	out, err := ag.exec.Call(args...)
	for _, t := range small {
		t.FinalizeAll()
	}
	if err != nil {
		return augOut{}, err
	}
	ag.held = append(ag.held, out...)
	masks := out[3:]
	return augOut{x: out[0], anchor: out[1], ytr: out[2], masks: masks, cellMask: masks[len(masks)-1]}, nil
}

// clean makes the clean scene's step inputs (the identity, whole scene, no
// noise) into td, in place of its own; they live as long as td.
func (ag *augGraph) clean(td *trainData) error {
	o, err := ag.step(augDraw{})
	if err != nil {
		return err
	}
	ag.held = ag.held[:0] // td owns them now
	for _, t := range append([]*tensors.Tensor{td.x, td.anchor, td.ytr, td.cellMask}, td.masks...) {
		if t != nil {
			t.FinalizeAll()
		}
	}
	td.x, td.masks, td.anchor, td.ytr, td.cellMask = o.x, o.masks, o.anchor, o.ytr, o.cellMask
	return nil
}

// done releases the current step's inputs.
func (ag *augGraph) done() {
	for _, t := range ag.held {
		t.FinalizeAll()
	}
	ag.held = ag.held[:0]
}

func (ag *augGraph) finalize() {
	ag.done()
	for _, t := range ag.resident {
		t.FinalizeAll()
	}
	ag.resident = nil
	if ag.exec != nil {
		ag.exec.Finalize()
		ag.exec = nil
	}
}
