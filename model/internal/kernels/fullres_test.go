package kernels

import "testing"

// TestQuantize01 checks the 8-bit input path against MambaHSI's
// (uint8)(255 x) / 255 on values at and around the level boundaries.
func TestQuantize01(t *testing.T) {
	for _, tc := range []struct {
		x    float32
		want float32
	}{
		{0, 0}, {1, 1}, {0.5, 127.0 / 255}, {0.0039, 0}, {1.0 / 255, 1.0 / 255}, {0.99999, 254.0 / 255}, {0.25, 63.0 / 255},
	} {
		if got := Quantize01(tc.x, 256); got != tc.want {
			t.Errorf("Quantize01(%g, 256) = %g, want %g", tc.x, got, tc.want)
		}
		if got := Quantize01(tc.x, 0); got != tc.x {
			t.Errorf("Quantize01(%g, 0) = %g, want the value itself", tc.x, got)
		}
	}
}
