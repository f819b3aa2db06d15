// Package transpose turns band-sequential samples into pixel-interleaved
// float32: the layout GDAL reads a window in fastest (one plane per band)
// into the one the network and the distances take (a pixel's bands
// together).
package transpose

// BandsToPixels turns band-sequential bsq ([nb][rows*cols]) into
// pixel-interleaved float32 data, pixel (r, c) at r*rowPixels + c, each
// sample converted exactly. It goes through the pixels in blocks whose
// output stays in cache and, where the CPU has 8-lane vectors (amd64 with
// AVX2 and GOEXPERIMENT=simd), 8 bands x 8 pixels at a time: one pixel
// at a time it took about 3 ns a sample, 3% of the bench-big crop's CPU.
func BandsToPixels[T int16 | uint16 | uint8 | float32](bsq []T, data []float32, cols, rows, nb, rowPixels int) {
	const block = 256 // pixels: block*nb*4 bytes of data stay in cache
	npix := cols * rows
	if len(bsq) < npix*nb || (rows > 0 && len(data) < ((rows-1)*rowPixels+cols)*nb) {
		panic("transpose: buffers shorter than the window")
	}
	for r := range rows {
		for c0 := 0; c0 < cols; c0 += block {
			n := min(block, cols-c0)
			p0 := r*cols + c0 // in bsq's planes
			o0 := r*rowPixels + c0
			dst := data[o0*nb : (o0+n)*nb]
			b := blocks8(bsq, dst, npix, p0, n, nb)
			scalarBands(bsq, dst, npix, p0, n, nb, b)
		}
	}
}

// scalarBands writes bands b.. of the n pixels from p0, one band at a
// time (four at once where there are four).
func scalarBands[T int16 | uint16 | uint8 | float32](bsq []T, dst []float32, npix, p0, n, nb, b int) {
	for ; b+4 <= nb; b += 4 {
		s0 := bsq[b*npix+p0 : b*npix+p0+n]
		s1 := bsq[(b+1)*npix+p0 : (b+1)*npix+p0+n][:n]
		s2 := bsq[(b+2)*npix+p0 : (b+2)*npix+p0+n][:n]
		s3 := bsq[(b+3)*npix+p0 : (b+3)*npix+p0+n][:n]
		for i := range s0 {
			o := dst[i*nb+b : i*nb+b+4 : i*nb+b+4]
			o[0], o[1], o[2], o[3] = float32(s0[i]), float32(s1[i]), float32(s2[i]), float32(s3[i])
		}
	}
	for ; b < nb; b++ {
		for i, v := range bsq[b*npix+p0 : b*npix+p0+n] {
			dst[i*nb+b] = float32(v)
		}
	}
}

// scalarPixels writes bands b..b+7 of pixels i0..n-1 from p0.
func scalarPixels[T int16 | uint16 | uint8 | float32](bsq []T, dst []float32, npix, p0, i0, n, nb, b int) {
	for k := range 8 {
		for i := i0; i < n; i++ {
			dst[i*nb+b+k] = float32(bsq[(b+k)*npix+p0+i])
		}
	}
}
