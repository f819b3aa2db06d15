package kernels

// lanes is the number of float32 lanes of one vector in DotsSIMD;
// references are padded to a multiple of it.
const lanes = 8

// DotsPadding is the multiple the references' count is padded to in the
// band-major table the dot kernels take (unitT [bands][padded], zero in
// the padding): 8 lanes, or with AVX-512 whole 32-reference blocks of
// Dots4SIMD's 16-lane loop (the 8-lane tail took a third of the kernel's
// time for a few zero references more).
func DotsPadding() int {
	if have512 {
		return 32
	}
	return lanes
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
