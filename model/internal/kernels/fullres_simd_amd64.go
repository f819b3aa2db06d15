//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"simd/archsimd"
	"sync"
)

// FullResAvailable says whether the paper encoder's full-resolution stage
// can run on pnec's own kernels (FullRes) for a network of width d: they
// need AVX2 and FMA (sgemm's AVX-512 kernel where the machine has it) and
// whole 16-float units of channels (f16).
func FullResAvailable(d int) bool { return (haveGemm512 || haveGemm256) && d%16 == 0 }

// FullRes is the paper encoder's full-resolution stage, 1x1 embedding,
// GroupNorm, SiLU, 3x3 convolution, MaxPool 2, GELU and AvgPool 2, run on
// pnec's own kernels instead of the GoMLX graph, forward and backward. It
// computes exactly what the model's paperEncoder graph computes (to float32
// rounding), but it never holds a full-resolution map:
//
//   - the scene is stretched, embedded, normalised and activated a few
//     pixel rows at a time (each worker keeps a rolling window of the six
//     rows that one row of stride-4 cells needs, halo included);
//   - the 3x3 convolution is Winograd's F(4x4, 3x3): each cell's 4x4
//     output tile takes 36 products of its transformed 6x6 input patch
//     with transformed weights (36 matrix products [tiles, D] x [D, D] per
//     chunk of tiles, sgemm on weights packed for its kernel) instead of
//     144, 4 times fewer multiplications than the direct form, and the
//     tile holds exactly the cell's four MaxPool windows, so the
//     convolution's output is pooled as it comes out of the transform and
//     never stored;
//   - training keeps, per pooling window and channel, the position of the
//     maximum (a byte) and GELU's derivative at it (a float32): 5 bytes
//     per channel at quarter resolution. The backward pass recomputes the
//     embedding, takes the input gradient of the convolution with Winograd
//     too (a 3x3 correlation of the output gradient with the flipped
//     weights), and the weight gradient from the transformed patches; the
//     GroupNorm gradient needs sums over the whole scene before the
//     per-pixel gradient of the embedding is known, so the embedding's
//     weight gradient is assembled from X^T dU and the Gram matrix of the
//     input (computed once per scene) instead of a second pass.
//
// The work is split over workers by rows of cells; each worker's partial
// sums are added in worker order, so results depend only on the worker
// count.
type FullRes struct {
	rows, cols, bands, d, groups int
	hs, ws                       int // the floor grid of stride-4 cells
	workers                      int

	s         Scene
	lo, scale []float32
	levels    int   // quantisation of the stretched input (Quantize01)
	in        Input // the input mode; with in.Add set, pixels go through it

	// Weights in the graph's layouts: we [B, D], wc [9D, D] (rows tap
	// (dy, dx) then input channel), the rest [D].
	we, be, gamma, beta, wc, bc []float32
	// uF[xi][c][k] are the Winograd-transformed weights G g G^T of the
	// convolution, uB[xi][k][c] those of the flipped, transposed kernel
	// (the input gradient's correlation).
	uF, uB []float32
	// The same packed for sgemm's micro-kernel (packB), one per component,
	// and the embedding's weights packed; nil where the kernel cannot
	// take them packed.
	uFp, uBp []PackedB
	wep      PackedB

	// Normalisation in use: per-channel scale a and shift b of
	// u = z a + b, from the per-group mean and variance.
	mean, variance []float64
	na, nb         []float32
	nmean, ninv    []float32 // per channel: its group's mean and 1/sqrt(var+eps)

	// Training: per window (2 hs x 2 ws) and channel, the position of the
	// maximum (0..3 row-major in the window) and GELU'(max)/4.
	argmax []uint8
	gm     []float32

	// The Gram matrix of the stretched input over the valid pixels, its
	// column sums and the valid count (the embedding's gradient).
	gram     []float64 // [B, B]
	sx       []float64 // [B]
	nvalid   int
	haveGram bool

	scr []*frScratch
}

// frScratch is one worker's buffers: six rows of the stretched input, of
// the embedding before normalisation and of the activated embedding
// (zero-padded by one column on each side), the Winograd transforms of a
// chunk of tiles, and (backward) the output gradient rows, the input
// gradient rows and the worker's partial sums.
type frScratch struct {
	cols, bands int // the scene width and band count the buffers are for
	xs, z, e    []float32
	v, m        []float32
	dc, de      []float32
	du          []float32
	sums        []float64 // pass 1: per channel sum and sum of squares
	dU          []float32 // [16, D, D]
	xtdu        []float32 // [B, D]
	dgamma      []float64
	dbeta       []float64
	dbc         []float64
	argIdx      [16]uint32
	rowSums     []float32
}

// winoG is Winograd F(4x4, 3x3)'s kernel transform G [6][3] (interpolation
// points 0, 1, -1, 2, -2 and infinity).
var winoG = [6][3]float64{
	{1.0 / 4, 0, 0},
	{-1.0 / 6, -1.0 / 6, -1.0 / 6},
	{-1.0 / 6, 1.0 / 6, -1.0 / 6},
	{1.0 / 24, 1.0 / 12, 1.0 / 6},
	{1.0 / 24, -1.0 / 12, 1.0 / 6},
	{0, 0, 1},
}

// NewFullRes prepares the stage of a network of sizes d for scene s,
// turned into the network's input by in.
func NewFullRes(d Dims, s Scene, in Input, workers int) *FullRes {
	f := &FullRes{bands: d.Bands, d: d.D, groups: d.Groups, workers: max(1, workers)}
	f.SetScene(s, in)
	return f
}

// NewFullResWeights prepares the stage with the model's weights (the
// graph's layouts, SetWeights), for scenes given later with SetScene.
func NewFullResWeights(d Dims, we, be, gamma, beta, wc, bc []float32, workers int) *FullRes {
	f := &FullRes{bands: d.Bands, d: d.D, groups: d.Groups, workers: max(1, workers)}
	f.SetWeights(we, be, gamma, beta, wc, bc)
	return f
}

// SetScene points the stage at scene s, turned into the network's input by
// in (one channel per band); the Gram matrix and the training windows of
// an earlier scene are dropped.
func (f *FullRes) SetScene(s Scene, in Input) {
	f.s, f.in, f.lo, f.scale, f.levels = s, in, in.Lo, in.Scale, in.Levels
	f.rows, f.cols, f.bands = s.Rows, s.Cols, s.Bands
	f.hs, f.ws = s.Rows/Stride, s.Cols/Stride
	f.haveGram, f.gram, f.sx = false, nil, nil
	f.argmax, f.gm = nil, nil
}

// Release drops the stage's reference to the scene and its training
// windows, keeping the weights and the workers' buffers.
func (f *FullRes) Release() {
	f.s = Scene{}
	f.argmax, f.gm = nil, nil
}

// SetWeights loads the stage's weights (the graph's layouts) and
// transforms the convolution's.
func (f *FullRes) SetWeights(we, be, gamma, beta, wc, bc []float32) {
	f.we, f.be, f.gamma, f.beta, f.wc, f.bc = we, be, gamma, beta, wc, bc
	d := f.d
	if f.uF == nil {
		f.uF = make([]float32, 36*d*d)
		f.uB = make([]float32, 36*d*d)
	}
	for xi := 0; xi < 6; xi++ {
		for nu := 0; nu < 6; nu++ {
			uf := f.uF[(xi*6+nu)*d*d:]
			ub := f.uB[(xi*6+nu)*d*d:]
			for c := 0; c < d; c++ {
				for k := 0; k < d; k++ {
					var sf, sb float64
					for a := 0; a < 3; a++ {
						for b := 0; b < 3; b++ {
							g := winoG[xi][a] * winoG[nu][b]
							if g == 0 {
								continue
							}
							sf += g * float64(wc[((3*a+b)*d+c)*d+k])
							sb += g * float64(wc[((3*(2-a)+(2-b))*d+c)*d+k])
						}
					}
					uf[c*d+k] = float32(sf)
					ub[k*d+c] = float32(sb)
				}
			}
		}
	}
	f.uFp, f.uBp = nil, nil
	for xi := 0; xi < 36; xi++ {
		pf, ok := packB(d, d, f.uF[xi*d*d:], d)
		pb, _ := packB(d, d, f.uB[xi*d*d:], d)
		if !ok {
			f.uFp, f.uBp = nil, nil
			break
		}
		f.uFp, f.uBp = append(f.uFp, pf), append(f.uBp, pb)
	}
	f.wep, _ = packB(f.bands, d, we, d)
}

// setNorm sets the normalisation to per-group mean and variance.
func (f *FullRes) setNorm(mean, variance []float64) {
	d, g := f.d, f.groups
	f.mean, f.variance = mean, variance
	if f.na == nil {
		f.na, f.nb = make([]float32, d), make([]float32, d)
		f.nmean, f.ninv = make([]float32, d), make([]float32, d)
	}
	for c := 0; c < d; c++ {
		gi := c / (d / g)
		inv := 1 / math.Sqrt(variance[gi]+1e-5)
		a := float64(f.gamma[c]) * inv
		f.na[c] = float32(a)
		f.nb[c] = float32(float64(f.beta[c]) - mean[gi]*a)
		f.nmean[c], f.ninv[c] = float32(mean[gi]), float32(inv)
	}
}

func (f *FullRes) scratch(w int) *frScratch {
	for len(f.scr) <= w {
		f.scr = append(f.scr, nil)
	}
	d, wd, b := f.d, f.cols, f.bands
	if sc := f.scr[w]; sc != nil && sc.cols == wd && sc.bands == b {
		return sc
	}
	t := chunkCells
	sc := &frScratch{cols: wd, bands: b,
		xs: make([]float32, 6*wd*b), z: make([]float32, 6*wd*d), e: make([]float32, 6*(wd+2)*d),
		v: make([]float32, 36*t*d), m: make([]float32, 36*t*d),
		sums: make([]float64, 2*d), rowSums: make([]float32, 2*d),
	}
	f.scr[w] = sc
	return sc
}

// parallel runs fn(w, lo, hi) on the workers over [0, n) split in contiguous ranges.
func (f *FullRes) parallel(n int, fn func(w, lo, hi int)) {
	nw := min(f.workers, max(1, n))
	for w := 0; w < nw; w++ {
		f.scratch(w) // before the goroutines: f.scr grows here
	}
	var wg sync.WaitGroup
	for w := 0; w < nw; w++ {
		lo, hi := w*n/nw, (w+1)*n/nw
		if w == nw-1 {
			fn(w, lo, hi)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w, lo, hi)
		}()
	}
	wg.Wait()
}

// stretchRows writes the input channels of the pixels of rows r0..r0+n-1
// to xs ([n, cols, bands]): stretched (vectorised), or as f.in makes them
// for the other modes; invalid pixels and rows outside the scene are zero.
func (f *FullRes) stretchRows(xs []float32, r0, n int) {
	wd, b := f.cols, f.bands
	for i := 0; i < n; i++ {
		r := r0 + i
		dst := xs[i*wd*b : (i+1)*wd*b]
		if r < 0 || r >= f.rows {
			clear(dst)
			continue
		}
		for c := 0; c < wd; c++ {
			px := r*wd + c
			out := dst[c*b : (c+1)*b]
			if !f.s.valid(px) {
				clear(out)
				continue
			}
			src := f.s.Data[px*b : (px+1)*b]
			clear(out)
			if f.in.Add != nil {
				f.in.Add(out, src)
				continue
			}
			AddStretch(out, src, f.lo, f.scale, f.levels)
		}
	}
}

// validPix says whether pixel (r, c) is inside the scene and valid.
func (f *FullRes) validPix(r, c int) bool {
	return r >= 0 && r < f.rows && c >= 0 && c < f.cols && f.s.valid(r*f.cols+c)
}

// embed computes slots s0..s0+n-1 (pixel rows r0..) of the worker's
// rolling rows: the stretched input, z = x We + be and, with the current
// normalisation, e = silu(z a + b) (zero for invalid pixels and the pad columns).
func (f *FullRes) embed(sc *frScratch, s0, r0, n int) {
	wd, b, d := f.cols, f.bands, f.d
	xs := sc.xs[s0*wd*b : (s0+n)*wd*b]
	f.stretchRows(xs, r0, n)
	z := sc.z[s0*wd*d : (s0+n)*wd*d]
	f.embedProduct(n*wd, xs, z)
	nv := d / 16
	for i := 0; i < n; i++ {
		r := r0 + i
		erow := sc.e[(s0+i)*(wd+2)*d : (s0+i+1)*(wd+2)*d]
		clear(erow[:d])
		clear(erow[(wd+1)*d:])
		for c := 0; c < wd; c++ {
			zp := z[(i*wd+c)*d : (i*wd+c+1)*d]
			ep := erow[(c+1)*d : (c+2)*d]
			valid := f.validPix(r, c)
			for j := 0; j < nv; j++ {
				o := j * 16
				zv := load16(zp[o : o+16]).Add(load16(f.be[o : o+16]))
				zv.Store(zp[o : o+16])
				if !valid {
					f16{}.Store(ep[o : o+16])
					continue
				}
				u := zv.MulAdd(load16(f.na[o:o+16]), load16(f.nb[o:o+16]))
				u.Mul(sigmoid16(u)).Store(ep[o : o+16])
			}
		}
	}
}

// embedProduct is z = xs We for n pixels (before the bias), on the packed
// weights where sgemm takes them.
func (f *FullRes) embedProduct(n int, xs, z []float32) {
	if f.wep.packed() {
		sgemmPacked(n, xs, f.bands, 1, f.wep, z, f.d, false)
		return
	}
	sgemm(n, f.d, f.bands, xs, f.bands, 1, f.we, f.d, z, f.d, false)
}

// roll moves the last two of the six rolling rows to the first two: the
// activations, and with inputs the inputs and embeddings (xs, z).
func (f *FullRes) roll(sc *frScratch, inputs bool) {
	wd, b, d := f.cols, f.bands, f.d
	if inputs {
		copy(sc.xs[:2*wd*b], sc.xs[4*wd*b:6*wd*b])
		copy(sc.z[:2*wd*d], sc.z[4*wd*d:6*wd*d])
	}
	copy(sc.e[:2*(wd+2)*d], sc.e[4*(wd+2)*d:6*(wd+2)*d])
}

// embedCellRow fills the six rolling rows for cell row c (slot s is
// pixel row 4c-1+s): all six for the worker's first row, else the four
// new ones. inputs keeps the rows' inputs and embeddings before the
// activation (xs, z) rolled too, which only the backward pass reads: the
// forward pass reads the activations alone, and rolling the others
// copied 1 MiB a cell row of a bench-big tile for nothing.
func (f *FullRes) embedCellRow(sc *frScratch, c int, first, inputs bool) {
	if first {
		f.embed(sc, 0, 4*c-1, 6)
		return
	}
	f.roll(sc, inputs)
	f.embed(sc, 2, 4*c+1, 4)
}

// stats computes the per-group mean and variance of z = x We + be over
// the scene's valid pixels (GroupNorm with the input's own statistics).
func (f *FullRes) stats() (mean, variance []float64) {
	d, g, wd, b := f.d, f.groups, f.cols, f.bands
	const blk = 4
	f.parallel((f.rows+blk-1)/blk, func(w, lo, hi int) {
		sc := f.scratch(w)
		clear(sc.sums)
		nv := d / 16
		for bi := lo; bi < hi; bi++ {
			r0 := bi * blk
			n := min(blk, f.rows-r0)
			xs := sc.xs[:n*wd*b]
			f.stretchRows(xs, r0, n)
			z := sc.z[:n*wd*d]
			f.embedProduct(n*wd, xs, z)
			for i := 0; i < n; i++ {
				var s1, s2 [8]f16 // D <= 128 in registers; wider networks below
				wide := nv > len(s1)
				clear(sc.rowSums)
				for c := 0; c < wd; c++ {
					if !f.s.valid((r0+i)*wd + c) {
						continue
					}
					zp := z[(i*wd+c)*d : (i*wd+c+1)*d]
					for j := 0; j < nv; j++ {
						o := j * 16
						zv := load16(zp[o : o+16]).Add(load16(f.be[o : o+16]))
						if wide {
							load16(sc.rowSums[o : o+16]).Add(zv).Store(sc.rowSums[o : o+16])
							zv.MulAdd(zv, load16(sc.rowSums[d+o:d+o+16])).Store(sc.rowSums[d+o : d+o+16])
							continue
						}
						s1[j] = s1[j].Add(zv)
						s2[j] = zv.MulAdd(zv, s2[j])
					}
				}
				if !wide {
					for j := 0; j < nv; j++ {
						s1[j].Store(sc.rowSums[j*16 : j*16+16])
						s2[j].Store(sc.rowSums[d+j*16 : d+j*16+16])
					}
				}
				for j := 0; j < 2*d; j++ {
					sc.sums[j] += float64(sc.rowSums[j])
				}
			}
		}
	})
	sum := make([]float64, 2*d)
	for w := 0; w < min(f.workers, max(1, (f.rows+blk-1)/blk)); w++ {
		for j := range sum {
			sum[j] += f.scr[w].sums[j]
		}
	}
	nvalid := 0
	for i := 0; i < f.rows*f.cols; i++ {
		if f.s.valid(i) {
			nvalid++
		}
	}
	mean, variance = make([]float64, g), make([]float64, g)
	per := d / g
	cnt := math.Max(float64(nvalid*per), 1)
	for gi := 0; gi < g; gi++ {
		var s1, s2 float64
		for c := gi * per; c < (gi+1)*per; c++ {
			s1 += sum[c]
			s2 += sum[d+c]
		}
		mean[gi] = s1 / cnt
		variance[gi] = math.Max(s2/cnt-mean[gi]*mean[gi], 0)
	}
	return mean, variance
}

// Forward computes the encoder's output f0 [hs*ws, D] (before the
// low-resolution valid mask) with the given normalisation, or the scene's
// own statistics when mean is nil, which it then returns. train keeps what
// backward needs.
func (f *FullRes) Forward(mean, variance []float64, f0 []float32, train bool) ([]float64, []float64) {
	if mean == nil {
		if train || f.haveGram {
			// Training runs many passes over one scene: its moments, once,
			// give every step's statistics.
			mean, variance = f.gramStats()
		} else {
			mean, variance = f.stats()
		}
	}
	f.setNorm(mean, variance)
	d := f.d
	nwin := 4 * f.hs * f.ws
	if train && len(f.argmax) != nwin*d {
		f.argmax = make([]uint8, nwin*d)
		f.gm = make([]float32, nwin*d)
	}
	if !train {
		f.argmax, f.gm = nil, nil
	}
	f.parallel(f.hs, func(w, lo, hi int) {
		sc := f.scratch(w)
		for c := lo; c < hi; c++ {
			f.embedCellRow(sc, c, c == lo, false)
			for j0 := 0; j0 < f.ws; j0 += chunkCells {
				f.forwardChunk(sc, c, j0, min(f.ws, j0+chunkCells), f0, train)
			}
		}
	})
	return mean, variance
}

// forwardChunk runs the convolution, pooling and GELU on cells j0..j1-1
// of cell row c: one Winograd F(4x4, 3x3) tile per cell, whose 4x4 output
// holds the cell's four MaxPool windows, so each tile gives its cell's F0.
func (f *FullRes) forwardChunk(sc *frScratch, c, j0, j1 int, f0 []float32, train bool) {
	d, wd := f.d, f.cols
	nt := j1 - j0
	f.inputTransform(sc.e, wd+2, j0, nt, sc.v)
	f.products(sc, nt, f.uFp, f.uF)
	nv := d / 16
	quarter := bcast16(0.25)
	var y [4 * 4 * 16]float32
	for t := 0; t < nt; t++ {
		j := j0 + t
		cell := (c*f.ws + j) * d
		for q := 0; q < nv; q++ {
			o := q * 16
			outputTransform(sc.m, nt*d, t*d+o, &y)
			bias := load16(f.bc[o : o+16])
			var sum f16
			for wi := 0; wi < 4; wi++ { // the cell's windows, row-major
				r0, c0 := 2*(wi/2), 2*(wi%2)
				best, pos := ytile(&y, r0, c0), f16{}
				v := ytile(&y, r0, c0+1)
				gt := v.Greater(best)
				best, pos = v.IfElse(gt, best), bcast16(1).IfElse(gt, pos)
				v = ytile(&y, r0+1, c0)
				gt = v.Greater(best)
				best, pos = v.IfElse(gt, best), bcast16(2).IfElse(gt, pos)
				v = ytile(&y, r0+1, c0+1)
				gt = v.Greater(best)
				best, pos = v.IfElse(gt, best), bcast16(3).IfElse(gt, pos)
				mv := best.Add(bias)
				g, dg := gelu16(mv)
				sum = sum.Add(g)
				if train {
					widx := ((2*c+wi/2)*2*f.ws + 2*j + wi%2) * d
					dg.Mul(quarter).Store(f.gm[widx+o : widx+o+16])
					pos.storeUint8(f.argmax[widx+o : widx+o+16])
				}
			}
			sum.Mul(quarter).Store(f0[cell+o : cell+o+16])
		}
	}
}

// inputTransform writes V = B^T d B of the 6x6 patches of the six rows of
// src (rowLen pixels of D channels each, padded by one column on the left)
// under nt cells from cell col0: patch columns 4 j .. 4 j + 5 in the padded
// indexing; v[xi][t][D] with xi = 6 row + column.
//
// It works on 8 channels at a time in named vector variables, with the
// 36 values between the two passes in a float32 scratch: arrays of vectors
// are not kept in registers by the compiler, and zeroing and copying them
// on the stack took most of this function's time (perf, 2026-12-07).
func (f *FullRes) inputTransform(src []float32, rowLen, col0, nt int, v []float32) {
	d := f.d
	var tmp [36 * 8]float32
	for t := 0; t < nt; t++ {
		x0 := 4 * (col0 + t)
		base := t * d
		for o := 0; o < d; o += 8 {
			for i := 0; i < 6; i++ {
				row := src[(i*rowLen+x0)*d+o:]
				r0, r1, r2, r3, r4, r5 := winoBT8(ld8(row, 0), ld8(row, d), ld8(row, 2*d), ld8(row, 3*d), ld8(row, 4*d), ld8(row, 5*d))
				store6(tmp[i*48:i*48+48], 8, r0, r1, r2, r3, r4, r5)
			}
			for k := 0; k < 6; k++ {
				c0, c1, c2, c3, c4, c5 := winoBT8(ld8(tmp[:], 8*k), ld8(tmp[:], 8*(6+k)), ld8(tmp[:], 8*(12+k)), ld8(tmp[:], 8*(18+k)), ld8(tmp[:], 8*(24+k)), ld8(tmp[:], 8*(30+k)))
				store6(v[k*nt*d+base+o:], 6*nt*d, c0, c1, c2, c3, c4, c5)
			}
		}
	}
}

// products multiplies a chunk's nt transformed tiles (sc.v, 36
// components) by the 36 transformed weight matrices into sc.m: packed
// where packB took them, else raw ([36][D][D] row-major).
func (f *FullRes) products(sc *frScratch, nt int, packed []PackedB, raw []float32) {
	d := f.d
	for xi := 0; xi < 36; xi++ {
		if packed != nil {
			sgemmPacked(nt, sc.v[xi*nt*d:], d, 1, packed[xi], sc.m[xi*nt*d:], d, false)
			continue
		}
		sgemm(nt, d, d, sc.v[xi*nt*d:], d, 1, raw[xi*d*d:], d, sc.m[xi*nt*d:], d, false)
	}
}

// store6 stores x0..x5 at s[0:8], s[stride:stride+8], ... s[5*stride:].
func store6(s []float32, stride int, x0, x1, x2, x3, x4, x5 archsimd.Float32x8) {
	_ = s[5*stride+7]
	x0.Store(s[0:8])
	x1.Store(s[stride : stride+8])
	x2.Store(s[2*stride : 2*stride+8])
	x3.Store(s[3*stride : 3*stride+8])
	x4.Store(s[4*stride : 4*stride+8])
	x5.Store(s[5*stride : 5*stride+8])
}

// ld8 is the 8 floats of s from i.
func ld8(s []float32, i int) archsimd.Float32x8 { return archsimd.LoadFloat32x8(s[i : i+8]) }

// winoBT8 is B^T x for F(4x4, 3x3)'s input transform, on one 8-lane unit.
func winoBT8(d0, d1, d2, d3, d4, d5 archsimd.Float32x8) (o0, o1, o2, o3, o4, o5 archsimd.Float32x8) {
	four := archsimd.BroadcastFloat32x8(4)
	five := archsimd.BroadcastFloat32x8(5)
	two := archsimd.BroadcastFloat32x8(2)
	o0 = d0.MulAdd(four, d4).Sub(d2.Mul(five))
	s12, s34 := d1.Add(d2), d3.Add(d4)
	o1 = s34.Sub(s12.Mul(four))
	m12, m43 := d1.Sub(d2), d4.Sub(d3)
	o2 = m12.MulAdd(four, m43)
	m42, m31 := d4.Sub(d2), d3.Sub(d1)
	o3 = m31.MulAdd(two, m42)
	o4 = m42.Sub(m31.Mul(two))
	o5 = d1.MulAdd(four, d5).Sub(d3.Mul(five))
	return
}

// winoAT8 is A^T m for F(4x4, 3x3)'s output transform, on one 8-lane unit.
func winoAT8(m0, m1, m2, m3, m4, m5 archsimd.Float32x8) (y0, y1, y2, y3 archsimd.Float32x8) {
	a, b := m1.Add(m2), m1.Sub(m2)
	c, e := m3.Add(m4), m3.Sub(m4)
	y0 = m0.Add(a).Add(c)
	y1 = e.MulAdd(archsimd.BroadcastFloat32x8(2), b)
	y2 = c.MulAdd(archsimd.BroadcastFloat32x8(4), a)
	y3 = e.MulAdd(archsimd.BroadcastFloat32x8(8), b).Add(m5)
	return
}

// outputTransform writes to y the 4x4 output tile A^T M A of the 16
// channels at off of one tile of m (component xi at xi*stride), y[(4 row +
// column)*16 + channel].
func outputTransform(m []float32, stride, off int, y *[4 * 4 * 16]float32) {
	var s [4 * 6 * 8]float32 // A^T M: 4 rows of 6, one half of the channels
	for h := 0; h < 16; h += 8 {
		for k := 0; k < 6; k++ {
			col := m[k*stride+off+h:]
			a0, a1, a2, a3 := winoAT8(ld8(col, 0), ld8(col, 6*stride), ld8(col, 12*stride), ld8(col, 18*stride), ld8(col, 24*stride), ld8(col, 30*stride))
			a0.Store(s[(0*6+k)*8:][:8])
			a1.Store(s[(1*6+k)*8:][:8])
			a2.Store(s[(2*6+k)*8:][:8])
			a3.Store(s[(3*6+k)*8:][:8])
		}
		for i := 0; i < 4; i++ {
			q := s[i*48 : i*48+48]
			y0, y1, y2, y3 := winoAT8(ld8(q, 0), ld8(q, 8), ld8(q, 16), ld8(q, 24), ld8(q, 32), ld8(q, 40))
			r := y[i*64+h:]
			y0.Store(r[0:8])
			y1.Store(r[16:24])
			y2.Store(r[32:40])
			y3.Store(r[48:56])
		}
	}
}

// ytile is the output tile's value at (row, column) from outputTransform.
func ytile(y *[4 * 4 * 16]float32, r, c int) f16 { return load16(y[(r*4+c)*16:][:16]) }

// exp16 is e^x (Cephes' single-precision polynomial after reduction by
// ln 2, scaled by 2^n with VSCALEFPS).
func exp16(x f16) f16 {
	x = x.Max(bcast16(-87.3)).Min(bcast16(88.7))
	n := x.Mul(bcast16(1.4426950408889634)).Round()
	r := n.MulAdd(bcast16(-0.693359375), x)
	r = n.MulAdd(bcast16(2.12194440e-4), r)
	p := bcast16(1.9875691500e-4)
	p = p.MulAdd(r, bcast16(1.3981999507e-3))
	p = p.MulAdd(r, bcast16(8.3334519073e-3))
	p = p.MulAdd(r, bcast16(4.1665795894e-2))
	p = p.MulAdd(r, bcast16(1.6666665459e-1))
	p = p.MulAdd(r, bcast16(5.0000001201e-1))
	p = p.Mul(r).MulAdd(r, r).Add(bcast16(1))
	return p.Scale(n)
}

// sigmoid16 is 1 / (1 + e^-x).
func sigmoid16(x f16) f16 {
	one := bcast16(1)
	return one.Div(one.Add(exp16(x.Neg())))
}

// gelu16 is the exact GELU x Phi(x) and its derivative Phi(x) + x phi(x),
// with erf from Abramowitz and Stegun 7.1.26 (absolute error < 1.5e-7).
func gelu16(x f16) (g, dg f16) {
	one := bcast16(1)
	half := bcast16(0.5)
	u := x.Mul(bcast16(1 / math.Sqrt2))
	au := u.Abs()
	t := one.Div(bcast16(0.3275911).MulAdd(au, one))
	p := bcast16(1.061405429)
	p = p.MulAdd(t, bcast16(-1.453152027))
	p = p.MulAdd(t, bcast16(1.421413741))
	p = p.MulAdd(t, bcast16(-0.284496736))
	p = p.MulAdd(t, bcast16(0.254829592))
	p = p.Mul(t)
	e := exp16(au.Mul(au).Neg()) // e^{-x^2/2}
	erfAbs := one.Sub(p.Mul(e))
	erf := erfAbs.Neg().IfElse(u.Less(f16{}), erfAbs)
	phi := half.Mul(one.Add(erf)) // Phi(x)
	g = x.Mul(phi)
	dg = x.Mul(e).MulAdd(bcast16(float32(1/math.Sqrt(2*math.Pi))), phi)
	return g, dg
}

// gramPass computes, once per scene, the stretched input's sum and
// centred second moments over the valid pixels: sx = sum x, nvalid, and
// C = sum (x - mean)(x - mean)^T. The embedding z = x We + be is linear in
// x, so its per-group statistics and the GroupNorm's gradient through the
// embedding follow from them in O(B^2 D) (gramStats, backward) instead of
// a pass over the scene. Centring first keeps the variances free of the
// cancellation of E[z^2] - E[z]^2.
func (f *FullRes) gramPass() {
	if f.haveGram {
		return
	}
	b, wd := f.bands, f.cols
	const blk = 4
	nb := (f.rows + blk - 1) / blk
	parts := make([][]float64, f.workers)
	f.parallel(nb, func(w, lo, hi int) {
		sc := f.scratch(w)
		acc := make([]float64, b+1)
		for bi := lo; bi < hi; bi++ {
			r0 := bi * blk
			n := min(blk, f.rows-r0)
			xs := sc.xs[:n*wd*b]
			f.stretchRows(xs, r0, n)
			for p := 0; p < n*wd; p++ {
				if !f.s.valid(r0*wd + p) {
					continue
				}
				acc[b]++
				for j, v := range xs[p*b : (p+1)*b] {
					acc[j] += float64(v)
				}
			}
		}
		parts[w] = acc
	})
	f.sx, f.nvalid = make([]float64, b), 0
	var nv float64
	for _, acc := range parts {
		if acc == nil {
			continue
		}
		for j := range f.sx {
			f.sx[j] += acc[j]
		}
		nv += acc[b]
	}
	f.nvalid = int(nv)
	mean := make([]float32, b)
	for j := range mean {
		mean[j] = float32(f.sx[j] / math.Max(nv, 1))
	}
	parts = make([][]float64, f.workers)
	f.parallel(nb, func(w, lo, hi int) {
		sc := f.scratch(w)
		acc := make([]float64, b*b)
		g32 := make([]float32, b*b)
		for bi := lo; bi < hi; bi++ {
			r0 := bi * blk
			n := min(blk, f.rows-r0)
			xs := sc.xs[:n*wd*b]
			f.stretchRows(xs, r0, n)
			for p := 0; p < n*wd; p++ {
				if f.s.valid(r0*wd + p) {
					for j := range mean {
						xs[p*b+j] -= mean[j]
					}
				}
			}
			sgemm(b, b, n*wd, xs, 1, b, xs, b, g32, b, false)
			for i, v := range g32 {
				acc[i] += float64(v)
			}
		}
		parts[w] = acc
	})
	f.gram = make([]float64, b*b)
	for _, acc := range parts {
		for i := range acc {
			f.gram[i] += acc[i]
		}
	}
	f.haveGram = true
}

// gramStats is stats from the centred moments (gramPass): per channel
// mean m_c = xbar w_c + b_c and sum_p (z_pc - m_c)^2 = w_c^T C w_c, so a
// group's variance is the mean over its channels of w_c^T C w_c / n plus
// (m_c - group mean)^2.
func (f *FullRes) gramStats() (mean, variance []float64) {
	f.gramPass()
	d, g, b := f.d, f.groups, f.bands
	nv := math.Max(float64(f.nvalid), 1)
	per := d / g
	mc, vc := f.channelMoments()
	mean, variance = make([]float64, g), make([]float64, g)
	for gi := 0; gi < g; gi++ {
		for c := gi * per; c < (gi+1)*per; c++ {
			mean[gi] += mc[c]
		}
		mean[gi] /= float64(per)
		for c := gi * per; c < (gi+1)*per; c++ {
			dm := mc[c] - mean[gi]
			variance[gi] += vc[c]/nv + dm*dm
		}
		variance[gi] /= float64(per)
	}
	_ = b
	return mean, variance
}

// channelMoments are each channel's mean of z over the valid pixels and
// w_c^T C w_c (gramPass).
func (f *FullRes) channelMoments() (mc, vc []float64) {
	d, b := f.d, f.bands
	nv := math.Max(float64(f.nvalid), 1)
	mc, vc = make([]float64, d), make([]float64, d)
	cw := make([]float64, b)
	for c := 0; c < d; c++ {
		m := float64(f.be[c])
		for j := 0; j < b; j++ {
			m += f.sx[j] / nv * float64(f.we[j*d+c])
		}
		mc[c] = m
		for j := 0; j < b; j++ {
			var s float64
			for i := 0; i < b; i++ {
				s += f.gram[j*b+i] * float64(f.we[i*d+c])
			}
			cw[j] = s
		}
		var q float64
		for j := 0; j < b; j++ {
			q += float64(f.we[j*d+c]) * cw[j]
		}
		vc[c] = q
	}
	return mc, vc
}

// Backward computes the gradients of the stage's weights (the graph's
// layouts) from df0, the loss's gradient with respect to forward's f0,
// with the normalisation and windows of the last forward (train) pass.
func (f *FullRes) Backward(df0 []float32) (dwe, dbe, dgamma, dbeta, dwc, dbc []float32) {
	if f.argmax == nil {
		panic("FullRes.Backward: no training forward pass before it")
	}
	f.gramPass()
	d, b := f.d, f.bands
	hsE := f.hs
	if f.rows > Stride*f.hs {
		hsE++ // the row past the floor grid gets gradient from the grid's last row
	}
	wsE := f.ws
	if f.cols > Stride*f.ws {
		wsE++
	}
	dcw := Stride*wsE + 2
	nw := min(f.workers, max(1, hsE))
	f.parallel(hsE, func(w, lo, hi int) {
		sc := f.scratch(w)
		if sc.dU == nil {
			sc.dU = make([]float32, 36*d*d)
			sc.xtdu = make([]float32, b*d)
			sc.dgamma, sc.dbeta, sc.dbc = make([]float64, d), make([]float64, d), make([]float64, d)
		}
		if len(sc.dc) < 6*dcw*d {
			sc.dc = make([]float32, 6*dcw*d)
			sc.de = make([]float32, 4*f.cols*d)
			sc.du = make([]float32, 4*f.cols*d)
		}
		clear(sc.dU)
		clear(sc.xtdu)
		clear(sc.dgamma)
		clear(sc.dbeta)
		clear(sc.dbc)
		for c := lo; c < hi; c++ {
			f.embedCellRow(sc, c, c == lo, true)
			f.buildDC(sc, c, dcw, df0)
			clear(sc.de)
			for j0 := 0; j0 < wsE; j0 += chunkCells {
				f.inputGradChunk(sc, dcw, j0, min(wsE, j0+chunkCells))
			}
			if c < f.hs {
				for j0 := 0; j0 < f.ws; j0 += chunkCells {
					f.weightGradChunk(sc, dcw, j0, min(f.ws, j0+chunkCells))
				}
			}
			f.normGradRows(sc, c)
		}
	})
	dU := make([]float32, 36*d*d)
	xtdu := make([]float64, b*d)
	dg, db, dbc64 := make([]float64, d), make([]float64, d), make([]float64, d)
	for w := 0; w < nw; w++ {
		sc := f.scr[w]
		for i, v := range sc.dU {
			dU[i] += v
		}
		for i, v := range sc.xtdu {
			xtdu[i] += float64(v)
		}
		for c := 0; c < d; c++ {
			dg[c] += sc.dgamma[c]
			db[c] += sc.dbeta[c]
			dbc64[c] += sc.dbc[c]
		}
	}

	dwc = make([]float32, 9*d*d)
	for a := 0; a < 3; a++ {
		for bb := 0; bb < 3; bb++ {
			out := dwc[(3*a+bb)*d*d:]
			for xi := 0; xi < 6; xi++ {
				for nu := 0; nu < 6; nu++ {
					g := float32(winoG[xi][a] * winoG[nu][bb])
					if g == 0 {
						continue
					}
					src := dU[(xi*6+nu)*d*d:]
					for i := 0; i < d*d; i++ {
						out[i] += g * src[i]
					}
				}
			}
		}
	}
	dbc = make([]float32, d)
	dgamma, dbeta = make([]float32, d), make([]float32, d)
	for c := 0; c < d; c++ {
		dbc[c] = float32(dbc64[c])
		dgamma[c], dbeta[c] = float32(dg[c]), float32(db[c])
	}

	// GroupNorm: dz = inv (dxhat - S1/n - xhat S2/n) over the valid pixels,
	// dxhat = gamma du; summed against x through X^T dU and the Gram matrix.
	g := f.groups
	per := d / g
	nvalid := float64(f.nvalid)
	cnt := math.Max(nvalid*float64(per), 1)
	s1, s2 := make([]float64, g), make([]float64, g)
	for c := 0; c < d; c++ {
		s1[c/per] += float64(f.gamma[c]) * db[c]
		s2[c/per] += float64(f.gamma[c]) * dg[c]
	}
	dwe, dbe = make([]float32, b*d), make([]float32, d)
	mc, _ := f.channelMoments()
	cw := make([]float64, b)
	for c := 0; c < d; c++ {
		gi := c / per
		inv := 1 / math.Sqrt(f.variance[gi]+1e-5)
		delta := mc[c] - f.mean[gi] // the channel's mean of z minus its group's
		a1, a2 := s1[gi]/cnt, s2[gi]/cnt
		gam := float64(f.gamma[c])
		for j := 0; j < b; j++ {
			var s float64
			for i := 0; i < b; i++ {
				s += f.gram[j*b+i] * float64(f.we[i*d+c])
			}
			cw[j] = s
		}
		for j := 0; j < b; j++ {
			xxhat := inv * (cw[j] + f.sx[j]*delta) // sum_p x_pj xhat_pc
			dwe[j*d+c] = float32(inv * (gam*xtdu[j*d+c] - a1*f.sx[j] - a2*xxhat))
		}
		sumXhat := inv * nvalid * delta
		dbe[c] = float32(inv * (gam*db[c] - nvalid*a1 - a2*sumXhat))
	}
	return dwe, dbe, dgamma, dbeta, dwc, dbc
}

// buildDC writes the convolution's output gradient on pixel rows
// 4c-1..4c+4 (slots) and columns -1..4 wsE (padded by one): at each
// window's maximum, per channel, df0 of its cell times GELU'(max)/4; zero
// elsewhere and outside the floor grid.
func (f *FullRes) buildDC(sc *frScratch, c, dcw int, df0 []float32) {
	d := f.d
	nv := d / 16
	for s := 0; s < 6; s++ {
		row := sc.dc[s*dcw*d : (s+1)*dcw*d]
		clear(row)
		r := 4*c - 1 + s
		if r < 0 || r >= Stride*f.hs {
			continue
		}
		wr := r / 2
		for x := 0; x < Stride*f.ws; x++ {
			widx := (wr*2*f.ws + x/2) * d
			cell := ((r/Stride)*f.ws + x/Stride) * d
			p := uint32((r%2)*2 + x%2)
			out := row[(x+1)*d : (x+2)*d]
			for j := 0; j < nv; j++ {
				o := j * 16
				at := eqUint8(f.argmax[widx+o:widx+o+16], p)
				v := load16(df0[cell+o : cell+o+16]).Mul(load16(f.gm[widx+o : widx+o+16]))
				v.Masked(at).Store(out[o : o+16])
			}
		}
	}
}

// inputGradChunk writes to sc.de (pixel rows 4c..4c+3) the convolution's
// input gradient on cells j0..j1-1: Winograd F(4x4, 3x3) on the output
// gradient with the flipped, transposed kernel.
func (f *FullRes) inputGradChunk(sc *frScratch, dcw, j0, j1 int) {
	d, wd := f.d, f.cols
	nt := j1 - j0
	f.inputTransform(sc.dc, dcw, j0, nt, sc.v)
	f.products(sc, nt, f.uBp, f.uB)
	nv := d / 16
	var y [4 * 4 * 16]float32
	for t := 0; t < nt; t++ {
		x0 := 4 * (j0 + t)
		for q := 0; q < nv; q++ {
			o := q * 16
			outputTransform(sc.m, nt*d, t*d+o, &y)
			for i := 0; i < 4; i++ {
				for k := 0; k < 4 && x0+k < wd; k++ {
					copy(sc.de[(i*wd+x0+k)*d+o:][:16], y[(i*4+k)*16:][:16])
				}
			}
		}
	}
}

// weightGradChunk adds the convolution's weight gradient from cells
// j0..j1-1 of the current cell row to sc.dU: for each of the 36 Winograd
// components, V^T (A dY A^T) over the chunk's tiles.
func (f *FullRes) weightGradChunk(sc *frScratch, dcw, j0, j1 int) {
	d, wd := f.d, f.cols
	nt := j1 - j0
	f.inputTransform(sc.e, wd+2, j0, nt, sc.v)
	var p [4 * 6 * 8]float32 // dY A^T: 4 rows of 6, 8 channels at a time
	for t := 0; t < nt; t++ {
		x0 := 4*(j0+t) + 1 // padded column of the tile's first output
		base := t * d
		for o := 0; o < d; o += 8 {
			for i := 0; i < 4; i++ {
				row := sc.dc[((1+i)*dcw+x0)*d+o:]
				a0, a1, a2, a3, a4, a5 := winoA8(ld8(row, 0), ld8(row, d), ld8(row, 2*d), ld8(row, 3*d))
				store6(p[i*48:i*48+48], 8, a0, a1, a2, a3, a4, a5)
			}
			for k := 0; k < 6; k++ {
				c0, c1, c2, c3, c4, c5 := winoA8(ld8(p[:], 8*k), ld8(p[:], 8*(6+k)), ld8(p[:], 8*(12+k)), ld8(p[:], 8*(18+k)))
				store6(sc.m[k*nt*d+base+o:], 6*nt*d, c0, c1, c2, c3, c4, c5)
			}
		}
	}
	for xi := 0; xi < 36; xi++ {
		sgemm(d, d, nt, sc.v[xi*nt*d:], 1, d, sc.m[xi*nt*d:], d, sc.dU[xi*d*d:], d, true)
	}
}

// winoA8 is A y (6 from 4), the transpose of the output transform, on
// one 8-lane unit.
func winoA8(y0, y1, y2, y3 archsimd.Float32x8) (o0, o1, o2, o3, o4, o5 archsimd.Float32x8) {
	s, t := y0.Add(y2), y1.Add(y3)
	s2 := y2.MulAdd(archsimd.BroadcastFloat32x8(4), y0)
	t2 := y3.MulAdd(archsimd.BroadcastFloat32x8(4), y1).Mul(archsimd.BroadcastFloat32x8(2))
	return y0, s.Add(t), s.Sub(t), s2.Add(t2), s2.Sub(t2), y3
}

// normGradRows takes the input gradient of pixel rows 4c..4c+3 through
// SiLU and the normalisation: du = dE silu'(u) at valid pixels, the sums
// for gamma and beta, X^T du, and the bias's gradient from the rows'
// output gradient.
func (f *FullRes) normGradRows(sc *frScratch, c int) {
	d, wd, b := f.d, f.cols, f.bands
	nv := d / 16
	n := min(4, f.rows-4*c)
	if n <= 0 {
		return
	}
	one := bcast16(1)
	dcw := len(sc.dc) / (6 * d)
	for i := 0; i < n; i++ {
		r := 4*c + i
		clear(sc.rowSums)
		for x := 0; x < wd; x++ {
			dup := sc.du[(i*wd+x)*d : (i*wd+x+1)*d]
			if !f.validPix(r, x) {
				clear(dup)
				continue
			}
			zp := sc.z[((1+i)*wd+x)*d : ((1+i)*wd+x+1)*d]
			dep := sc.de[(i*wd+x)*d : (i*wd+x+1)*d]
			for j := 0; j < nv; j++ {
				o := j * 16
				z := load16(zp[o : o+16])
				u := z.MulAdd(load16(f.na[o:o+16]), load16(f.nb[o:o+16]))
				sg := sigmoid16(u)
				du := load16(dep[o : o+16]).Mul(sg).Mul(u.Mul(one.Sub(sg)).Add(one))
				du.Store(dup[o : o+16])
				xhat := z.Sub(load16(f.nmean[o : o+16])).Mul(load16(f.ninv[o : o+16]))
				gs := sc.rowSums[o : o+16]
				du.MulAdd(xhat, load16(gs)).Store(gs)
				bs := sc.rowSums[d+o : d+o+16]
				load16(bs).Add(du).Store(bs)
			}
		}
		for j := 0; j < d; j++ {
			sc.dgamma[j] += float64(sc.rowSums[j])
			sc.dbeta[j] += float64(sc.rowSums[d+j])
		}
		// The conv bias's gradient: the output gradient summed over this row.
		if r < Stride*f.hs {
			clear(sc.rowSums[:d])
			row := sc.dc[(1+i)*dcw*d:]
			for x := 0; x < Stride*f.ws; x++ {
				for j := 0; j < nv; j++ {
					o := j * 16
					s := sc.rowSums[o : o+16]
					load16(s).Add(load16(row[(x+1)*d+o:][:16])).Store(s)
				}
			}
			for j := 0; j < d; j++ {
				sc.dbc[j] += float64(sc.rowSums[j])
			}
		}
	}
	sgemm(b, d, n*wd, sc.xs[wd*b:], 1, b, sc.du, d, sc.xtdu, d, true)
}
