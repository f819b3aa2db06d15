package kernels

// lanes is the number of float32 lanes of one vector in DotsSIMD;
// references are padded to a multiple of it.
const lanes = 8

// DotsPadding is the multiple the references' count is padded to in the
// band-major table the dot kernels take (unitT [bands][padded], zero in
// the padding): 8 lanes, or whole 32-reference blocks where Dots8 runs
// (and with AVX-512 Dots4SIMD's 16-lane loop: the 8-lane tail took a
// third of the kernel's time for a few zero references more).
func DotsPadding() int {
	if have512 || HaveDots8(32) {
		return 32
	}
	return lanes
}

// Dots8Block is the number of references in one block of Dots8's table.
const Dots8Block = 32

// Dots8Table lays out unitT ([bands][padded], padded a multiple of
// Dots8Block) as Dots8 reads it: block after block of 32 references, each
// block [bands][32] contiguous. Dots8 streams a block's bands in order;
// read from the band-major table they lie padded*4 bytes apart (13 KB for
// 3,264 references), a new pair of cache lines per band that the hardware
// prefetcher did not follow: the kernel ran at about a third of the rate
// it reaches on packed panels (BenchmarkClassDistancesFused).
func Dots8Table(unitT []float32, padded, bands int) []float32 {
	out := make([]float32, 0, len(unitT))
	for j := 0; j < padded; j += Dots8Block {
		for b := range bands {
			out = append(out, unitT[b*padded+j:b*padded+j+Dots8Block]...)
		}
	}
	return out
}

// DotsScalar sets dots[j] = sum_b s[b] * unitT[b*padded+j], four references
// at a time so that each band's value is loaded once per four products.
func DotsScalar(unitT []float32, padded int, s, dots []float32) {
	for j := 0; j < padded; j += 4 {
		var d0, d1, d2, d3 float32
		for b, v := range s {
			col := unitT[b*padded+j : b*padded+j+4 : b*padded+j+4]
			d0 += v * col[0]
			d1 += v * col[1]
			d2 += v * col[2]
			d3 += v * col[3]
		}
		dots[j], dots[j+1], dots[j+2], dots[j+3] = d0, d1, d2, d3
	}
}

// maxIntoScalar is MaxInto one value at a time.
func maxIntoScalar(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		if v > dst[i] {
			dst[i] = v
		}
	}
}

// spanMaxScalar is SpanMax one value at a time.
func spanMaxScalar(dst, src []float32, spans [][2]int) {
	for c, sp := range spans {
		if sp[0] == sp[1] {
			continue
		}
		best := src[sp[0]]
		for _, v := range src[sp[0]+1 : sp[1]] {
			if v > best {
				best = v
			}
		}
		dst[c] = best
	}
}

// combineScalar is Combine, one value at a time. The explicit float32
// conversions keep each product and sum rounded on its own (no fused
// multiply-add), as the vector kernel computes them.
func combineScalar(dst, b0, b1 []float32, a float32, coef []float32) {
	b0, coef = b0[:len(dst)], coef[:len(dst)]
	if b1 == nil {
		for i, v := range b0 {
			dst[i] = v * coef[i]
		}
		return
	}
	b1 = b1[:len(dst)]
	for i, v := range b0 {
		dst[i] = float32(v+float32(a*b1[i])) * coef[i]
	}
}

// DotsF64Scalar sets dots[j] to the dot product of u with reference j of
// refsT (float64, band-major: refsT[b*len(dots)+j]), each summed in band
// order with every product and sum rounded on its own (no fused
// multiply-add): the arithmetic of a plain Go loop `d += r[b] * u[b]`, so
// that callers that chose from such dots before choose the same now.
func DotsF64Scalar(u, refsT, dots []float64) {
	n := len(dots)
	clear(dots)
	for b, v := range u {
		row := refsT[b*n : (b+1)*n]
		for j, r := range row {
			dots[j] += r * v
		}
	}
}
