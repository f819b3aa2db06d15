package geo

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/pnec/pnec/internal/buffers"
	"github.com/pnec/pnec/spectral"
)

// mdPart is one array of a cube scene: which of its axes are bands, rows
// and columns, and which scene bands come from which of its band indices.
type mdPart struct {
	arr                        *mdArray
	bandAxis, rowAxis, colAxis int // -1 bandAxis: a 2-D array, one band
	// index[k] is the array band that scene band scene[k] reads.
	index, scene []int
}

// mdCube reads a scene whose bands live in one or more multidimensional
// arrays in any axis order (two detectors' cubes stored (rows, bands,
// cols), one cube (bands, rows, cols), one (rows, cols, bands)): each read
// is a hyperslab per array and run of bands, reordered into
// band-sequential scene bands.
type mdCube struct {
	file  *mdFile
	parts []mdPart
	// chunks is the largest decoded chunk of the parts' arrays (Info.Chunks).
	chunks Chunking
	owner  []struct{ part, pos int } // per scene band
	tmp    []float32
}

// newMDCube makes a cube of the parts, which together serve bands scene
// bands 0..bands-1 exactly once.
func newMDCube(file *mdFile, bands int, parts []mdPart) (*mdCube, error) {
	c := &mdCube{file: file, parts: parts, owner: make([]struct{ part, pos int }, bands)}
	seen := make([]bool, bands)
	for p, pt := range parts {
		if len(pt.index) != len(pt.scene) {
			return nil, errors.New("cube part with mismatched band lists")
		}
		if err := pt.arr.checkChunks(); err != nil {
			return nil, err
		}
		c.chunks = largerChunk(c.chunks, pt)
		for k, sb := range pt.scene {
			if sb < 0 || sb >= bands || seen[sb] {
				return nil, fmt.Errorf("cube part serves scene band %d twice or out of range", sb)
			}
			seen[sb] = true
			c.owner[sb] = struct{ part, pos int }{p, k}
			if pt.bandAxis >= 0 && (pt.index[k] < 0 || pt.index[k] >= pt.arr.dims[pt.bandAxis]) {
				return nil, fmt.Errorf("%s: band %d of %d", pt.arr.full, pt.index[k]+1, pt.arr.dims[pt.bandAxis])
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("no array serves scene band %d", i+1)
		}
	}
	return c, nil
}

// largerChunk is the larger of have and the chunk of part pt's array,
// its extent taken along pt's column, row and band axes (a 2-D array's
// chunk holds one band).
func largerChunk(have Chunking, pt mdPart) Chunking {
	dims, bytes := pt.arr.chunkShape()
	if bytes == 0 || int64(bytes) <= have.Bytes {
		return have
	}
	along := func(axis int) int {
		if axis < 0 || axis >= len(dims) {
			return 1
		}
		return max(dims[axis], 1)
	}
	return Chunking{Cols: along(pt.colAxis), Rows: along(pt.rowAxis), Bands: along(pt.bandAxis), Bytes: int64(bytes)}
}

// sampling returns, for a window of n source pixels read into m buffer
// pixels, the slab step when each buffer pixel is every step-th source
// pixel from the first (GDAL's decimated reads with an integer factor),
// else 0 (nearest sampling of a full read).
func sampling(n, m int) int {
	if n == m {
		return 1
	}
	if n%m == 0 {
		return n / m
	}
	return 0
}

func (c *mdCube) readBSQ(w Window, bufCols, bufRows int, bands []int, buf []float32) error {
	npix := bufCols * bufRows
	rs, cs := sampling(w.Rows, bufRows), sampling(w.Cols, bufCols)
	// Rows and columns of the slab: the buffer's own, stepped, or the whole
	// window (then sampled to the nearest).
	slabRows, slabCols, rowStep, colStep := bufRows, bufCols, rs, cs
	if rs == 0 {
		slabRows, rowStep = w.Rows, 1
	}
	if cs == 0 {
		slabCols, colStep = w.Cols, 1
	}
	// Requested bands per part, with their positions in bands.
	type want struct{ idx, out int }
	per := make([][]want, len(c.parts))
	for k, b := range bands {
		o := c.owner[b]
		per[o.part] = append(per[o.part], want{c.parts[o.part].index[o.pos], k})
	}
	for p, ws := range per {
		if len(ws) == 0 {
			continue
		}
		pt := c.parts[p]
		sort.Slice(ws, func(i, j int) bool { return ws[i].idx < ws[j].idx })
		// Runs of consecutive array bands, each one slab.
		for i := 0; i < len(ws); {
			j := i + 1
			for j < len(ws) && ws[j].idx == ws[j-1].idx+1 {
				j++
			}
			nb := 1
			if pt.bandAxis >= 0 {
				nb = ws[j-1].idx - ws[i].idx + 1
			}
			nd := len(pt.arr.dims)
			start, count, step := make([]int, nd), make([]int, nd), make([]int, nd)
			for a := range nd {
				step[a] = 1
			}
			// A stepped slab starts half a step in: buffer pixel i is source
			// pixel floor((i+0.5) x step), the nearest centre, as GDAL samples.
			start[pt.rowAxis], count[pt.rowAxis], step[pt.rowAxis] = w.Row+rowStep/2, slabRows, rowStep
			start[pt.colAxis], count[pt.colAxis], step[pt.colAxis] = w.Col+colStep/2, slabCols, colStep
			if pt.bandAxis >= 0 {
				start[pt.bandAxis], count[pt.bandAxis] = ws[i].idx, nb
			}
			n := nb * slabRows * slabCols
			c.tmp = buffers.Resize(c.tmp, n)
			if err := pt.arr.readF32(start, count, step, c.tmp); err != nil {
				return err
			}
			// C-order strides of the slab, per axis.
			stride := make([]int, nd)
			s := 1
			for a := nd - 1; a >= 0; a-- {
				stride[a] = s
				s *= count[a]
			}
			sb := 0
			if pt.bandAxis >= 0 {
				sb = stride[pt.bandAxis]
			}
			sr, sc := stride[pt.rowAxis], stride[pt.colAxis]
			for k := i; k < j; k++ {
				src := c.tmp[(ws[k].idx-ws[i].idx)*sb:]
				dst := buf[ws[k].out*npix : (ws[k].out+1)*npix]
				for r := range bufRows {
					rr := r
					if rs == 0 {
						rr = nearestIndex(r, bufRows, w.Rows)
					}
					for cc := range bufCols {
						ci := cc
						if cs == 0 {
							ci = nearestIndex(cc, bufCols, w.Cols)
						}
						dst[r*bufCols+cc] = src[rr*sr+ci*sc]
					}
				}
			}
			i = j
		}
	}
	return nil
}

// nearestIndex is the source pixel (of n) whose centre is nearest buffer
// pixel i's (of m), as GDAL's nearest-neighbour decimation picks it.
func nearestIndex(i, m, n int) int {
	return min(n-1, int((float64(i)+0.5)*float64(n)/float64(m)))
}

func (c *mdCube) close() error {
	for _, p := range c.parts {
		p.arr.close()
	}
	if c.file != nil {
		return c.file.close()
	}
	return nil
}

// newCubeScene makes a Scene read through cube: in describes it (size,
// bands, georeference, band set, product); nodata (per band, NaN for none)
// are the arrays' fill values; scale and offset are applied when reading.
func newCubeScene(in Info, cube cubeReader, nodata, scale, offset []float64) (*Scene, error) {
	n := in.Bands
	if len(nodata) != n || len(scale) != n || len(offset) != n {
		return nil, fmt.Errorf("%s: per-band lists of %d/%d/%d values for %d bands", in.Name, len(nodata), len(scale), len(offset), n)
	}
	s := &Scene{name: in.Name, cube: cube}
	switch c := cube.(type) {
	case *mdCube:
		in.Chunks = c.chunks
	case *gltCube:
		// Unorthorectified rows and columns: a tile's pixels come from
		// a region of about its size turned (gltCube), counted as the
		// tile's own.
		in.Chunks = c.inner.chunks
	}
	s.scale, s.offset = make([]float32, n), make([]float32, n)
	s.nodata, s.hasNoData = make([]float32, n), make([]bool, n)
	in.NoData, in.HasNoData = make([]float64, n), make([]bool, n)
	in.Scale, in.Offset = append([]float64(nil), scale...), append([]float64(nil), offset...)
	if in.BandNames == nil {
		in.BandNames = make([]string, n)
	}
	for i := range n {
		s.scale[i], s.offset[i] = float32(scale[i]), float32(offset[i])
		if !math.IsNaN(nodata[i]) {
			s.nodata[i], s.hasNoData[i] = float32(nodata[i]), true
			in.NoData[i], in.HasNoData[i] = nodata[i], true
		}
	}
	if in.DataType == "" {
		in.DataType = "Float32"
	}
	in.SampleBytes = max(in.SampleBytes, 4)
	if in.BlockCols == 0 {
		in.BlockCols, in.BlockRows = min(in.Cols, 256), min(in.Rows, 64)
	}
	if in.HasGeoTransform {
		if err := checkGeoTransform(in.GeoTransform); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
	}
	if in.WKT != "" {
		in.EPSG = epsgOf(in.WKT)
		if in.HasGeoTransform {
			fp, err := footprintWGS84(in.GeoTransform, in.WKT, in.Cols, in.Rows)
			if err != nil {
				return nil, fmt.Errorf("%s: footprint: %w", in.Name, err)
			}
			in.FootprintWGS84 = fp
		}
	}
	if !in.HasGeoTransform {
		in.GeoTransform = [6]float64{0, 1, 0, 0, 0, 1}
	}
	s.info = in
	s.setSpecs()
	return s, nil
}

// reflectance01 is the radiometry of reflectance delivered 0-1.
var reflectance01 = spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 1}

// constSlice is n copies of v.
func constSlice(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
