package model

import (
	"math"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
)

const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

// adamNodes is Adam's step on each weight p with gradient g and moments m,
// v (a1 and c2 fold in the bias corrections): the new weights, then the
// new first moments, then the new second moments.
func adamNodes(grads, pNodes, mNodes, vNodes []*Node, a1, c2 *Node) []*Node {
	var newP, newM, newV []*Node
	for i, gr := range grads {
		m := Add(MulScalar(mNodes[i], adamBeta1), MulScalar(gr, 1-adamBeta1))
		v := Add(MulScalar(vNodes[i], adamBeta2), MulScalar(Square(gr), 1-adamBeta2))
		step := Div(Mul(a1, m), AddScalar(Mul(Sqrt(v), c2), adamEps))
		newP = append(newP, Sub(pNodes[i], step))
		newM = append(newM, m)
		newV = append(newV, v)
	}
	out := append(newP, newM...)
	return append(out, newV...)
}

// adamStep is the graph's Adam update of weights w with moments m, v and
// gradient g, in float32: a1 is the learning rate over the first moment's
// bias correction, c2 one over the square root of the second's.
func adamStep(w, m, v, g []float32, a1, c2 float32) {
	for i, gi := range g {
		m[i] = m[i]*adamBeta1 + gi*(1-adamBeta1)
		v[i] = v[i]*adamBeta2 + gi*gi*(1-adamBeta2)
		w[i] -= a1 * m[i] / (float32(math.Sqrt(float64(v[i])))*c2 + adamEps)
	}
}
