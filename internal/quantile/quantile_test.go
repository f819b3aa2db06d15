package quantile

import "testing"

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		sorted []float64
		pct    float64
		want   float64
	}{
		{[]float64{5}, 50, 5},
		{[]float64{1, 2, 3, 4, 5}, 0, 1},
		{[]float64{1, 2, 3, 4, 5}, 100, 5},
		{[]float64{1, 2, 3, 4, 5}, 50, 3},
		{[]float64{1, 2}, 50, 1.5},
		{[]float64{0, 10}, 99, 9.9},
	} {
		if got := Percentile(tc.sorted, tc.pct); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("Percentile(%v, %g) = %g, want %g", tc.sorted, tc.pct, got, tc.want)
		}
	}
}
