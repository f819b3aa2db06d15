//go:build !(goexperiment.simd && amd64)

package transpose

// blocks8 has no vector form here: every band is left to scalarBands.
func blocks8[T int16 | uint16 | uint8 | float32](bsq []T, dst []float32, npix, p0, n, nb int) int {
	return 0
}
