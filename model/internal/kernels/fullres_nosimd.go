//go:build !(goexperiment.simd && amd64)

package kernels

// FullResAvailable is false without GOEXPERIMENT=simd on amd64: the paper
// encoder's full-resolution stage stays in the GoMLX graph.
func FullResAvailable(int) bool { return false }

// FullRes is only built with GOEXPERIMENT=simd on amd64.
type FullRes struct{ hs, ws int }

func NewFullRes(Dims, Scene, Input, int) *FullRes { panic("FullRes: not built") }

func NewFullResWeights(Dims, []float32, []float32, []float32, []float32, []float32, []float32, int) *FullRes {
	panic("FullRes: not built")
}

func (*FullRes) SetWeights(we, be, gamma, beta, wc, bc []float32) { panic("FullRes: not built") }

func (*FullRes) Forward([]float64, []float64, []float32, bool) ([]float64, []float64) {
	panic("FullRes: not built")
}

func (*FullRes) Backward([]float32) (dwe, dbe, dgamma, dbeta, dwc, dbc []float32) {
	panic("FullRes: not built")
}

func (*FullRes) SetScene(Scene, Input) { panic("FullRes: not built") }

func (*FullRes) Release() {}
