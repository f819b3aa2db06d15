package tiling

import (
	"fmt"
)

// Recovery are the AvgPool recovery settings: P_rec = (1-Eta) P + Eta
// AvgPool_Window(P), the paper's spatial consistency refinement, which
// runs on the stitched probabilities (the canvas), never on a tile alone.
// A model stores its own (model.RecoveryParams is this type).
type Recovery struct {
	Window int     // odd window side in pixels (default 9)
	Eta    float64 // strength in 0..1 (default 1.0)
}

// inside reports whether o lies inside r.
func inside(o, r Rect) bool {
	return o.Rows >= 0 && o.Cols >= 0 &&
		o.Row >= r.Row && o.Col >= r.Col &&
		o.Row+o.Rows <= r.Row+r.Rows && o.Col+o.Cols <= r.Col+r.Cols
}

// Halo is the number of pixels a region's recovery reads beyond each side of
// the region: Window/2. A tile whose output rows are [r0, r1) needs input rows
// [r0-Halo, r1+Halo) clipped to the scene to match a whole-scene Recover.
func (p Recovery) Halo() int {
	if p.Window <= 1 || p.Eta == 0 {
		return 0
	}
	return p.Window / 2
}

// Validate reports parameters that Recover cannot apply: an even or
// non-positive window, or a strength outside 0..1.
func (p Recovery) Validate() error {
	if p.Window < 1 || p.Window%2 == 0 {
		return fmt.Errorf("recovery window %d: must be an odd number of pixels >= 1", p.Window)
	}
	if !(p.Eta >= 0 && p.Eta <= 1) {
		return fmt.Errorf("recovery strength %g: must be in 0..1", p.Eta)
	}
	return nil
}

// Recover applies the spatial consistency refinement of the paper to a whole
// scene: P_rec = (1-Eta) P + Eta AvgPool_Window(P).
//
// prob is [rows][cols][classes] (pixel-interleaved), valid[r*cols+c] marks
// the pixels with data (nil = all valid). The window average of a pixel is
// taken over the valid pixels of its Window x Window neighbourhood that lie
// inside the scene, so nodata pixels and the scene border do not dilute the
// probabilities; invalid pixels' outputs are zero. The cost is
// O(rows*cols*classes) whatever the window (separable running sums).
//
// Recover panics when the slice lengths do not match the shape or p is
// invalid (see Validate): both are programming errors of the caller.
func Recover(prob []float32, valid []bool, rows, cols, classes int, p Recovery) []float32 {
	reg := Rect{Rows: rows, Cols: cols}
	out, err := RecoverRegion(prob, valid, reg, reg, classes, p)
	if err != nil {
		panic("tiling.Recover: " + err.Error())
	}
	return out
}

// RecoverRows is RecoverRegion for full-width row strips, the layout of a
// streaming classifier: the input holds scene rows [inRow0, inRow0+inRows)
// of a scene cols wide, and the output is scene rows [outRow0,
// outRow0+outRows), which must lie inside the input. Output rows equal those
// of a whole-scene Recover when the input covers [outRow0-Halo,
// outRow0+outRows+Halo) clipped to the scene.
func RecoverRows(prob []float32, valid []bool, inRow0, inRows, cols, classes int,
	outRow0, outRows int, p Recovery) ([]float32, error) {
	return RecoverRegion(prob, valid,
		Rect{Row: inRow0, Rows: inRows, Cols: cols},
		Rect{Row: outRow0, Rows: outRows, Cols: cols}, classes, p)
}

// RecoverRegion computes the recovered probabilities of the pixels of out
// from the block in, which holds prob ([in.Rows][in.Cols][classes]) and valid
// (nil = all valid) and must contain out. Neighbourhoods are clipped to in:
// pass an input that extends Halo pixels beyond out on every side where the
// scene continues (and stops at the scene border) to get exactly the values
// of a whole-scene Recover. The result is [out.Rows][out.Cols][classes], zero
// at invalid pixels.
func RecoverRegion(prob []float32, valid []bool, in, out Rect, classes int, p Recovery) ([]float32, error) {
	if err := checkRegion(prob, valid, in, out, classes, p); err != nil {
		return nil, err
	}
	res := make([]float32, out.Rows*out.Cols*classes)
	if out.Rows == 0 || out.Cols == 0 {
		return res, nil
	}
	// Output pixel (r, c) in scene coordinates reads input rows
	// [r-h, r+h] and cols [c-h, c+h] clipped to in.
	g := region{prob: prob, valid: valid, in: in, out: out, classes: classes, h: p.Halo(),
		oR0: out.Row - in.Row, oC0: out.Col - in.Col}
	if g.h == 0 {
		g.copyValid(res)
		return res, nil
	}
	// The rows of the input that any output pixel reads.
	rLo, rHi := max(g.oR0-g.h, 0), min(g.oR0+out.Rows+g.h, in.Rows)
	hs, hn := g.rowSums(rLo, rHi)
	g.blendColumns(res, hs, hn, rLo, rHi, p.Eta)
	return res, nil
}

// checkRegion refuses a RecoverRegion call whose settings, shapes or
// rectangles do not fit together.
func checkRegion(prob []float32, valid []bool, in, out Rect, classes int, p Recovery) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if classes < 1 || in.Rows < 0 || in.Cols < 0 {
		return fmt.Errorf("recover: bad shape %v x %d classes", in, classes)
	}
	if len(prob) != in.Rows*in.Cols*classes {
		return fmt.Errorf("recover: %d probabilities for %v x %d classes, want %d",
			len(prob), in, classes, in.Rows*in.Cols*classes)
	}
	if valid != nil && len(valid) != in.Rows*in.Cols {
		return fmt.Errorf("recover: %d validity flags for %v, want %d", len(valid), in, in.Rows*in.Cols)
	}
	if !inside(out, in) {
		return fmt.Errorf("recover: output %v is not inside input %v", out, in)
	}
	return nil
}

// region is one RecoverRegion call: the input block (prob, valid, in),
// the output rectangle inside it at offset (oR0, oC0), and the halo h.
type region struct {
	prob     []float32
	valid    []bool // nil = all valid
	in, out  Rect
	classes  int
	h        int
	oR0, oC0 int // out's offset in the input block
}

func (g *region) isValid(i int) bool { return g.valid == nil || g.valid[i] }

// copyValid is the recovery without a halo: each valid output pixel's
// probabilities as they are.
func (g *region) copyValid(res []float32) {
	in, out, classes := g.in, g.out, g.classes
	for r := 0; r < out.Rows; r++ {
		for c := 0; c < out.Cols; c++ {
			src := (g.oR0+r)*in.Cols + g.oC0 + c
			if !g.isValid(src) {
				continue
			}
			copy(res[(r*out.Cols+c)*classes:(r*out.Cols+c+1)*classes], g.prob[src*classes:(src+1)*classes])
		}
	}
}

// rowSums is pass 1 (horizontal): for every input row in [rLo, rHi) and
// every output column, the sum of the valid probabilities in [c-h, c+h]
// (hs, [rHi-rLo][out.Cols][classes]) and their count (hn). Sums run in
// float64 so that the sliding add/subtract does not drift.
func (g *region) rowSums(rLo, rHi int) (hs []float32, hn []int32) {
	in, out, classes, h, oC0 := g.in, g.out, g.classes, g.h, g.oC0
	cLo, cHi := max(oC0-h, 0), min(oC0+out.Cols+h, in.Cols) // input columns needed
	nr := rHi - rLo
	hs = make([]float32, nr*out.Cols*classes)
	hn = make([]int32, nr*out.Cols)
	acc := make([]float64, classes)
	for ir := 0; ir < nr; ir++ {
		row := rLo + ir
		for k := range acc {
			acc[k] = 0
		}
		n := int32(0)
		add := func(col int, sign float64) {
			i := row*in.Cols + col
			if !g.isValid(i) {
				return
			}
			px := g.prob[i*classes : (i+1)*classes]
			for k, v := range px {
				acc[k] += sign * float64(v)
			}
			if sign > 0 {
				n++
			} else {
				n--
			}
		}
		// Window of output column 0 (input column oC0): [oC0-h, oC0+h] clipped.
		lo, hi := oC0-h, oC0+h // inclusive bounds of the current window
		for col := max(lo, cLo); col <= min(hi, cHi-1); col++ {
			add(col, 1)
		}
		for c := 0; c < out.Cols; c++ {
			if c > 0 {
				if lo >= cLo && lo < cHi {
					add(lo, -1)
				}
				lo++
				hi++
				if hi >= cLo && hi < cHi {
					add(hi, 1)
				}
			}
			dst := hs[(ir*out.Cols+c)*classes : (ir*out.Cols+c+1)*classes]
			for k := range dst {
				dst[k] = float32(acc[k])
			}
			hn[ir*out.Cols+c] = n
		}
	}
	return hs, hn
}

// blendColumns is pass 2 (vertical): it slides a window of h rows either
// side over the horizontal sums hs and counts hn of the input rows [rLo,
// rHi), one accumulator per output column and class, and writes each valid
// output pixel's (1-eta)*own + eta*window mean into res.
func (g *region) blendColumns(res, hs []float32, hn []int32, rLo, rHi int, eta float64) {
	in, out, classes := g.in, g.out, g.classes
	vacc := make([]float64, out.Cols*classes)
	vn := make([]int32, out.Cols)
	addRow := func(ir int, sign float64) {
		src := hs[ir*out.Cols*classes : (ir+1)*out.Cols*classes]
		for j, v := range src {
			vacc[j] += sign * float64(v)
		}
		cnt := hn[ir*out.Cols : (ir+1)*out.Cols]
		if sign > 0 {
			for j, v := range cnt {
				vn[j] += v
			}
		} else {
			for j, v := range cnt {
				vn[j] -= v
			}
		}
	}
	lo, hi := g.oR0-g.h, g.oR0+g.h // inclusive input-row bounds of the window of output row 0
	for row := max(lo, rLo); row <= min(hi, rHi-1); row++ {
		addRow(row-rLo, 1)
	}
	for r := 0; r < out.Rows; r++ {
		if r > 0 {
			if lo >= rLo && lo < rHi {
				addRow(lo-rLo, -1)
			}
			lo++
			hi++
			if hi >= rLo && hi < rHi {
				addRow(hi-rLo, 1)
			}
		}
		for c := 0; c < out.Cols; c++ {
			src := (g.oR0+r)*in.Cols + g.oC0 + c
			if !g.isValid(src) {
				continue
			}
			// The pixel itself is valid and inside its window, so the count is >= 1.
			inv := 1 / float64(vn[c])
			px := g.prob[src*classes : (src+1)*classes]
			dst := res[(r*out.Cols+c)*classes : (r*out.Cols+c+1)*classes]
			a := vacc[c*classes : (c+1)*classes]
			for k := range dst {
				dst[k] = float32((1-eta)*float64(px[k]) + eta*a[k]*inv)
			}
		}
	}
}

// Argmax returns, for each pixel of prob ([pixels][classes]), the dense index
// of its largest probability (ArgmaxPixel): ties go to the lowest index, and
// pixels whose probabilities are all zero (invalid pixels after Recover) get -1.
func Argmax(prob []float32, classes int) []int {
	out := make([]int, len(prob)/classes)
	for i := range out {
		out[i] = ArgmaxPixel(prob[i*classes : (i+1)*classes])
	}
	return out
}

// ArgmaxPixel is the index of px's largest value; ties go to the lowest
// index; -1 when none is above 0 (an invalid pixel after Recover).
func ArgmaxPixel(px []float32) int {
	best, bv := -1, float32(0)
	for k, v := range px {
		if v > bv {
			best, bv = k, v
		}
	}
	return best
}
