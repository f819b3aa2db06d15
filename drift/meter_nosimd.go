//go:build !(goexperiment.simd && amd64)

package drift

// addPixel is addPixelScalar here.
func addPixel(sum, bad []float64, px []float32) { addPixelScalar(sum, bad, px) }
