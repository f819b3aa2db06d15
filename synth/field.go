package synth

import "math"

// splitmix64 is a fast integer hash; it turns lattice coordinates and a seed
// into independent-looking values without storing any lattice.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// lattice returns a value in [-1, 1) for integer lattice point (ix, iy).
func lattice(seed uint64, ix, iy int64) float64 {
	h := splitmix64(seed ^ splitmix64(uint64(ix)*0x632be59bd9b4e019^uint64(iy)*0x8cb92ba72f3d8dd7))
	return float64(h>>11)/float64(1<<52) - 1
}

// field is a smooth random function of the plane (value noise, several
// octaves), defined everywhere without memory, scaled to unit variance.
// Coordinates are in pixels; cellPx is the size of the coarsest lattice cell.
type field struct {
	seed    uint64
	cellPx  float64
	octaves int
	scale   float64 // 1/sd, measured once at construction
}

func newField(seed uint64, cellPx float64, octaves int) field {
	f := field{seed: seed, cellPx: cellPx, octaves: octaves, scale: 1}
	// Measure the standard deviation on a fixed grid of points so that the
	// field can be used as a unit-variance Gaussian-like variable.
	var sum, sum2 float64
	n := 0
	step := cellPx / 7.3
	for i := 0; i < 64; i++ {
		for j := 0; j < 64; j++ {
			v := f.at(float64(i)*step, float64(j)*step*1.13)
			sum += v
			sum2 += v * v
			n++
		}
	}
	mean := sum / float64(n)
	sd := math.Sqrt(sum2/float64(n) - mean*mean)
	if sd > 0 {
		f.scale = 1 / sd
	}
	return f
}

func smooth(t float64) float64 { return t * t * (3 - 2*t) }

// at returns the field value at (x, y) pixels.
func (f field) at(x, y float64) float64 {
	var v, amp float64 = 0, 1
	cell := f.cellPx
	for o := 0; o < f.octaves; o++ {
		fx, fy := x/cell, y/cell
		ix, iy := math.Floor(fx), math.Floor(fy)
		tx, ty := smooth(fx-ix), smooth(fy-iy)
		s := f.seed + uint64(o)*0x51ed27
		x0, y0 := int64(ix), int64(iy)
		a := lattice(s, x0, y0)
		b := lattice(s, x0+1, y0)
		c := lattice(s, x0, y0+1)
		d := lattice(s, x0+1, y0+1)
		v += amp * ((a*(1-tx)+b*tx)*(1-ty) + (c*(1-tx)+d*tx)*ty)
		amp *= 0.5
		cell *= 0.5
	}
	return v * f.scale
}
