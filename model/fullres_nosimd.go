//go:build !(goexperiment.simd && amd64)

package model

// fullResAvailable is false without GOEXPERIMENT=simd on amd64: the paper
// encoder's full-resolution stage stays in the GoMLX graph.
func fullResAvailable(int) bool { return false }

// fullRes is only built with GOEXPERIMENT=simd on amd64.
type fullRes struct{ hs, ws int }

func newFullRes(dims, Scene, inputSpec, int) *fullRes { panic("fullRes: not built") }

func (*fullRes) setWeights(we, be, gamma, beta, wc, bc []float32) { panic("fullRes: not built") }

func (*fullRes) forward([]float64, []float64, []float32, bool) ([]float64, []float64) {
	panic("fullRes: not built")
}

func (*fullRes) backward([]float32) (dwe, dbe, dgamma, dbeta, dwc, dbc []float32) {
	panic("fullRes: not built")
}

func newFullResWeights(dims, paramSet, int) *fullRes { panic("fullRes: not built") }

func (*fullRes) setScene(Scene, inputSpec) { panic("fullRes: not built") }

func (*fullRes) release() {}

// float64s converts v.
func float64s(v []float32) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x)
	}
	return o
}

// frChunkCells is the fullRes chunk size (see fullres_simd_amd64.go).
const frChunkCells = 32
