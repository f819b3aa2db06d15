package model

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
)

// graphBuilder builds the PNEC-Mamba graph from parameter nodes.
type graphBuilder struct {
	d   dims
	cfg Config
	p   map[string]*Node
	// keepGradients turns the deliberate StopGradients off: the gradient
	// test compares against finite differences, which see through them.
	keepGradients bool
	// training says that the graph will be differentiated: layers then
	// carry their closed-form gradients (withGradient), which inference
	// graphs need not pay for.
	training bool
	// fixedNorm, when non-nil, holds stored per-group mean and variance
	// ([Groups] each) for every GroupNorm call, keyed by normKey: inference
	// mode, in which the normalisation no longer depends on the input's
	// extent, so a tile is normalised exactly like the whole scene.
	fixedNorm map[string][2]*Node
	// recordNorm, when non-nil, collects the per-image statistics of each
	// GroupNorm call (the pass that derives the stored statistics).
	recordNorm *[]normRecord
	// normCalls counts GroupNorm calls per layer name during one graph
	// build (the head's norm runs twice, on raw and on calibrated features).
	normCalls map[string]int
	// masks, keyed by row count, are 1/0 valid masks [M] of the grids the
	// GroupNorms run on (netMasks): per-image statistics average only valid
	// rows, so nodata borders do not shift them.
	masks map[int]*Node
	// fused, set only for inference graphs on the Go backend, builds each
	// linear layer as the backend's FusedDense (bias added row-wise in
	// place, SiLU applied in the same pass) and folds fixed GroupNorms into
	// the preceding layer's weights: about a third of inference time went
	// to the broadcasting elementwise passes this removes. It has no
	// gradient, so training graphs never set it.
	fused bool
	// f0Input says that the graph's input is already the paper encoder's
	// output F0 [L, D] (before the low-resolution valid mask), computed by
	// pnec's own full-resolution kernels (kernels.FullRes) outside the graph.
	f0Input bool
	// ceScale, when set (training steps), scales the cross-entropy terms
	// and the training accuracy: the step's rows over its rows that are
	// training pixels (a windowed step pads its rows to a fixed count with
	// rows of class -1, which the means would otherwise count), 1 for a
	// whole-scene step.
	ceScale *Node
}

// normRecord is one GroupNorm call's per-image statistics in a graph.
type normRecord struct {
	key      string
	mean, vr *Node // [Groups]
}

// normKey names the c-th call (from 1) of the GroupNorm layer name: the
// layer name for the first, name#c after it.
func normKey(name string, c int) string {
	if c <= 1 {
		return name
	}
	return fmt.Sprintf("%s#%d", name, c)
}

// stopGradient is StopGradient unless n.keepGradients.
func (n *graphBuilder) stopGradient(x *Node) *Node {
	if n.keepGradients {
		return x
	}
	return StopGradient(x)
}

// outputs of one forward pass, all at stride 4 over the L = Hs*Ws grid cells.
type forwardOutputs struct {
	F, Fspa, Fdiff    *Node // [L, D]
	Zspa, Zdiff, Zraw *Node // [L, K]
	S, Q              *Node // [L, K]
	Cos               *Node // [L, K] cosine of F with each class's prototype (S = tau Cos)
	Gtilde            *Node // [L]
	U                 *Node // [L, 3] the gate's inputs: entropy, branch JS, prototype margin
	Zcal              *Node // [L, K]
}

func (n *graphBuilder) linear(x *Node, name string) *Node {
	if n.fused {
		return BackendFusedDense(x, n.p[name+".w"], n.p[name+".b"], compute.DenseConfig{})
	}
	return Add(mm(x, n.p[name+".w"]), ExpandLeftToRank(n.p[name+".b"], 2))
}

// linearNoBias is x W for a layer without bias (Mamba's projections).
func (n *graphBuilder) linearNoBias(x *Node, name string) *Node {
	if n.fused {
		return BackendFusedDense(x, n.p[name+".w"], nil, compute.DenseConfig{})
	}
	return mm(x, n.p[name+".w"])
}

// linearSilu is silu(linear(x, name)).
func (n *graphBuilder) linearSilu(x *Node, name string) *Node {
	if n.fused {
		return BackendFusedDense(x, n.p[name+".w"], n.p[name+".b"], compute.DenseConfig{Activation: compute.ActivationConfig{Type: compute.ActivationSilu}})
	}
	return silu(n.linear(x, name))
}

// linearNormSilu is silu(groupNorm(linear(x, lin), gn)). With n.fused and
// stored statistics for this call the normalisation is affine per channel,
// y = (x W + b) a + c with a = gamma / sqrt(var + eps) and
// c = beta - mean a, so it is folded into the layer: W a and b a + c
// (small [In, C] work) feed one fused matmul + bias + SiLU.
func (n *graphBuilder) linearNormSilu(x *Node, lin, gn string) *Node {
	if w, b, ok := n.foldNorm(lin, gn); ok {
		return BackendFusedDense(x, w, b, compute.DenseConfig{Activation: compute.ActivationConfig{Type: compute.ActivationSilu}})
	}
	if _, ok := n.p[lin+".b"]; !ok {
		return silu(n.groupNorm(n.linearNoBias(x, lin), gn))
	}
	return silu(n.groupNorm(n.linear(x, lin), gn))
}

// foldNorm gives layer lin's weights and bias with the GroupNorm gn that
// follows it folded in (see linearNormSilu), when n.fused has stored
// statistics for this call of gn; false otherwise, with nothing counted.
func (n *graphBuilder) foldNorm(lin, gn string) (w, b *Node, ok bool) {
	if !n.fused {
		return nil, nil, false
	}
	if n.normCalls == nil {
		n.normCalls = map[string]int{}
	}
	st, ok := n.fixedNorm[normKey(gn, n.normCalls[gn]+1)]
	if !ok {
		return nil, nil, false
	}
	n.normCalls[gn]++
	w, b = n.p[lin+".w"], n.p[lin+".b"] // b is nil for a layer without bias
	c := w.Shape().Dimensions[1]
	g := n.d.Groups
	dt := w.DType()
	mean := BroadcastToDims(Reshape(ConvertDType(st[0], dt), g, 1), g, c/g)
	inv := BroadcastToDims(Reshape(Inverse(Sqrt(AddScalar(ConvertDType(st[1], dt), 1e-5))), g, 1), g, c/g)
	a := Mul(Reshape(inv, c), n.p[gn+".g"])
	shift := Sub(n.p[gn+".b"], Mul(Reshape(mean, c), a))
	bf := shift
	if b != nil {
		bf = Add(Mul(b, a), shift)
	}
	return Mul(w, ExpandLeftToRank(a, 2)), bf, true
}

// conv3x3NormSilu is silu(groupNorm(conv3x3(x, lin), gn)) of x [H, W, C],
// without the [H*W, 9C] im2col matrix (im2col3x3; at Houston's cell grid
// with C = 128, 0.19 GB that the buffer pool and the collector then hold
// about twice over, and in training its adjoint as much again). Inference
// sums three products of [H*W, 3C] rows of taps with the [3C, D] blocks of
// the weights, each a Gather of pixel rows (conv3x3Taps). Training
// multiplies first and shifts the products (conv3x3Products), so that the
// weights' gradients read x itself, which the taps share, and no shifted
// copy of x is kept for the backward pass.
func (n *graphBuilder) conv3x3NormSilu(x *Node, lin, gn string) *Node {
	if !n.fused {
		return silu(n.groupNorm(conv3x3Products(x, n.p[lin+".w"], n.p[lin+".b"]), gn))
	}
	w, b, folded := n.foldNorm(lin, gn)
	if !folded {
		w, b = n.p[lin+".w"], n.p[lin+".b"]
	}
	y := conv3x3Taps(x, w, b)
	if !folded {
		y = n.groupNorm(y, gn)
	}
	return silu(y)
}

// tapIndex is, for the 3x3 tap (dy, dx) in -1..1 of an [h, w] grid, the
// row each pixel reads: the neighbour's, or out when it lies outside.
func tapIndex(h, w, dy, dx int, out int32) []int32 {
	idx := make([]int32, h*w)
	for y := range h {
		for x := range w {
			yy, xx := y+dy, x+dx
			if yy < 0 || yy >= h || xx < 0 || xx >= w {
				idx[y*w+x] = out
			} else {
				idx[y*w+x] = int32(yy*w + xx)
			}
		}
	}
	return idx
}

// conv3x3Products is conv3x3Taps computed as the sum over taps of the
// product of x with the tap's [C, D] block, shifted: a Gather of the
// product's rows (rows copied whole; its gradient is one scatter-add)
// times a 0/1 column that zeroes the neighbours outside the grid. The
// products' weight gradients need only x; the shifts need nothing of the
// forward pass.
func conv3x3Products(x, w, b *Node) *Node {
	g := x.Graph()
	h, wd, c := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	l := h * wd
	flat := Reshape(x, l, c)
	var acc *Node
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			k := (dy+1)*3 + dx + 1
			part := mm(flat, Slice(w, AxisRange(k*c, (k+1)*c)))
			if dy != 0 || dx != 0 {
				idx := tapIndex(h, wd, dy, dx, -1)
				inside := make([]float32, l)
				for i, j := range idx {
					if j >= 0 {
						inside[i] = 1
					} else {
						idx[i] = int32(i) // any row: zeroed below
					}
				}
				part = Gather(part, Const(g, tensorOf(idx, l, 1)))
				part = Mul(part, ConvertDType(Const(g, tensorOf(inside, l, 1)), part.DType()))
			}
			if acc == nil {
				acc = part
			} else {
				acc = Add(acc, part)
			}
		}
	}
	return Add(acc, ExpandLeftToRank(b, 2))
}

// conv3x3Taps is the zero-padded 3x3 convolution of x [H, W, C] with
// weights w [9C, D] (rows ordered tap (dy, dx) then channel, as the
// training form's) and bias b [D], as [H*W, D]: per row of taps dy, one
// Gather of the three shifted views' pixel rows (from x and one zero row,
// which every out-of-image neighbour reads) as [H*W, 3C], times the row's
// [3C, D] block of the weights; the three products summed one after
// another, so that one row's views are alive at a time. Three [H*W, 3C]
// products keep the matrix kernel near its speed; nine [H*W, C] ones were
// 5-8% slower at Pavia's cell grid (netbench, alternating).
func conv3x3Taps(x, w, b *Node) *Node {
	g := x.Graph()
	h, wd, c := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	l := h * wd
	src := Concatenate([]*Node{Reshape(x, l, c), Zeros(g, shapeOf(x.DType(), 1, c))}, 0) // row l is zero
	var acc *Node
	for dy := -1; dy <= 1; dy++ {
		taps := [3][]int32{}
		for dx := -1; dx <= 1; dx++ {
			taps[dx+1] = tapIndex(h, wd, dy, dx, int32(l))
		}
		idx := make([]int32, 3*l)
		for i := range l {
			idx[3*i], idx[3*i+1], idx[3*i+2] = taps[0][i], taps[1][i], taps[2][i]
		}
		ix := Const(g, tensorOf(idx, 3*l, 1))
		if acc != nil {
			// Gather after the sum so far, so that the executor does not
			// gather every row of taps up front.
			ix = after(ix, acc)
		}
		views := Reshape(Gather(src, ix), l, 3*c)
		var bias *Node
		if acc == nil {
			bias = b
		}
		k := (dy + 1) * 3
		part := BackendFusedDense(views, Slice(w, AxisRange(k*c, (k+3)*c)), bias, compute.DenseConfig{})
		if acc == nil {
			acc = part
		} else {
			acc = Add(acc, part)
		}
	}
	return acc
}

// silu is x sigmoid(x), with its gradient in closed form (see gradients.go).
func silu(x *Node) *Node {
	installGradients()
	out := Mul(x, Sigmoid(x))
	customVJPs.Store(out, func(v *Node) []*Node {
		// sigmoid(x) as 1 / (1 + exp(-x)): another op than the forward's
		// Sigmoid, which the backend would otherwise merge with it and
		// keep alive until here.
		s := Inverse(OnePlus(Exp(Neg(x))))
		return []*Node{Mul(v, Mul(s, OnePlus(Mul(x, OneMinus(s))))), nil}
	})
	return out
}

// groupNorm normalises x [M, C] over M and C/groups per group, with affine
// parameters: with the input's own statistics (training, as in the paper,
// and models without stored statistics) or with n.fixedNorm's; 1/Sqrt instead of Rsqrt because Rsqrt has no gradient in the Go backend.
func (n *graphBuilder) groupNorm(x *Node, name string) *Node {
	m, c := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	g := n.d.Groups
	if n.normCalls == nil {
		n.normCalls = map[string]int{}
	}
	n.normCalls[name]++
	key := normKey(name, n.normCalls[name])
	// The statistics are per group ([Groups]); every pass over x uses them
	// expanded to one value per channel ([1, C], perChannel), a row-broadcast
	// the Go backend runs with SIMD, where [1, G, 1] against [M, G, C/G]
	// takes its generic per-element path. Sums over the rows come first
	// (groupSums), as for the broadcasts: about 40x faster than reducing
	// [M, G, C/G] over axes 0 and 2 at once.
	var mean, variance, w, count *Node // [G] each; w, count: the valid rows' weights and count (masked statistics)
	st, fixed := n.fixedNorm[key]
	if fixed {
		mean = ConvertDType(st[0], x.DType())
		variance = ConvertDType(st[1], x.DType())
	} else if mk, ok := n.masks[m]; ok {
		w = ConvertDType(Reshape(mk, m, 1), x.DType())
		count = MaxScalar(MulScalar(ReduceAllSum(w), float64(c/g)), 1)
		mean = Div(groupSums(Mul(x, w), g), count)
		variance = Div(groupSums(Mul(Square(Sub(x, perChannel(mean, c))), w), g), count)
	} else {
		count = Scalar(x.Graph(), x.DType(), float64(m*(c/g)))
		mean = Div(groupSums(x, g), count)
		variance = Div(groupSums(Square(Sub(x, perChannel(mean, c))), g), count)
	}
	if !fixed && n.recordNorm != nil {
		*n.recordNorm = append(*n.recordNorm, normRecord{key: key, mean: mean, vr: variance})
	}
	inv := perChannel(Inverse(Sqrt(AddScalar(variance, 1e-5))), c)
	y := Mul(Sub(x, perChannel(mean, c)), inv) // x-hat [M, C]
	if !fixed && (n.training || n.keepGradients) {
		// With the input's own statistics, the gradient in closed form:
		// dx = inv (v - w mean(v) - w xhat mean(v xhat)), the means over
		// every row of the group divided by the valid count (the
		// statistics depend on the valid rows only, every output on them),
		// w the valid rows (1 without a mask). GoMLX's autodiff through the
		// mean and the variance takes about three times the passes.
		y = withGradient(y, x, func(v, xhat *Node) *Node {
			m1 := perChannel(Div(groupSums(v, g), count), c)
			m2 := perChannel(Div(groupSums(Mul(v, xhat), g), count), c)
			corr := Add(Mul(xhat, m2), m1)
			if w != nil {
				corr = Mul(corr, w)
			}
			return Mul(Sub(v, corr), inv)
		})
	}
	return Add(Mul(y, ExpandLeftToRank(n.p[name+".g"], 2)), ExpandLeftToRank(n.p[name+".b"], 2))
}

// groupSums sums x [M, C] over its rows and over the C/groups channels of
// each group: [groups].
func groupSums(x *Node, groups int) *Node {
	c := x.Shape().Dimensions[1]
	return ReduceSum(Reshape(ReduceSum(x, 0), groups, c/groups), 1)
}

// perChannel expands per-group values s [groups] to one per channel, as a
// row [1, C] that broadcasts over the rows of an [M, C] operand.
func perChannel(s *Node, c int) *Node {
	g := s.Shape().Dimensions[0]
	return Reshape(BroadcastToDims(Reshape(s, g, 1), g, c/g), 1, c)
}

// causalConvWB is a depthwise causal convolution along the sequence axis of
// x [L, C] with weights w [DConv, C] (tap k multiplies x[t-(DConv-1-k)])
// and bias b [C].
//
// Each tap's shift is a Gather of rows from x with one zero row after it
// (row L), which the rows before the sequence read: rows are copied whole,
// where a Slice and a Concatenate of zeros take the Go backend's
// per-element path forward and backward (a Slice and a Pad; a Gather's
// gradient is a row-wise scatter-add: about 3% of the cell training step at
// Pavia's size, netbench, alternating). Inference shifts x and multiplies
// (one Gather of all taps at once, [L, kw, C], is faster still but holds kw
// times x: 0.6 GB more peak memory at Houston's size). Training multiplies
// first and shifts the products, so that the products' gradients need the
// padded x itself, which all taps share, where shifting first would keep
// kw-1 shifted copies of x alive for the backward pass (Houston's size:
// about 190 MB at the peak).
func (n *graphBuilder) causalConvWB(x, w, b *Node) *Node {
	g := x.Graph()
	l, c := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	kw := n.d.DConv
	var xp *Node // x and a zero row, the source of the shifts
	if kw > 1 {
		xp = Concatenate([]*Node{x, Zeros(g, shapeOf(x.DType(), 1, c))}, 0)
	}
	var out *Node
	for k := 0; k < kw; k++ {
		shift := kw - 1 - k
		if shift >= l {
			continue // the tap reads only the zeros before the sequence
		}
		wk := Slice(w, AxisElem(k))
		var term *Node
		switch {
		case xp == nil || (n.fused && shift == 0):
			term = Mul(x, wk)
		case n.fused:
			term = Mul(Gather(xp, shiftRows(l, shift, g)), wk)
		default:
			term = Gather(Mul(xp, wk), shiftRows(l, shift, g))
		}
		if out == nil {
			out = term
		} else {
			out = Add(out, term)
		}
	}
	return Add(out, ExpandLeftToRank(b, 2))
}

// shiftRows are the Gather indices [l, 1] that move l rows down by shift
// (0 or more), row l (a zero row) read before the first.
func shiftRows(l, shift int, g *Graph) *Node {
	idx := make([]int32, l)
	for t := range idx {
		idx[t] = int32(l)
		if t >= shift {
			idx[t] = int32(t - shift)
		}
	}
	return Const(g, tensorOf(idx, l, 1))
}

// mamba is the selective state-space block over the token sequence x [L, D].
func (n *graphBuilder) mamba(x *Node, name string) *Node {
	return n.linearNoBias(n.mambaInner(x, name), name+".out")
}

// mambaInner is mamba up to its output projection (name+".out"), so that
// the caller can fuse that projection with what follows it.
func (n *graphBuilder) mambaInner(x *Node, name string) *Node {
	d := n.d
	l := x.Shape().Dimensions[0]
	xbc := d.E + 2*d.N
	// Products on column blocks of the input projection (z, x, B, C, dt;
	// Mamba's has no bias) instead of one product and slices of it, before
	// and after the depthwise convolution (which acts per channel, so it
	// splits the same way): a Slice takes the Go backend's per-element
	// path, and in training its gradient is a Pad of the whole projection.
	// In inference each block is the backend's FusedDense, SiLU(z) out of
	// its product directly.
	w := n.p[name+".in.w"]
	part := func(lo, hi int, withSilu bool) *Node {
		wb := Slice(w, AxisRange(), AxisRange(lo, hi))
		if n.fused {
			act := compute.ActivationNone
			if withSilu {
				act = compute.ActivationSilu
			}
			return BackendFusedDense(x, wb, nil, compute.DenseConfig{Activation: compute.ActivationConfig{Type: act}})
		}
		y := mm(x, wb)
		if withSilu {
			y = silu(y)
		}
		return y
	}
	cw, cb := n.p[name+".conv1d.w"], n.p[name+".conv1d.b"]
	convPart := func(lo, hi int) *Node { // lo, hi within the x, B, C block
		in := part(d.E+lo, d.E+hi, false)
		return silu(n.causalConvWB(in, Slice(cw, AxisRange(), AxisRange(lo, hi)), Slice(cb, AxisRange(lo, hi))))
	}
	z := part(0, d.E, true)
	xs := Reshape(convPart(0, d.E), l, d.Heads, d.HeadDim)
	bm := convPart(d.E, d.E+d.N)
	cm := convPart(d.E+d.N, d.E+2*d.N)
	dtRaw := part(d.E+xbc, d.E+xbc+d.Heads, false)
	dt := Softplus(Add(dtRaw, ExpandLeftToRank(n.p[name+".dtbias"], 2))) // [L, H]
	dt.AssertDims(l, d.Heads)
	bm.AssertDims(l, d.N)
	cm.AssertDims(l, d.N)
	a := ExpandLeftToRank(Neg(Exp(n.p[name+".alog"])), 2) // [1, H]
	dA := Mul(dt, a)                                      // [L, H], log decay per step
	xdt := Mul(xs, InsertAxes(dt, -1))                    // [L, H, P]
	y := ssdScan(xdt, dA, bm, cm, d.Chunk, n.fused)       // [L, H, P]
	y.AssertDims(l, d.Heads, d.HeadDim)
	skip := Reshape(n.p[name+".dskip"], 1, d.Heads, 1)
	if n.fused {
		// [L, H, P] x [1, H, 1] broadcasts in the middle, which the Go
		// backend multiplies one element at a time through an index
		// iterator; against [1, H, P] (H x P values made once) it is a row
		// broadcast on its vector path. The same products: inference only,
		// as the gradient would sum dskip's terms in another order.
		skip = repeatAxis(skip, 2, d.HeadDim)
	}
	y = Add(y, Mul(xs, skip))
	return Mul(Reshape(y, l, d.E), z)
}

// repeatAxis is x (of size 1 on axis) repeated n times along axis, as
// copies: a BroadcastToDims there would be folded back into the consumer
// by the Go backend's implicit-broadcast pass, which is what repeatAxis's
// callers avoid.
func repeatAxis(x *Node, axis, n int) *Node {
	reps := make([]*Node, n)
	for i := range reps {
		reps[i] = x
	}
	return Concatenate(reps, axis)
}

// ssdScan computes the selective scan h_t = exp(dA_t) h_{t-1} + B_t x_t^T,
// y_t = C_t h_t for x [L, H, P], dA [L, H], B and C [L, N] in the chunked
// matrix (SSD) form: masked products inside chunks of q tokens and a state pass
// between chunks. The cumulative decays across chunks are summed in float64,
// where float32 loses ~5e-4 over 10^4 tokens.
//
// inference (graphs without gradients on the Go backend) repeats the
// scores over the heads before they scale the decays, so that the
// product has no middle broadcast (see the call).
func ssdScan(x, dA, b, c *Node, q int, inference bool) *Node {
	g := x.Graph()
	l, h, p := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	nst := b.Shape().Dimensions[1]
	dt := x.DType()
	if q > l {
		q = l
	}
	nc := (l + q - 1) / q
	if pad := nc*q - l; pad > 0 {
		// Trailing zero tokens: they come after every real token, so they change no real output.
		x = Concatenate([]*Node{x, Zeros(g, shapeOf(dt, pad, h, p))}, 0)
		dA = Concatenate([]*Node{dA, Zeros(g, shapeOf(dt, pad, h))}, 0)
		b = Concatenate([]*Node{b, Zeros(g, shapeOf(dt, pad, nst))}, 0)
		c = Concatenate([]*Node{c, Zeros(g, shapeOf(dt, pad, nst))}, 0)
	}
	x = Reshape(x, nc, q, h, p)
	dA = Reshape(dA, nc, q, h)
	b = Reshape(b, nc, q, nst)
	c = Reshape(c, nc, q, nst)

	// Inclusive cumulative sum inside each chunk as a product with a lower
	// triangular matrix (CumSum's gradient emits a negative Pad, which panics).
	// Heads go before positions so that the big products below are plain
	// batched matmuls over (chunk, head) without transposes of [q, q] blocks.
	tri := ConvertDType(LowerTriangular(g, q), dt) // tri[s, r] = 1 for r <= s
	cumT := Einsum("crh,sr->chs", dA, tri)         // [nc, h, q]
	cum := Transpose(cumT, 1, 2)                   // [nc, q, h]

	// Intra-chunk: y[s] = sum_{r<=s} (C_s.B_r) exp(cum_s - cum_r) x_r.
	// diff[s, r] = cum_s - cum_r as a product with contraction 2,
	// [cum_s, 1] . [1, -cum_r] (both products exact, one rounding: the
	// subtraction's value): the broadcasting Sub of [nc, h, q, 1] and
	// [nc, h, 1, q] takes the Go backend's generic per-element path, about
	// 3x slower.
	cumCol := Reshape(cumT, nc*h, q, 1)
	lhs := Concatenate([]*Node{cumCol, OnesLike(cumCol)}, 2)                          // [nc*h, q, 2]
	rhs := Concatenate([]*Node{OnesLike(cumCol), Neg(cumCol)}, 2)                     // [nc*h, q, 2]
	diff := Reshape(bmm(lhs, Reshape(Transpose(rhs, 1, 2), nc*h, 2, q)), nc, h, q, q) // [nc, h, s, r]
	// Operands are arranged as [batch, rows, k] x [batch, k, cols] (GoMLX's
	// "non-transposed" layout): for small matmuls with a short contraction
	// (the state size) the Go backend's kernel for that layout is several
	// times faster than the dot-product kernel it uses after transposing.
	bT := Transpose(b, 1, 2) // [nc, n, r]
	scores := bmm(c, bT)     // [nc, s, r]
	// Above the diagonal the exponent is positive and the term is masked
	// out: adding -Inf there gives exp = 0 in one pass, and a zero gradient
	// (the exponential's derivative is its value), where a clamp and a
	// 0/1 mask cost two more passes each way in training.
	negInf := InsertAxes(Where(ShapedLowerTriangular(g, q, q, 0), Zeros(g, shapeOf(dt, q, q)), FillScalar(g, shapeOf(dt, q, q), math.Inf(-1))), 0, 0)
	sc := InsertAxes(scores, 1) // [nc, 1, s, r]
	if inference {
		// [nc, h, q, q] x [nc, 1, q, q] broadcasts in the middle, which the
		// Go backend multiplies one element at a time through an index
		// iterator (2.2% of the bench-big crop's CPU, with dskip's below);
		// the scores copied once per head, block by block, make it a plain
		// elementwise product on its vector path: the same products. Not
		// in training: the scores' gradient would then sum the heads'
		// terms in another order.
		sc = repeatAxis(sc, 1, h)
	}
	m := Mul(Exp(Add(diff, negInf)), sc)
	xT := Transpose(x, 1, 2) // [nc, h, q, p]
	yDiag := Reshape(bmm(Reshape(m, nc*h, q, q), Reshape(xT, nc*h, q, p)), nc, h, q, p)

	// State at the end of each chunk from its own tokens.
	last := Slice(cum, AxisRange(), AxisElem(q-1)) // [nc, 1, h]
	decayToEnd := Exp(Sub(last, cum))              // [nc, q, h]
	states := Reshape(bmm(bT, Reshape(Mul(x, InsertAxes(decayToEnd, -1)), nc, q, h*p)), nc, nst, h, p)

	// Inter-chunk pass: state entering chunk i = sum_{j<i} exp(A_{j+1..i-1}) states_j.
	chunkA := ConvertDType(Reshape(last, nc, h), dtypes.Float64)
	triC := ConvertDType(LowerTriangular(g, nc), dtypes.Float64)
	acs := Einsum("ij,jh->ih", triC, chunkA) // inclusive sums over chunks
	// exponent for (i, j), j < i: acs[i-1] - acs[j] = acs[i] - chunkA[i] - acs[j]
	excl := Sub(acs, chunkA)
	ex := Sub(InsertAxes(excl, 1), InsertAxes(acs, 0)) // [i, j, h]
	strict := BroadcastToDims(InsertAxes(ShapedLowerTriangular(g, nc, nc, -1), -1), nc, nc, h)
	w := ConvertDType(Exp(Where(strict, ex, FillScalar(g, ex.Shape(), -1e300))), dt)
	w = Where(strict, w, ZerosLike(w))
	prev := Einsum("ijh,jnhp->inhp", w, states) // [nc, n, h, p]

	// Contribution of the entering state to each token of the chunk.
	yOff := Reshape(bmm(c, Reshape(prev, nc, nst, h*p)), nc, q, h, p)
	yOff = Mul(yOff, InsertAxes(Exp(cum), -1))
	y := Reshape(Add(Transpose(yDiag, 1, 2), yOff), nc*q, h, p)
	if nc*q != l {
		y = Slice(y, AxisRange(0, l))
	}
	return y
}

// encode runs the encoder and both branches. x is the normalised scene:
// for the cell encoder averaged over Stride x Stride cells, [Hs, Ws, Bands]
// (cellMeans); for the paper's encoder at full resolution, [H, W, Bands].
func (n *graphBuilder) encode(x *Node) (f0, fspa, fdiff *Node) {
	d := n.d
	if n.cfg.Encoder == EncoderPaper {
		if n.f0Input {
			f0 = x
		} else {
			f0 = n.paperEncoder(x)
		}
	} else {
		hs, ws := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
		e := n.zeroInvalid(n.linearNormSilu(Reshape(x, hs*ws, d.In), "embed", "embed.gn"))
		f0 = n.conv3x3NormSilu(Reshape(e, hs, ws, d.D), "conv", "conv.gn") // [L, D]
	}
	f0 = n.zeroInvalid(f0)

	fspa = Add(f0, n.linearNormSilu(n.mambaInner(f0, "spa"), "spa.out", "spa.gn"))
	if n.fused {
		// Inference runs the differential branch after the spatial one:
		// the executor would otherwise run the two side by side and hold
		// both branches' values at once (netbench, cell encoder, Houston's
		// size: peak RSS 2.02 -> 1.64 GB at GOGC=100; Pavia's inference
		// time unchanged, 0.28 s). Training keeps both branches' values
		// for the backward pass anyway.
		n.p["diff.in.w"] = after(n.p["diff.in.w"], fspa)
	}
	// Differential input: x - a * avg_pool_5(x) along channels, averaging
	// only the channels inside the window at the edges (PyTorch's
	// avg_pool1d with count_include_pad=False), as a banded matmul.
	band := make([]float32, d.D*d.D)
	half := d.DiffWindow / 2
	for i := 0; i < d.D; i++ {
		lo, hi := max(0, i-half), min(d.D-1, i+half)
		for j := lo; j <= hi; j++ {
			band[j*d.D+i] = 1 / float32(hi-lo+1)
		}
	}
	pool := MatMul(f0, ConvertDType(Const(x.Graph(), tensorOf(band, d.D, d.D)), x.DType()))
	xd := Sub(f0, Mul(n.p["diff.a"], pool))
	// The branch output is added to f0 (not to xd): both branches are
	// residual on the encoder's features.
	fdiff = Add(f0, n.linearNormSilu(n.mambaInner(xd, "diff"), "diff.out", "diff.gn"))
	return f0, fspa, fdiff
}

// paperEncoder is the paper's encoder on x [H, W, Bands] at full
// resolution: 1x1 conv + GroupNorm + SiLU, 3x3 conv (zero padded), MaxPool
// 2, GELU, AvgPool 2, on the floor grid [H/4, W/4] -> [L, D].
func (n *graphBuilder) paperEncoder(x *Node) *Node {
	d := n.d
	h, w := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	hs, ws := h/Stride, w/Stride
	e := Reshape(n.zeroInvalid(n.linearNormSilu(Reshape(x, h*w, d.In), "embed", "embed.gn")), h, w, d.D)
	c := n.conv3x3Shifted(e, "conv") // [H, W, D]
	// Only rows and columns [0, 4 hs) x [0, 4 ws) reach the floor grid.
	if h != hs*Stride || w != ws*Stride {
		c = Slice(c, AxisRange(0, hs*Stride), AxisRange(0, ws*Stride))
	}
	c.AssertDims(hs*Stride, ws*Stride, d.D)
	m := ReduceMax(Reshape(c, 2*hs, 2, 2*ws, 2, d.D), 1, 3) // MaxPool 2
	m = gelu(m)
	a := ReduceMean(Reshape(m, hs, 2, ws, 2, d.D), 1, 3) // AvgPool 2
	return Reshape(a, hs*ws, d.D)
}

// conv3x3Sequential is conv3x3Shifted for inference graphs on the Go
// backend, built to hold few full-resolution maps at once: the nine
// products are taken on the zero-padded input flattened to rows of W+2
// pixels, where the tap (dy, dx) of output pixel i is input row i + dy (W+2)
// + dx, so each product's contribution is one contiguous slice of it (no
// shifted copies of the input), and each product waits for the sum so far
// (its bias depends on one value of it): the executor, which otherwise
// runs the nine independent products side by side, keeps only the input,
// the sum and one product alive (peak inference memory of the paper encoder
// at Houston's size went from about 10 GB; see docs/model.md, "Speed and memory").
func (n *graphBuilder) conv3x3Sequential(x *Node, name string) *Node {
	h, w, c := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	wt, bias := n.p[name+".w"], n.p[name+".b"]
	dOut := wt.Shape().Dimensions[1]
	wp := w + 2
	// One zero row above, two below (the last taps of the last row's
	// padding columns reach one pixel past the second), one zero column on
	// each side.
	zc := Zeros(x.Graph(), shapeOf(x.DType(), h, 1, c))
	xp := Concatenate([]*Node{zc, x, zc}, 1)
	xp = Concatenate([]*Node{Zeros(x.Graph(), shapeOf(x.DType(), 1, wp, c)), xp, Zeros(x.Graph(), shapeOf(x.DType(), 2, wp, c))}, 0)
	flat := Reshape(xp, (h+3)*wp, c)
	var acc *Node
	for dy := 0; dy < 3; dy++ {
		for dx := 0; dx < 3; dx++ {
			k := dy*3 + dx
			b := bias
			if acc != nil {
				b = ZerosLike(bias)
				// A dependency on the sum so far, adding zero.
				b = Add(b, MulScalar(ReduceAllSum(Slice(acc, AxisRange(0, 1), AxisRange(0, 1))), 0))
			}
			y := BackendFusedDense(flat, Slice(wt, AxisRange(k*c, (k+1)*c)), b, compute.DenseConfig{})
			off := dy*wp + dx
			part := Slice(y, AxisRange(off, off+h*wp))
			if acc == nil {
				acc = part
			} else {
				acc = Add(acc, part)
			}
		}
	}
	return Slice(Reshape(acc, h, wp, dOut), AxisRange(), AxisRange(0, w))
}

// after is x, available to the executor only once dep is computed: x plus
// a zero made from one element of dep (0 whatever its value, NaN
// included). Used on a small tensor (a weight), it orders large work at
// the cost of a few elements.
func after(x, dep *Node) *Node {
	first := Slice(Reshape(dep, dep.Shape().Size()), AxisRange(0, 1))
	zero := MulScalar(ConvertDType(Equal(first, first), x.DType()), 0)
	return Add(x, BroadcastToDims(ExpandLeftToRank(zero, x.Rank()), x.Shape().Dimensions...))
}

// gelu is the exact GELU, x Phi(x) (PyTorch's default).
func gelu(x *Node) *Node {
	return Mul(MulScalar(x, 0.5), OnePlus(Erf(MulScalar(x, 1/math.Sqrt2))))
}

// conv3x3Shifted is a zero-padded 3x3 convolution of x [H, W, C] with the
// layer's weights [9C, D] (rows ordered tap (dy, dx) then channel, as
// im2col3x3) as nine products of shifted views with [C, D] blocks, summed:
// the same work as one im2col product without its [H*W, 9C] matrix (about
// 1 GB at Pavia University's size with C = 128).
func (n *graphBuilder) conv3x3Shifted(x *Node, name string) *Node {
	if n.fused {
		return n.conv3x3Sequential(x, name)
	}
	h, w, c := x.Shape().Dimensions[0], x.Shape().Dimensions[1], x.Shape().Dimensions[2]
	wt := n.p[name+".w"]
	dOut := wt.Shape().Dimensions[1]
	zr := Zeros(x.Graph(), shapeOf(x.DType(), 1, w, c))
	xp := Concatenate([]*Node{zr, x, zr}, 0)
	zc := Zeros(x.Graph(), shapeOf(x.DType(), h+2, 1, c))
	xp = Concatenate([]*Node{zc, xp, zc}, 1)
	var out *Node
	for dy := 0; dy < 3; dy++ {
		for dx := 0; dx < 3; dx++ {
			k := dy*3 + dx
			view := Reshape(Slice(xp, AxisRange(dy, dy+h), AxisRange(dx, dx+w)), h*w, c)
			wk := Slice(wt, AxisRange(k*c, (k+1)*c))
			term := MatMul(view, wk)
			if out == nil {
				out = term
			} else {
				out = Add(out, term)
			}
		}
	}
	out = Add(out, ExpandLeftToRank(n.p[name+".b"], 2))
	return Reshape(out, h, w, dOut)
}

func (n *graphBuilder) head(f *Node) *Node {
	return n.linear(n.linearNormSilu(f, "head.1", "head.gn"), "head.2")
}

// fusedEvidence is alpha g_pos - beta g_neg (the evidence heads on
// [F, Fspa, Fdiff, context], context = posHot protos or wneg protos) as two
// fused layers for inference: both heads' first layers are one product of
// [F, Fspa, Fdiff, posHot, wneg] [L, 3D+2K] with their weights side by side,
// the context blocks pre-multiplied by the bank (protos W is [K, D], so the
// [L, 4D] inputs are never built), and the second layers, scaled by alpha
// and -beta, are one product of the stacked hidden units.
func (n *graphBuilder) fusedEvidence(f, fspa, fdiff, posHot, wneg, protos *Node) *Node {
	d := n.d
	first := func(name string) (top, ctx *Node) {
		w := n.p[name+".1.w"] // [4D, D]
		return Slice(w, AxisRange(0, 3*d.D)), MatMul(protos, Slice(w, AxisRange(3*d.D, 4*d.D)))
	}
	topP, ctxP := first("gpos")
	topN, ctxN := first("gneg")
	zk := ZerosLike(ctxP)
	w1 := Concatenate([]*Node{
		Concatenate([]*Node{topP, topN}, 1),
		Concatenate([]*Node{ctxP, zk}, 1),
		Concatenate([]*Node{zk, ctxN}, 1),
	}, 0) // [3D+2K, 2D]
	b1 := Concatenate([]*Node{n.p["gpos.1.b"], n.p["gneg.1.b"]}, 0)
	in := Concatenate([]*Node{f, fspa, fdiff, posHot, wneg}, 1)
	h := BackendFusedDense(in, w1, b1, compute.DenseConfig{Activation: compute.ActivationConfig{Type: compute.ActivationSilu}}) // [L, 2D]
	w2 := Concatenate([]*Node{MulScalar(n.p["gpos.2.w"], n.cfg.Alpha), MulScalar(n.p["gneg.2.w"], -n.cfg.Beta)}, 0)
	b2 := Sub(MulScalar(n.p["gpos.2.b"], n.cfg.Alpha), MulScalar(n.p["gneg.2.b"], n.cfg.Beta))
	return BackendFusedDense(h, w2, b2, compute.DenseConfig{})
}

func l2normalize(x *Node, axis int) *Node {
	norm := Sqrt(AddScalar(ReduceAndKeep(Square(x), ReduceSum, axis), 1e-12))
	return Div(x, norm)
}

// forward runs the whole network. bank returns the prototype bank [K, D]
// (L2-normalised rows) given the fused features F (training updates it from them), anchor [L] int32 the positive-anchor class of each
// cell (-1: use argmax Q), s the calibration switch (0 or 1).
func (n *graphBuilder) forward(x *Node, bank func(f *Node) *Node, anchor, s *Node) forwardOutputs {
	d := n.d
	var o forwardOutputs
	if n.normCalls == nil {
		n.normCalls = map[string]int{}
	}
	f0, fspa, fdiff := n.encode(x)
	// The shapes the rest relies on (the comments on forwardOutputs), asserted where they
	// are made: a weight of the wrong size would otherwise broadcast or
	// fail far from its cause. L is the number of cells, D the features, K
	// the classes.
	l := f0.Shape().Dimensions[0]
	for _, v := range []*Node{f0, fspa, fdiff} {
		v.AssertDims(l, d.D)
	}
	o.Fspa, o.Fdiff = fspa, fdiff
	o.Zspa = n.linear(fspa, "spa.aux")
	o.Zdiff = n.linear(fdiff, "diff.aux")
	wf := Softmax(n.p["fuse.w"], 0)
	wf.AssertDims(2)
	o.F = Add(Add(Mul(Reshape(Slice(wf, AxisElem(0))), fspa), Mul(Reshape(Slice(wf, AxisElem(1))), fdiff)), f0)
	o.Zraw = n.head(o.F)
	o.F.AssertDims(l, d.D)
	for _, z := range []*Node{o.Zraw, o.Zspa, o.Zdiff} {
		z.AssertDims(l, d.K)
	}
	protos := bank(o.F)
	protos.AssertDims(d.K, d.D)

	tau := n.p["tau"]
	cos := MatMul(l2normalize(o.F, 1), Transpose(protos, 0, 1)) // [L, K]
	o.Cos = cos
	o.S = Mul(tau, cos)
	o.Q = Softmax(o.S, 1)

	if n.cfg.Ablation == AblationBase {
		o.Zcal = o.Zraw
		o.Gtilde = ZerosLike(Slice(o.Zraw, AxisRange(), AxisElem(0)))
		o.Gtilde = Reshape(o.Gtilde, o.Gtilde.Shape().Dimensions[0])
		return o
	}

	q := n.stopGradient(o.Q)
	pred := ArgMax(q, 1, dtypes.Int32)
	pos := Where(GreaterOrEqual(anchor, ScalarZero(x.Graph(), dtypes.Int32)), anchor, pred)
	posHot := OneHot(pos, d.K, q.DType()) // [L, K]
	// Negative context: the two most similar non-target prototypes, weighted by renormalised Q.
	qn := Mul(q, OneMinus(posHot))
	negMask := OneHot(ArgMax(qn, 1, dtypes.Int32), d.K, q.DType())
	if d.K > 2 {
		qn2 := Mul(qn, OneMinus(negMask))
		negMask = Add(negMask, OneHot(ArgMax(qn2, 1, dtypes.Int32), d.K, q.DType()))
	}
	wneg := Mul(q, negMask)
	wneg = Div(wneg, AddScalar(ReduceAndKeep(wneg, ReduceSum, 1), 1e-12))

	// evidence is a head's two layers on concat[F, F_spa, F_diff, C] with
	// the context C = weights [L, K] x protos: the first layer as one
	// product per row block of its weights (C's block through the [K, D]
	// prototypes first), so that neither the [L, 4D] concatenation nor C
	// is built and kept for the backward pass, and the gradient needs no
	// Slices of it; the products of F, F_spa and F_diff share their
	// transposes between the two heads.
	evidence := func(weights *Node, name string) *Node {
		w := n.p[name+".1.w"]
		blk := func(i int) *Node { return Slice(w, AxisRange(i*d.D, (i+1)*d.D)) }
		h := Add(Add(mm(o.F, blk(0)), mm(fspa, blk(1))), mm(fdiff, blk(2)))
		h = Add(h, MatMul(weights, MatMul(protos, blk(3))))
		h = silu(Add(h, ExpandLeftToRank(n.p[name+".1.b"], 2)))
		return n.linear(h, name+".2")
	}
	var delta *Node
	if n.fused {
		delta = n.fusedEvidence(o.F, fspa, fdiff, posHot, wneg, protos)
	} else {
		delta = Sub(MulScalar(evidence(posHot, "gpos"), n.cfg.Alpha), MulScalar(evidence(wneg, "gneg"), n.cfg.Beta))
	}

	u := n.uncertainties(o, q, pred) // [L, 3]
	u.AssertDims(l, 3)
	o.U = u
	o.Gtilde = Sigmoid(Add(MatMul(u, n.p["gate.w"]), n.p["gate.b"]))
	o.Gtilde.AssertDims(l)
	delta.AssertDims(l, d.D)
	rho := n.cfg.GateFloor
	gate := AddScalar(MulScalar(o.Gtilde, 1-rho), rho)
	if n.cfg.Ablation == AblationNoRC {
		// w/o RC: no reliability-aware calibration, the evidence applies in full.
		gate = OnesLike(gate)
	}
	fcal := Add(o.F, Mul(Mul(s, InsertAxes(gate, -1)), delta))
	o.Zcal = n.head(fcal)
	o.Zcal.AssertDims(l, d.K)
	return o
}

// uncertainties are the gate's three sources per cell [L, 3], treated as
// measurements (no gradient into them): the normalised entropy of the raw
// head, the Jensen-Shannon divergence between the two branches' auxiliary
// heads, and one minus the margin between the two most similar prototypes
// (q the prototype softmax, pred its argmax).
func (n *graphBuilder) uncertainties(o forwardOutputs, q, pred *Node) *Node {
	d := n.d
	logK := math.Log(float64(d.K))
	praw := Softmax(n.stopGradient(o.Zraw), 1)
	uEnt := DivScalar(Neg(ReduceSum(Mul(praw, Log(AddScalar(praw, 1e-12))), 1)), logK)
	pspa := Softmax(n.stopGradient(o.Zspa), 1)
	pdiff := Softmax(n.stopGradient(o.Zdiff), 1)
	pm := MulScalar(Add(pspa, pdiff), 0.5)
	kl := func(p, q *Node) *Node {
		return ReduceSum(Mul(p, Sub(Log(AddScalar(p, 1e-12)), Log(AddScalar(q, 1e-12)))), 1)
	}
	uBr := DivScalar(Add(kl(pspa, pm), kl(pdiff, pm)), 2*math.Ln2)
	q1 := ReduceMax(q, 1)
	q2 := ReduceMax(Mul(q, OneMinus(OneHot(pred, d.K, q.DType()))), 1)
	uPro := OneMinus(Sub(q1, q2))
	return Stack([]*Node{uEnt, uBr, uPro}, 1)
}

// zeroInvalid sets the rows of x [M, C] that are invalid in the mask of
// its grid (n.masks) to zero, so that nodata pixels and cells enter the 3x3
// convolution as its zero padding does and the scan as zero tokens; x as
// it is without a mask for M.
func (n *graphBuilder) zeroInvalid(x *Node) *Node {
	mk, ok := n.masks[x.Shape().Dimensions[0]]
	if !ok {
		return x
	}
	return Mul(x, InsertAxes(ConvertDType(mk, x.DType()), -1))
}

// setMasks registers the valid masks (netMasks order: finest grid first)
// for the GroupNorms of the next graph build.
func (n *graphBuilder) setMasks(masks ...*Node) {
	n.masks = make(map[int]*Node, len(masks))
	for _, mk := range masks {
		n.masks[mk.Shape().Dimensions[0]] = mk
	}
}
