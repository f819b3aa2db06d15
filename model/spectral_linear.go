package model

import (
	"math"

	"github.com/pnec/pnec/model/internal/kernels"
)

// linearCopies computes the dot products of a pixel with the changed
// copies of the training spectra from fewer products (issue 43). Every
// change the decision reference holds is a band shift S (0 or whole
// bands, edge bands repeated) and a tilt D = diag(1 + a t) of shape t, so
// a copy of the unit spectrum u is D S u / |D S u| and a pixel x meets it
// in
//
//	x . copy = (x . S u  +  a x . (t o S u)) / |D S u|
//
// The basis holds S u and t o S u for each shift and shape the changes
// use (12 spectra per training pixel for the default augmentation against
// 27 copies of it): the kernels multiply the pixel with the basis, and
// Combine makes each copy's dot from one or two of those and its
// coefficient 1 / |D S u|. The same dots in exact arithmetic; in float32
// they differ from the copies' own in the last bits (TestLinearCopies).
type linearCopies struct {
	n       int       // references a block (the plain spectra), as blockLen
	padded  int       // basis references rounded up to kernels.DotsPadding
	unitT   []float32 // [bands][padded] basis, block-major: set k is [k*n, (k+1)*n)
	dots8   []float32 // unitT as kernels.Dots8 reads it; nil where it does not run
	groups  []linearGroup
	coef    [][]float32 // per group of changed copies, [n]: 1 / |D S u|
	setsLen int         // basis sets
}

// linearGroup is one group of changed copies: the basis set of its shift
// (b0) and, for a tilt, of its shift and shape (b1) with amplitude a.
type linearGroup struct {
	b0, b1 int // b1 -1: no tilt
	a      float32
}

// newLinearCopies builds the basis of plain unit spectra plain ([n]
// references of bands values, as the reference keeps them) for changes,
// the groups in order; ok false when a change is not a whole-band shift
// with a tilt (gain, offset, noise, reversal or a fractional shift), which
// the reference then measures copy by copy.
func newLinearCopies(plain [][]float32, bands int, changes []Radiometric) (*linearCopies, bool) {
	type setKey struct {
		shift int
		shape TiltShape // "" for S u itself
	}
	index := map[setKey]int{{0, ""}: 0}
	keys := []setKey{{0, ""}}
	set := func(k setKey) int {
		if i, ok := index[k]; ok {
			return i
		}
		index[k] = len(keys)
		keys = append(keys, k)
		return len(keys) - 1
	}
	l := &linearCopies{n: len(plain)}
	for _, c := range changes {
		shift := int(c.BandShift)
		if c.Gain != 0 && c.Gain != 1 || c.Offset != 0 || c.Noise != 0 || c.Reverse || float64(shift) != c.BandShift {
			return nil, false
		}
		g := linearGroup{b0: set(setKey{shift, ""}), b1: -1}
		if c.Tilt != 0 {
			shape := c.TiltShape
			if shape == "" {
				shape = TiltLinear
			}
			g.b1, g.a = set(setKey{shift, shape}), float32(c.Tilt)
		}
		l.groups = append(l.groups, g)
	}
	l.setsLen = len(keys)
	refs := l.setsLen * l.n
	pad := kernels.DotsPadding()
	l.padded = (refs + pad - 1) / pad * pad
	l.unitT = make([]float32, bands*l.padded)
	// Each set's spectra in float64, then the coefficients of the groups
	// from the same values.
	sets := make([][][]float64, l.setsLen)
	for k, key := range keys {
		p := Radiometric{BandShift: float64(key.shift)}.plan(bands, nil)
		sets[k] = make([][]float64, l.n)
		for j, u := range plain {
			v := make([]float64, bands)
			for b := range bands {
				v[b] = float64(u[p.src[b]])
				if key.shape != "" {
					v[b] *= key.shape.at(bandPosition(b, bands))
				}
				l.unitT[b*l.padded+k*l.n+j] = float32(v[b])
			}
			sets[k][j] = v
		}
	}
	for _, g := range l.groups {
		coef := make([]float32, l.n)
		for j := range l.n {
			s := 0.0
			for b, v := range sets[g.b0][j] {
				if g.b1 >= 0 {
					v += float64(g.a) * sets[g.b1][j][b]
				}
				s += v * v
			}
			coef[j] = float32(1 / math.Sqrt(s))
		}
		l.coef = append(l.coef, coef)
	}
	if kernels.HaveDots8(l.padded) {
		l.dots8 = kernels.Dots8Table(l.unitT, l.padded, bands)
	}
	return l, true
}

// bandPosition is band b's position in 0..1 along bands bands, as the
// tilt's plan measures it.
func bandPosition(b, bands int) float64 {
	if bands < 2 {
		return 0
	}
	return float64(b) / float64(bands-1)
}

// expand writes the dots of every reference (plain block, then one block
// per group, as the reference lays them out) into dots from the basis
// dots basis (len padded of l).
func (l *linearCopies) expand(basis, dots []float32) {
	n := l.n
	copy(dots[:n], basis[:n])
	for g, grp := range l.groups {
		var b1 []float32
		if grp.b1 >= 0 {
			b1 = basis[grp.b1*n : (grp.b1+1)*n]
		}
		kernels.Combine(dots[(g+1)*n:(g+2)*n], basis[grp.b0*n:(grp.b0+1)*n], b1, grp.a, l.coef[g])
	}
}
