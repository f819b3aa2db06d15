package model

import (
	"sync"

	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
)

// Leaner gradients for the Go backend.
//
// GoMLX's autodiff is generic; on the Go backend some of its VJPs cost far
// more memory traffic than the arithmetic needs, and training at full scene
// size is memory-bound. The overrides below keep the same mathematics:
//
//   - Batched matmuls (bmm): the Go backend runs small batched matmuls with
//     one of two kernels: a broadcast-FMA kernel for operands laid out
//     [B,N,K] x [B,K,M] and a dot-product kernel for everything else, which
//     it first transposes to [B,N,K] x [B,M,K]. With the scan's short
//     contractions (state size 16, chunk 64) the second is 3-5x slower.
//     GoMLX's DotGeneral gradient lands in the second form, so bmm nodes get
//     their gradient from bmmVJP instead, which writes both input gradients
//     in the first form.
//   - Matrix products x W of the layers (mm): the weight gradient x^T v
//     contracts the first axis of both operands, a layout the backend's
//     kernels do not take, so it transposes both [L, D] x and [L, N] v;
//     mmVJP transposes only the narrower of the two.
//   - Products with broadcasting (Mul): GoMLX materialises the broadcast
//     operand at full size (BroadcastInDim) before multiplying by the
//     adjoint; the backend broadcasts size-1 axes itself, so leanMulVJP
//     multiplies directly and sums over the broadcast axes as before.
//   - SiLU (silu): x sigmoid(x) with the closed-form derivative
//     s (1 + x (1 - s)), s recomputed from x in the backward pass, so the
//     forward's sigmoid is not kept alive for it (one activation-sized
//     buffer less per SiLU in training).
//   - withGradient: a node with a given value whose gradient with respect
//     to one input is computed by a given function (GroupNorm's closed form).

var (
	customVJPs  sync.Map // *Node -> func(v *Node) []*Node
	installOnce sync.Once
)

func installGradients() {
	installOnce.Do(func() {
		for _, typ := range []NodeType{NodeTypeDotGeneral, NodeTypeWhere} {
			orig := VJPRegistration[typ]
			VJPRegistration[typ] = func(node *Node, v []*Node, s shapes.Shape) []*Node {
				if fn, ok := customVJPs.Load(node); ok {
					return fn.(func(v *Node) []*Node)(v[0])
				}
				return orig(node, v, s)
			}
		}
		VJPRegistration[NodeTypeMul] = func(node *Node, v []*Node, s shapes.Shape) []*Node {
			if fn, ok := customVJPs.Load(node); ok {
				return fn.(func(v *Node) []*Node)(v[0])
			}
			return leanMulVJP(node, v, s)
		}
	})
}

// bmm is the batched product a [B, N, K] x b [B, K, M] -> [B, N, M].
func bmm(a, b *Node) *Node {
	installGradients()
	out := Einsum("bnk,bkm->bnm", a, b)
	if out.Type() == NodeTypeDotGeneral {
		ins := out.Inputs()
		if len(ins) == 2 && ins[0] == a && ins[1] == b {
			customVJPs.Store(out, func(v *Node) []*Node {
				da := Einsum("bnm,bmk->bnk", v, Transpose(b, 1, 2))
				db := Einsum("bkn,bnm->bkm", Transpose(a, 1, 2), v)
				return []*Node{da, db}
			})
		}
	}
	return out
}

// mm is the matrix product x [L, D] W [D, N] of a layer.
func mm(x, w *Node) *Node {
	installGradients()
	out := MatMul(x, w)
	if out.Type() == NodeTypeDotGeneral {
		ins := out.Inputs()
		if len(ins) == 2 && ins[0] == x && ins[1] == w && x.Rank() == 2 && w.Rank() == 2 {
			customVJPs.Store(out, func(v *Node) []*Node {
				dx := DotGeneral(v, []int{1}, nil, w, []int{1}, nil) // v W^T, W read transposed by the kernel
				// x^T v needs one operand transposed: the narrower of x
				// [L, D] and v [L, N], whose transpose the kernel then
				// also packs (an embedding's input, all bands, is wider
				// than its gradient).
				var dw *Node
				if x.Shape().Dimensions[1] > v.Shape().Dimensions[1] {
					dw = Transpose(MatMul(Transpose(v, 0, 1), x), 0, 1)
				} else {
					dw = MatMul(Transpose(x, 0, 1), v)
				}
				return []*Node{dx, dw}
			})
		}
	}
	return out
}

// withGradient returns a node whose value is y and whose gradient with
// respect to x (same shape as y) is vjp(v, out) for the adjoint v of the
// result out; no gradient flows into y itself. It is a Where(true, y, x)
// whose gradient is replaced, so it costs one copy of y. vjp should read
// the value it needs as out rather than y: then y itself is freed after the
// copy, where otherwise both are kept to the backward pass.
func withGradient(y, x *Node, vjp func(v, out *Node) *Node) *Node {
	installGradients()
	out := Where(Const(y.Graph(), true), StopGradient(y), x)
	customVJPs.Store(out, func(v *Node) []*Node { return []*Node{nil, nil, vjp(v, out)} })
	return out
}

// leanMulVJP is GoMLX's Mul gradient without materialising a broadcast operand.
func leanMulVJP(node *Node, v []*Node, _ shapes.Shape) []*Node {
	a, b := node.Inputs()[0], node.Inputs()[1]
	return []*Node{sumToShape(Mul(v[0], b), a.Shape()), sumToShape(Mul(v[0], a), b.Shape())}
}

// sumToShape sums v over the axes along which an operand of shape s was
// broadcast (size 1 in s), or entirely for a scalar operand.
func sumToShape(v *Node, s shapes.Shape) *Node {
	if v.Shape().Equal(s) {
		return v
	}
	if s.IsScalar() {
		return ReduceAllSum(v)
	}
	var axes []int
	for i, dim := range s.Dimensions {
		if dim == 1 && v.Shape().Dimensions[i] > 1 {
			axes = append(axes, i)
		}
	}
	return Reshape(ReduceSum(v, axes...), s.Dimensions...)
}

// forgetBMM drops the registrations of the nodes of graph g once its
// gradient has been built, so that finished graphs can be collected.
func forgetBMM(g *Graph) {
	customVJPs.Range(func(k, _ any) bool {
		if k.(*Node).Graph() == g {
			customVJPs.Delete(k)
		}
		return true
	})
}
