// Package quantile holds the one percentile rule the model's input
// transform and the drift figures share.
package quantile

import "math"

// Percentile is the pct-th percentile (0..100) of sorted (ascending, not
// empty), interpolated linearly between the two nearest ranks.
func Percentile(sorted []float64, pct float64) float64 {
	pos := pct / 100 * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i]*(1-f) + sorted[i+1]*f
}
