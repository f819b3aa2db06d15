//go:build amd64

package kernels

import "testing"

// TestSgemmAVX2: sgemm on the AVX2 kernel, which an AVX-512 machine
// would not otherwise take.
func TestSgemmAVX2(t *testing.T) {
	if !haveGemm256 {
		t.Skip("no AVX2 and FMA on this machine")
	}
	defer func(v bool) { haveGemm512 = v }(haveGemm512)
	haveGemm512 = false
	checkSgemm(t)
}
