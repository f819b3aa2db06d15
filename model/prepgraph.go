package model

// The host work around the network as graph operations:
// on an XLA device the scene goes up as it was read (integers when its
// values are, 2 bytes a sample instead of 4) with its valid mask, and the
// normalisation (inputSpec), the masks (netMasks), the cell means of the
// cell encoder (cellMeans), the interpolation matrices (upMatrix) and, for
// a scene run whole, the AvgPool recovery (tiling.Recover) run in the
// compiled graph. The Go backend keeps the host versions, which are
// faster on the CPU than the same work as graph operations; tests run both
// on the Go backend and compare them.

import (
	"math"
	"runtime"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
)

// rawTensor is s's values as the graph takes them: int16 when every value
// is an integer within int16's range (what sensors' digital numbers and
// scaled reflectances are), else float32; and the valid mask as booleans
// (nil Valid: every pixel). Both are checked and packed by row bands in
// parallel.
func rawTensor(s Scene) (raw, valid *tensors.Tensor) {
	n := s.Rows * s.Cols * s.Bands
	workers := min(runtime.GOMAXPROCS(0), max(1, n/(1<<16)))
	ints := make([]int16, n)
	ok := make([]bool, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			lo, hi := w*n/workers, (w+1)*n/workers
			for i, v := range s.Data[lo:hi] {
				if v != float32(int16(v)) || v < math.MinInt16 || v > math.MaxInt16 {
					return
				}
				ints[lo+i] = int16(v)
			}
			ok[w] = true
		})
	}
	wg.Wait()
	raw = tensorOf16(ints, s.Rows, s.Cols, s.Bands)
	for _, o := range ok {
		if !o {
			raw = tensorOf(s.Data, s.Rows, s.Cols, s.Bands)
			break
		}
	}
	v := make([]bool, s.Rows*s.Cols)
	for i := range v {
		v[i] = s.valid(i)
	}
	return raw, tensors.FromFlatDataAndDimensions(v, s.Rows, s.Cols)
}

func tensorOf16(data []int16, dims ...int) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// prepNodes are the network's input and masks made in the graph from the
// raw scene raw [R, C, B] and its valid mask valid [R, C] (bool), as
// netInput and netMasks make them on the host: x is [R, C, ch] for the
// paper encoder, the cell means [Hs, Ws, ch] for the cell encoder; masks
// are the paper encoder's pixel mask then the cells', or the cells' alone.
func prepNodes(raw, valid, lo, scale *Node, in inputSpec, encoder string) (x *Node, masks []*Node) {
	g := raw.Graph()
	dims := raw.Shape().Dimensions
	rows, cols := dims[0], dims[1]
	v := ConvertDType(raw, dtypes.Float32)
	validF := ConvertDType(valid, dtypes.Float32)
	x = inputNodes(v, lo, scale, in)
	// Invalid pixels are zero, as the host leaves them.
	x = Where(valid, x, ZerosLike(x))
	switch encoder {
	case EncoderPaper:
		hs, ws := lowRes(rows, encoder), lowRes(cols, encoder)
		cells := Slice(validF, AxisRange(0, hs*Stride), AxisRange(0, ws*Stride))
		cells = ReduceMax(Reshape(cells, hs, Stride, ws, Stride), 1, 3)
		return x, []*Node{Reshape(validF, rows*cols), Reshape(cells, hs*ws)}
	default:
		// The cell means over each 4 x 4 cell's valid pixels, a partial
		// cell at the edge over the pixels it has.
		pr, pc := padTo(rows), padTo(cols)
		ch := x.Shape().Dimensions[2]
		zero := Scalar(g, dtypes.Float32, 0)
		xp := Pad(x, zero, padAxis(pr-rows), padAxis(pc-cols), padAxis(0))
		vp := Pad(validF, zero, padAxis(pr-rows), padAxis(pc-cols))
		hs, ws := pr/Stride, pc/Stride
		sum := ReduceSum(Reshape(xp, hs, Stride, ws, Stride, ch), 1, 3)
		count := ReduceSum(Reshape(vp, hs, Stride, ws, Stride), 1, 3)
		x = Div(sum, InsertAxes(MaxScalar(count, 1), -1))
		return x, []*Node{Reshape(ReduceMax(Reshape(vp, hs, Stride, ws, Stride), 1, 3), hs*ws)}
	}
}

// padAxis pads an axis with n elements at its end.
func padAxis(n int) compute.PadAxis { return compute.PadAxis{End: n} }

// inputNodes turn each pixel's raw spectrum v [R, C, B] into the network's
// input channels, as inputSpec.add does; the per-pixel means and spreads
// are summed in float64, as the host sums them.
func inputNodes(v, lo, scale *Node, in inputSpec) *Node {
	g := v.Graph()
	bands := v.Shape().Dimensions[2]
	zero := ZerosLike(v)
	stretch := func() *Node {
		x := Mul(Sub(v, Reshape(lo, 1, 1, bands)), Reshape(scale, 1, 1, bands))
		x = Where(GreaterOrEqual(x, zero), MinScalar(x, 1), zero) // NaN: 0
		if in.levels >= 2 {
			n := float64(in.levels - 1)
			x = DivScalar(Floor(MulScalar(x, n)), n)
		}
		return x
	}
	clip := func(y *Node) *Node {
		return Where(GreaterThan(y, Scalar(g, dtypes.Float32, -shapeClip)), MinScalar(y, shapeClip), ZerosLike(y))
	}
	shape := func() *Node {
		v64 := ConvertDType(v, dtypes.Float64)
		mean := DivScalar(ReduceSum(Where(IsNaN(v64), ZerosLike(v64), v64), -1), float64(bands))
		ok := LogicalAnd(GreaterThan(mean, ZerosLike(mean)), IsFinite(mean))
		inv := ConvertDType(Where(ok, Div(Scalar(g, dtypes.Float64, 0.5), mean), ZerosLike(mean)), dtypes.Float32)
		y := clip(Mul(v, InsertAxes(inv, -1)))
		return Where(InsertAxes(ok, -1), y, zero)
	}
	switch in.mode {
	case InputShape:
		return shape()
	case InputStretchShape:
		return Concatenate([]*Node{stretch(), shape()}, -1)
	case InputSNV:
		v64 := ConvertDType(v, dtypes.Float64)
		n := float64(bands)
		mean := DivScalar(ReduceSum(v64, -1), n)
		sq := DivScalar(ReduceSum(Square(v64), -1), n)
		sd := Sqrt(MaxScalar(Sub(sq, Square(mean)), 0))
		ok := LogicalAnd(LogicalAnd(GreaterThan(sd, ZerosLike(sd)), IsFinite(sd)), LogicalNot(IsNaN(mean)))
		safe := Where(ok, sd, OnesLike(sd))
		y := ConvertDType(Div(Sub(v64, InsertAxes(mean, -1)), InsertAxes(safe, -1)), dtypes.Float32)
		y = clip(AddScalar(MulScalar(y, 0.25), 0.5))
		return Where(InsertAxes(ok, -1), y, zero)
	}
	return stretch()
}

// upMatrixNode is upMatrix(n, ns) made in the graph: the bilinear weights
// from ns stride-4 cells to n positions (align_corners=False, clamped),
// computed in float64 and rounded as the host rounds them.
func upMatrixNode(g *Graph, n, ns int) *Node {
	i := Iota(g, shapes.Make(dtypes.Float64, n, ns), 0)
	j := Iota(g, shapes.Make(dtypes.Float64, n, ns), 1)
	src := MaxScalar(SubScalar(DivScalar(AddScalar(i, 0.5), Stride), 0.5), 0)
	i0 := MinScalar(Floor(src), float64(ns-1))
	i1 := MinScalar(AddScalar(i0, 1), float64(ns-1))
	f := Where(Equal(i0, i1), ZerosLike(src), Sub(src, i0))
	f32 := ConvertDType(f, dtypes.Float32)
	one := OnesLike(f32)
	zero := ZerosLike(f32)
	w := Add(Where(Equal(j, i0), Sub(one, f32), zero), Where(Equal(j, i1), f32, zero))
	return w
}

// recoverNode is tiling.Recover in the graph for a scene run whole: each
// valid pixel's probabilities p [R, C, K] become (1-eta) p + eta times the
// mean of p over the valid pixels of its window x window neighbourhood
// inside the scene; invalid pixels are zero. The window sums are separable
// sums of shifted copies (a window of 9 adds 9 values per axis).
func recoverNode(p, validF *Node, window int, eta float64) *Node {
	h := window / 2
	if h == 0 || eta == 0 {
		return Mul(p, InsertAxes(validF, -1))
	}
	v := InsertAxes(validF, -1)
	num := boxSum(boxSum(Mul(p, v), 0, h), 1, h)
	den := boxSum(boxSum(v, 0, h), 1, h)
	avg := Div(num, MaxScalar(den, 1))
	out := Add(MulScalar(p, 1-eta), MulScalar(avg, eta))
	return Mul(out, v)
}

// boxSum sums x over [i-h, i+h] along axis, zero beyond the ends.
func boxSum(x *Node, axis, h int) *Node {
	n := x.Shape().Dimensions[axis]
	pads := make([]compute.PadAxis, x.Rank())
	pads[axis] = compute.PadAxis{Start: h, End: h}
	xp := Pad(x, ScalarZero(x.Graph(), x.DType()), pads...)
	var sum *Node
	for d := 0; d <= 2*h; d++ {
		spec := make([]SliceAxisSpec, x.Rank())
		for a := range spec {
			spec[a] = AxisRange()
		}
		spec[axis] = AxisRange(d, d+n)
		s := Slice(xp, spec...)
		if sum == nil {
			sum = s
		} else {
			sum = Add(sum, s)
		}
	}
	return sum
}
