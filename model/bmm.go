package model

import (
	"sync"

	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
)

// Batched matmuls with a fast gradient on the Go backend.
//
// The Go backend runs small batched matmuls with one of two kernels: a
// broadcast-FMA kernel for operands laid out [B,N,K] x [B,K,M] and a
// dot-product kernel for everything else, which it first transposes to
// [B,N,K] x [B,M,K]. With the scan's short contractions (state size 16,
// chunk 64) the second is 3-5x slower. GoMLX's DotGeneral gradient lands in
// the second form, so bmm nodes get their gradient from bmmVJP instead,
// which writes both input gradients in the first form.

var (
	bmmNodes sync.Map // *Node -> struct{}: DotGeneral nodes made by bmm
	bmmOnce  sync.Once
)

func installBMMGradient() {
	bmmOnce.Do(func() {
		orig := VJPRegistration[NodeTypeDotGeneral]
		VJPRegistration[NodeTypeDotGeneral] = func(node *Node, v []*Node, s shapes.Shape) []*Node {
			if _, ok := bmmNodes.Load(node); ok {
				return bmmVJP(node, v[0])
			}
			return orig(node, v, s)
		}
	})
}

// bmm is the batched product a [B, N, K] x b [B, K, M] -> [B, N, M].
func bmm(a, b *Node) *Node {
	installBMMGradient()
	out := Einsum("bnk,bkm->bnm", a, b)
	if out.Type() == NodeTypeDotGeneral {
		ins := out.Inputs()
		if len(ins) == 2 && ins[0] == a && ins[1] == b {
			bmmNodes.Store(out, struct{}{})
		}
	}
	return out
}

func bmmVJP(node, v *Node) []*Node {
	a, b := node.Inputs()[0], node.Inputs()[1]
	da := Einsum("bnm,bmk->bnk", v, Transpose(b, 1, 2))
	db := Einsum("bkn,bnm->bkm", Transpose(a, 1, 2), v)
	return []*Node{da, db}
}

// forgetBMM drops the registrations of the nodes of graph g once its
// gradient has been built, so that finished graphs can be collected.
func forgetBMM(g *Graph) {
	bmmNodes.Range(func(k, _ any) bool {
		if k.(*Node).Graph() == g {
			bmmNodes.Delete(k)
		}
		return true
	})
}
