package sensors

import (
	"strings"

	"github.com/pnec/pnec/spectral"
)

// What several sensors' readers share; a sensor's own file needs nothing
// else of another's.

// reflectance01 is the radiometry of reflectance delivered 0-1.
var reflectance01 = spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 1}

// reflectanceFactor is the scale of reflectance delivered as integers
// x10000.
const reflectanceFactor = 10000

// constSlice is n copies of v.
func constSlice(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// allBands is 0 .. n-1: every band of an array, in order.
func allBands(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// isHDF5Name reports whether a file name has an HDF5 extension.
func isHDF5Name(name string) bool {
	lower := strings.ToLower(name)
	for _, ext := range []string{".he5", ".h5", ".hdf5", ".hdf"} {
		if strings.HasSuffix(lower, ext) {
			return true
		}
	}
	return false
}
