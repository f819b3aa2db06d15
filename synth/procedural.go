package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

// Class values of procedural layouts.
const (
	ClassCropA    = 1
	ClassCropB    = 2
	ClassCropC    = 3
	ClassCropD    = 4
	ClassOrchard  = 5
	ClassBareSoil = 6
	ClassMeadow   = 7
	ClassWater    = 8
	ClassRoad     = 9
	ClassBuilding = 10
)

// ProceduralNames names the classes of procedural layouts.
var ProceduralNames = map[int]string{
	ClassCropA: "crop A", ClassCropB: "crop B", ClassCropC: "crop C", ClassCropD: "crop D",
	ClassOrchard: "orchard", ClassBareSoil: "bare soil", ClassMeadow: "meadow",
	ClassWater: "water", ClassRoad: "road", ClassBuilding: "building",
}

// maxProceduralPixels bounds procedural layouts (one byte per pixel in
// memory); larger scenes are made with a VRT that tiles a smaller block.
const maxProceduralPixels = 1 << 31

// Procedural draws a rural-suburban layout of rows x cols pixels: a rotated,
// irregular grid of fields (crops, orchards, bare soil) on meadow, water
// bodies, roads crossing the scene and buildings along them. Every shape is
// an orb polygon rasterised by planar point-in-polygon tests at pixel
// centres, so boundaries are not aligned with the pixel grid. Every pixel is
// labelled (no 0).
func Procedural(rows, cols int, seed uint64) (*Layout, error) {
	if rows <= 0 || cols <= 0 || rows*cols > maxProceduralPixels {
		return nil, fmt.Errorf("%w: procedural size %dx%d: want 1..%d pixels (use a VRT for larger scenes)",
			ErrLayout, rows, cols, maxProceduralPixels)
	}
	l := &Layout{Rows: rows, Cols: cols, Labels: make([]uint8, rows*cols), Names: ProceduralNames}
	for i := range l.Labels {
		l.Labels[i] = ClassMeadow
	}
	rng := rand.New(rand.NewPCG(seed, 0x9a0ced))
	drawFields(l, rng)
	drawWater(l, rng)
	drawRoadsAndBuildings(l, rng)
	return l, nil
}

// fill sets every pixel whose centre lies inside p to v.
func (l *Layout) fill(p orb.Polygon, v uint8) {
	b := p.Bound()
	r0 := max(0, int(math.Floor(b.Min[1]-0.5)))
	r1 := min(l.Rows-1, int(math.Ceil(b.Max[1]-0.5)))
	c0 := max(0, int(math.Floor(b.Min[0]-0.5)))
	c1 := min(l.Cols-1, int(math.Ceil(b.Max[0]-0.5)))
	for r := r0; r <= r1; r++ {
		row := l.Labels[r*l.Cols : (r+1)*l.Cols]
		for c := c0; c <= c1; c++ {
			if planar.PolygonContains(p, orb.Point{float64(c) + 0.5, float64(r) + 0.5}) {
				row[c] = v
			}
		}
	}
}

func uniform(rng *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }

// drawFields tiles the scene with a rotated grid of field strips of varying
// size, each shrunk by a gap (field margins stay meadow) and jittered.
func drawFields(l *Layout, rng *rand.Rand) {
	theta := uniform(rng, 5, 40) * math.Pi / 180
	if rng.IntN(2) == 0 {
		theta = -theta
	}
	cos, sin := math.Cos(theta), math.Sin(theta)
	cx, cy := float64(l.Cols)/2, float64(l.Rows)/2
	half := math.Hypot(cx, cy) + 50
	toXY := func(u, v float64) orb.Point { return orb.Point{cx + u*cos - v*sin, cy + u*sin + v*cos} }
	crops := []uint8{ClassCropA, ClassCropB, ClassCropC, ClassCropD, ClassOrchard, ClassBareSoil}
	for v := -half; v < half; {
		h := uniform(rng, 30, 110)
		for u := -half; u < half; {
			w := uniform(rng, 40, 160)
			if rng.Float64() < 0.85 {
				gap := uniform(rng, 1.2, 3.5)
				j := func() float64 { return uniform(rng, -2.5, 2.5) }
				ring := orb.Ring{
					toXY(u+gap+j(), v+gap+j()), toXY(u+w-gap+j(), v+gap+j()),
					toXY(u+w-gap+j(), v+h-gap+j()), toXY(u+gap+j(), v+h-gap+j()),
				}
				ring = append(ring, ring[0])
				l.fill(orb.Polygon{ring}, crops[rng.IntN(len(crops))])
			}
			u += w
		}
		v += h
	}
}

// drawWater adds lakes: star-shaped polygons whose radius varies smoothly
// with the angle.
func drawWater(l *Layout, rng *rand.Rand) {
	area := float64(l.Rows) * float64(l.Cols)
	n := int(area / (350 * 350))
	if n == 0 && rng.Float64() < area/(350*350)+0.3 {
		n = 1
	}
	maxR := math.Min(60, 0.25*math.Min(float64(l.Rows), float64(l.Cols)))
	if maxR < 4 {
		return
	}
	for i := 0; i < n; i++ {
		x, y := uniform(rng, 0, float64(l.Cols)), uniform(rng, 0, float64(l.Rows))
		r0 := uniform(rng, maxR/3, maxR)
		var ph [3]float64
		for k := range ph {
			ph[k] = uniform(rng, 0, 2*math.Pi)
		}
		const nv = 36
		ring := make(orb.Ring, 0, nv+1)
		for k := 0; k < nv; k++ {
			a := 2 * math.Pi * float64(k) / nv
			rr := r0 * (1 + 0.25*math.Sin(2*a+ph[0]) + 0.15*math.Sin(3*a+ph[1]) + 0.08*math.Sin(5*a+ph[2]))
			ring = append(ring, orb.Point{x + rr*math.Cos(a), y + rr*math.Sin(a)})
		}
		ring = append(ring, ring[0])
		l.fill(orb.Polygon{ring}, ClassWater)
	}
}

// quad returns the rectangle of length len and width w centred at (x, y)
// with its long axis at angle a.
func quad(x, y, length, w, a float64) orb.Polygon {
	ux, uy := math.Cos(a)*length/2, math.Sin(a)*length/2
	vx, vy := -math.Sin(a)*w/2, math.Cos(a)*w/2
	ring := orb.Ring{
		{x - ux - vx, y - uy - vy}, {x + ux - vx, y + uy - vy},
		{x + ux + vx, y + uy + vy}, {x - ux + vx, y - uy + vy}, {x - ux - vx, y - uy - vy},
	}
	return orb.Polygon{ring}
}

// drawRoadsAndBuildings draws gently curving roads from one edge to another
// (as short overlapping segment quads, so that no polygon has a huge bounding
// box) and clusters of buildings beside them.
func drawRoadsAndBuildings(l *Layout, rng *rand.Rand) {
	W, H := float64(l.Cols), float64(l.Rows)
	n := 1 + int((W+H)/700)
	for i := 0; i < n; i++ {
		var x0, y0, x1, y1 float64
		if rng.IntN(2) == 0 { // left to right
			x0, y0, x1, y1 = -10, uniform(rng, 0, H), W+10, uniform(rng, 0, H)
		} else { // top to bottom
			x0, y0, x1, y1 = uniform(rng, 0, W), -10, uniform(rng, 0, W), H+10
		}
		width := uniform(rng, 3, 7)
		length := math.Hypot(x1-x0, y1-y0)
		dir := math.Atan2(y1-y0, x1-x0)
		bend, phase := uniform(rng, 0, 0.05)*length, uniform(rng, 0, 2*math.Pi)
		const seg = 12.0
		steps := int(length/seg) + 1
		px, py := x0, y0
		for s := 1; s <= steps; s++ {
			t := float64(s) / float64(steps)
			off := bend * math.Sin(math.Pi*t+phase) * math.Sin(math.Pi*t)
			nx := x0 + (x1-x0)*t - math.Sin(dir)*off
			ny := y0 + (y1-y0)*t + math.Cos(dir)*off
			a := math.Atan2(ny-py, nx-px)
			d := math.Hypot(nx-px, ny-py)
			l.fill(quad((px+nx)/2, (py+ny)/2, d+width*0.8, width, a), ClassRoad)
			// Buildings: now and then a cluster on one side of the road.
			if rng.Float64() < 0.12 {
				side := 1.0
				if rng.IntN(2) == 0 {
					side = -1
				}
				k := 1 + rng.IntN(4)
				for b := 0; b < k; b++ {
					bl, bw := uniform(rng, 5, 16), uniform(rng, 4, 11)
					dist := width/2 + bw/2 + uniform(rng, 2, 12)
					along := uniform(rng, -20, 20)
					bx := nx + math.Cos(a)*along - math.Sin(a)*dist*side
					by := ny + math.Sin(a)*along + math.Cos(a)*dist*side
					l.fill(quad(bx, by, bl, bw, a+uniform(rng, -0.1, 0.1)), ClassBuilding)
				}
			}
			px, py = nx, ny
		}
	}
}
