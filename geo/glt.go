package geo

import (
	"fmt"
	"math"

	"github.com/pnec/pnec/internal/buffers"
)

// A cube delivered in sensor geometry (rows and columns as the instrument
// saw them) with a geometry lookup table (GLT) that says, for each pixel of
// the orthorectified grid, which sensor pixel it sees: GDAL 3.8
// orthorectifies such files in its netCDF driver; 3.6 cannot, so geo
// applies the table itself, window by window (Cube.Lookup).

// gltCube reads the ortho grid of a sensor-geometry cube through its
// geometry lookup table: glt_x and glt_y give each ortho pixel's sensor
// column and row, 1-based, 0 (or less) where no sensor pixel falls (read
// as NaN, invalid). A window is read in blocks of gltBlock x gltBlock
// ortho pixels, each with one read of the sensor rows and columns its
// pixels see (about the block's size turned by the ground track's angle:
// twice its area at 45 degrees), so no whole cube is held.
type gltCube struct {
	file             *mdFile
	inner            *mdCube
	gx, gy           *mdArray
	srcRows, srcCols int
	gxBuf, gyBuf     []int32
	src              []float32
}

const gltBlock = 64

func (g *gltCube) readBSQ(w Window, bufCols, bufRows int, bands []int, buf []float32) error {
	npix := bufCols * bufRows
	nb := len(bands)
	for b0 := 0; b0 < bufRows; b0 += gltBlock {
		for c0 := 0; c0 < bufCols; c0 += gltBlock {
			bh, bw := min(gltBlock, bufRows-b0), min(gltBlock, bufCols-c0)
			// The ortho pixels of this block of the buffer.
			rows, cols := make([]int, bh), make([]int, bw)
			for r := range bh {
				rows[r] = w.Row + nearestIndex(b0+r, bufRows, w.Rows)
			}
			for c := range bw {
				cols[c] = w.Col + nearestIndex(c0+c, bufCols, w.Cols)
			}
			if err := g.readGLT(rows, cols); err != nil {
				return err
			}
			r0, r1, s0, s1 := math.MaxInt, -1, math.MaxInt, -1
			for i := range bh * bw {
				x, y := int(g.gxBuf[i])-1, int(g.gyBuf[i])-1
				if x < 0 || y < 0 || x >= g.srcCols || y >= g.srcRows {
					g.gxBuf[i] = 0
					continue
				}
				r0, r1, s0, s1 = min(r0, y), max(r1, y), min(s0, x), max(s1, x)
			}
			if r1 >= 0 {
				sw := Window{Col: s0, Row: r0, Cols: s1 - s0 + 1, Rows: r1 - r0 + 1}
				if err := checkGLTSpread(rows, cols, sw, nb); err != nil {
					return err
				}
				g.src = buffers.Resize(g.src, nb*sw.Cols*sw.Rows)
				if err := g.inner.readBSQ(sw, sw.Cols, sw.Rows, bands, g.src); err != nil {
					return err
				}
			}
			area := 0
			if r1 >= 0 {
				area = (r1 - r0 + 1) * (s1 - s0 + 1)
			}
			nan := float32(math.NaN())
			for r := range bh {
				for c := range bw {
					i := r*bw + c
					o := (b0+r)*bufCols + c0 + c
					if g.gxBuf[i] <= 0 {
						for k := range nb {
							buf[k*npix+o] = nan
						}
						continue
					}
					sp := (int(g.gyBuf[i])-1-r0)*(s1-s0+1) + int(g.gxBuf[i]) - 1 - s0
					for k := range nb {
						buf[k*npix+o] = g.src[k*area+sp]
					}
				}
			}
		}
	}
	return nil
}

// A block's sensor window (gltCube.readBSQ) is refused before it is
// allocated when it is over gltMaxSpread times the block's ortho footprint
// and over gltMinWindow pixels: a real lookup table sends a block to about
// its own area (twice at 45 degrees); one that scatters a block over the
// whole sensor cube made a 48 KB file declaring a 2500 x 2500 x 32 cube
// take 1.65 GB whatever the memory budget.
const (
	gltMaxSpread = 8
	gltMinWindow = 256 * 256
)

// checkGLTSpread refuses the sensor window sw (of nb bands) that the ortho
// pixels rows x cols look up when it is too large for them.
func checkGLTSpread(rows, cols []int, sw Window, nb int) error {
	foot := (rows[len(rows)-1] - rows[0] + 1) * (cols[len(cols)-1] - cols[0] + 1)
	if n := sw.Cols * sw.Rows; n > gltMinWindow && n > gltMaxSpread*foot {
		return fmt.Errorf("geometry lookup table: ortho rows %d..%d, columns %d..%d look up sensor pixels over %d x %d (%.0f times their area; %d MiB for %d bands): not the lookup table of one swath",
			rows[0], rows[len(rows)-1], cols[0], cols[len(cols)-1], sw.Rows, sw.Cols, float64(n)/float64(foot), int64(n)*int64(nb)*4>>20, nb)
	}
	return nil
}

// readGLT reads the GLT entries of the ortho pixels rows x cols (each
// list ascending) into gxBuf, gyBuf.
func (g *gltCube) readGLT(rows, cols []int) error {
	n := len(rows) * len(cols)
	g.gxBuf, g.gyBuf = buffers.Resize(g.gxBuf, n), buffers.Resize(g.gyBuf, n)
	rs, cs := stepOf(rows), stepOf(cols)
	if rs > 0 && cs > 0 {
		start, count, step := []int{rows[0], cols[0]}, []int{len(rows), len(cols)}, []int{rs, cs}
		if err := g.gx.readI32(start, count, step, g.gxBuf); err != nil {
			return err
		}
		return g.gy.readI32(start, count, step, g.gyBuf)
	}
	// Uneven sampling: read the span and pick.
	h, w := rows[len(rows)-1]-rows[0]+1, cols[len(cols)-1]-cols[0]+1
	tx, ty := make([]int32, h*w), make([]int32, h*w)
	start, count := []int{rows[0], cols[0]}, []int{h, w}
	if err := g.gx.readI32(start, count, nil, tx); err != nil {
		return err
	}
	if err := g.gy.readI32(start, count, nil, ty); err != nil {
		return err
	}
	for i, r := range rows {
		for j, c := range cols {
			k := (r-rows[0])*w + c - cols[0]
			g.gxBuf[i*len(cols)+j], g.gyBuf[i*len(cols)+j] = tx[k], ty[k]
		}
	}
	return nil
}

// stepOf is the common difference of an ascending list (1 for one
// element), 0 when uneven.
func stepOf(v []int) int {
	if len(v) < 2 {
		return 1
	}
	d := v[1] - v[0]
	for i := 2; i < len(v); i++ {
		if v[i]-v[i-1] != d {
			return 0
		}
	}
	if d < 1 {
		return 0
	}
	return d
}

func (g *gltCube) close() error {
	g.gx.close()
	g.gy.close()
	err := g.inner.close()
	if g.file != nil {
		if e := g.file.close(); err == nil {
			err = e
		}
	}
	return err
}
