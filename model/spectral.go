package model

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/pnec/pnec/model/internal/kernels"
)

// ErrNoSpectralReference is returned (wrapped) when a spectral reliability
// kind is asked of a model whose file does not hold the training pixels'
// spectra (files written before they were stored).
var ErrNoSpectralReference = errors.New("model file holds no training spectra")

// NoReference is the class distance ClassDistances gives a class without
// reference spectra: above every real distance (0..2) and finite, so that
// tile blending, which averages these values, keeps it.
const NoReference = 4

// SpectralReference holds the spectra of the training pixels and their
// dense classes. Its Agreement says whether a pixel's spectrum looks like
// the training pixels of the class it was given rather than those of any
// other class, by spectral angle, which ignores illumination scale.
//
// The references are kept as unit vectors, band-major and grouped by class,
// so that one pass of dot products over a pixel's bands gives its cosine to
// every reference (8 references per vector instruction where the CPU has
// AVX2 and FMA), and the per-class maxima follow from contiguous runs.
type SpectralReference struct {
	bands, classes int
	refs, padded   int       // reference spectra kept; refs rounded up to kernels.DotsPadding
	unitT          []float32 // [bands][padded], zero in the padding
	dots8          []float32 // unitT as kernels.Dots8 reads it (kernels.Dots8Table); nil where it does not run
	span           [][2]int  // per class, references [lo, hi); lo == hi when none
	// groupSpan is, per group of changed copies of the training spectra
	// (NewAlignedReference; nil otherwise) and class, the references
	// [lo, hi), after every plain one.
	groupSpan [][][2]int
	// blockLen, when not 0, says that every group holds as many references
	// of each class as the spectra themselves (no copy was skipped): the
	// references are then 1+len(groupSpan) blocks of blockLen laid out
	// alike, which blockDistances reduces block by block.
	blockLen int
	// copyPenaltyRad is what an angle to a reference outside the aligned
	// group counts more than it measures.
	copyPenaltyRad float64
	// linear, when not nil, makes the dots of the changed copies from a
	// smaller basis (linearCopies); unitT and dots8 are then nil and the
	// kernels multiply the basis.
	linear *linearCopies
	// localMean, when 2 or more, measures a class's distance in the group
	// that counts in full (the aligned one, or the spectra themselves) to
	// the unit mean of its localMean nearest references there rather than
	// to the nearest (Decision.LocalMean); gram[g][c] is then the dots of
	// class c's unit references of group g with each other (g 0: the
	// spectra; row-major, the span's length squared).
	localMean int
	gram      [][][]float32
	// groupSpectra, for a penalty of pi (where only the aligned group
	// counts), gives the raw spectra of group g (0: the spectra
	// themselves), and alone is a reference of them alone, built on first
	// use: ClassDistances measures an aligned scene against that group
	// only, a 27th of the references (one basis set of 12, with a linear
	// basis).
	groupSpectra func(g int) []float32
	alone        []groupAlone
	class        []int // the spectra's classes, for alone
}

// groupAlone is one group's reference on its own, built once.
type groupAlone struct {
	once sync.Once
	ref  *SpectralReference
	err  error
}

// NewSpectralReference builds a reference from spectra ([n][bands],
// pixel-interleaved, raw values) of dense classes class[i] in 0..classes-1.
// Spectra of zero length (no data) are skipped.
func NewSpectralReference(spectra []float32, bands int, class []int, classes int) (*SpectralReference, error) {
	return newReference(spectra, bands, class, classes, nil, nil, 0, 0)
}

// unitRef is one reference spectrum scaled to unit length.
type unitRef struct {
	class int
	unit  []float32
}

// unitRefs scales spectra ([n][bands]) to unit length, skipping those of
// zero or non-finite length, and sorts them by class (stable).
func unitRefs(spectra []float32, bands int, class []int, classes int) ([]unitRef, error) {
	var refs []unitRef
	for i, c := range class {
		if c < 0 || c >= classes {
			return nil, fmt.Errorf("spectral reference: pixel %d has class %d outside 0..%d", i, c, classes-1)
		}
		s := spectra[i*bands : (i+1)*bands]
		n := 0.0
		for _, v := range s {
			n += float64(v) * float64(v)
		}
		if !(n > 0) || math.IsInf(n, 0) || math.IsNaN(n) {
			continue
		}
		inv := 1 / math.Sqrt(n)
		u := make([]float32, bands)
		for b, v := range s {
			u[b] = float32(float64(v) * inv)
		}
		refs = append(refs, unitRef{c, u})
	}
	slices.SortStableFunc(refs, func(a, b unitRef) int { return a.class - b.class })
	return refs, nil
}

// spansOf sets span[c] to the positions [lo, hi) of class c's references
// in refs (sorted by class), offset by base, and returns how many classes
// have any.
func spansOf(refs []unitRef, base int, span [][2]int) int {
	seen := 0
	for j, k := range refs {
		if j == 0 || refs[j-1].class != k.class {
			span[k.class][0] = base + j
			seen++
		}
		span[k.class][1] = base + j + 1
	}
	return seen
}

// newReference builds a reference of spectra and of the groups of their
// changed copies (changed[g], each [n][bands] of the same classes), whose
// angles count penaltyRad more unless their group is the one aligned.
// changes, when not nil, are the changes that made each group (changed[g]
// is spectra changed by changes[g]): where they allow it, the copies' dots
// are made from a smaller basis (linearCopies).
//
// localMean, when 2 or more, measures each class's distance in the group
// counted in full to the unit mean of its localMean nearest references
// there (Decision.LocalMean).
func newReference(spectra []float32, bands int, class []int, classes int, changed [][]float32, changes []Radiometric, penaltyRad float64, localMean int) (*SpectralReference, error) {
	if bands < 1 || len(spectra) != len(class)*bands {
		return nil, fmt.Errorf("spectral reference: %d values for %d pixels of %d bands", len(spectra), len(class), bands)
	}
	if !(penaltyRad >= 0 && penaltyRad <= math.Pi) {
		return nil, fmt.Errorf("spectral reference: copy penalty %g rad outside 0..pi", penaltyRad)
	}
	r := &SpectralReference{bands: bands, classes: classes, span: make([][2]int, classes), copyPenaltyRad: penaltyRad}
	kept, err := unitRefs(spectra, bands, class, classes)
	if err != nil {
		return nil, err
	}
	seen := spansOf(kept, 0, r.span)
	if seen < 2 {
		return nil, fmt.Errorf("spectral reference: spectra of %d classes, need at least 2", seen)
	}
	for g, ch := range changed {
		if len(ch) != len(spectra) {
			return nil, fmt.Errorf("spectral reference: changed group %d holds %d values, the spectra %d", g, len(ch), len(spectra))
		}
		refs, err := unitRefs(ch, bands, class, classes)
		if err != nil {
			return nil, fmt.Errorf("changed group %d: %w", g, err)
		}
		span := make([][2]int, classes)
		spansOf(refs, len(kept), span)
		r.groupSpan = append(r.groupSpan, span)
		kept = append(kept, refs...)
	}
	r.refs = len(kept)
	r.blockLen = uniformBlocks(r.span, r.groupSpan)
	if penaltyRad >= math.Pi && len(changed) > 0 {
		r.alone = make([]groupAlone, 1+len(changed))
		r.class = class
		r.groupSpectra = func(g int) []float32 {
			switch {
			case g == 0:
				return spectra
			case len(changes) == len(changed):
				return changedSpectra(spectra, bands, changes[g-1]) // not held: made again once
			}
			return changed[g-1]
		}
	}
	if localMean >= 2 {
		r.localMean = localMean
		// At pi the pixels are measured by the aligned group's own
		// reference, which makes its Gram matrices itself; this one's
		// would go unused.
		if r.groupSpectra == nil {
			r.gram = gramsOf(kept, r.span, r.groupSpan)
		}
	}
	// The references are padded as the dot kernels take them; padding
	// never enters a class's span.
	pad := kernels.DotsPadding()
	r.padded = (r.refs + pad - 1) / pad * pad
	if r.blockLen > 0 && len(changes) == len(changed) {
		plain := make([][]float32, r.blockLen)
		for j := range plain {
			plain[j] = kept[j].unit
		}
		if l, ok := newLinearCopies(plain, bands, changes); ok {
			r.linear = l
			return r, nil
		}
	}
	r.unitT = make([]float32, bands*r.padded)
	for j, k := range kept {
		for b, v := range k.unit {
			r.unitT[b*r.padded+j] = v
		}
	}
	if kernels.HaveDots8(r.padded) {
		r.dots8 = kernels.Dots8Table(r.unitT, r.padded, bands)
	}
	return r, nil
}

// gramsOf is gramOf for the plain spectra's spans (index 0) and each
// changed group's after them.
func gramsOf(refs []unitRef, span [][2]int, groupSpan [][][2]int) [][][]float32 {
	gram := make([][][]float32, 1+len(groupSpan))
	gram[0] = gramOf(refs, span)
	for g, s := range groupSpan {
		gram[g+1] = gramOf(refs, s)
	}
	return gram
}

// gramOf is, for each class's span [lo, hi) of refs, the dots of its
// unit references with each other (row-major, (hi-lo)^2), summed in float64.
func gramOf(refs []unitRef, span [][2]int) [][]float32 {
	out := make([][]float32, len(span))
	for c, sp := range span {
		m := sp[1] - sp[0]
		g := make([]float32, m*m)
		for i := range m {
			for j := i; j < m; j++ {
				d := 0.0
				for b, v := range refs[sp[0]+i].unit {
					d += float64(v) * float64(refs[sp[0]+j].unit[b])
				}
				g[i*m+j], g[j*m+i] = float32(d), float32(d)
			}
		}
		out[c] = g
	}
	return out
}

// meanDot is the dot of a pixel with the unit mean of class c's
// r.localMean nearest references of group g (0: the spectra), whose dots
// with the pixel are dots[lo:hi] (the class's span in that group, in
// order): the sum of their dots over the length of the sum of their unit
// vectors, sqrt(sum of their Gram entries). With fewer references than
// that, all of them; with one, its dot.
func (r *SpectralReference) meanDot(dots []float32, lo, hi, g, c int) float32 {
	m := hi - lo
	k := min(r.localMean, m)
	if k < 2 {
		return maxDot(dots[lo:hi])
	}
	if k == 2 {
		return r.meanDot2(dots[lo:hi], r.gram[g][c], m)
	}
	return r.meanDotK(dots, lo, hi, g, c, k)
}

// meanDot2 is meanDot for the default local mean of two (m >= 2 dots):
// the two largest held in registers, where the general insertion into
// arrays took 4% of the bench-big crop's CPU. It keeps meanDotK's choice
// among equal dots (the first stays ahead) and its order of the Gram
// entries' sum, so it returns the same value bit for bit
// (TestMeanDot2MatchesK).
func (r *SpectralReference) meanDot2(dots, gram []float32, m int) float32 {
	t0, t1, i0, i1 := dots[0], dots[1], 0, 1
	if t0 < t1 {
		t0, t1, i0, i1 = t1, t0, 1, 0
	}
	for j := 2; j < len(dots); j++ {
		d := dots[j]
		if d <= t1 {
			continue
		}
		if t0 < d {
			t1, i1 = t0, i0
			t0, i0 = d, j
		} else {
			t1, i1 = d, j
		}
	}
	norm := float64(gram[i0*m+i0])
	norm += float64(gram[i0*m+i1])
	norm += float64(gram[i1*m+i0])
	norm += float64(gram[i1*m+i1])
	if !(norm > 0) {
		return t0
	}
	return float32(float64(t0+t1) / math.Sqrt(norm))
}

// meanDotK is meanDot for a local mean of k >= 2 of the m = hi-lo dots.
func (r *SpectralReference) meanDotK(dots []float32, lo, hi, g, c, k int) float32 {
	m := hi - lo
	// The k largest, kept in descending order by insertion: k is small.
	var idx [maxLocalMean]int
	var top [maxLocalMean]float32
	n := 0
	for j, d := range dots[lo:hi] {
		if n == k && d <= top[k-1] {
			continue
		}
		p := min(n, k-1)
		for p > 0 && top[p-1] < d {
			top[p], idx[p] = top[p-1], idx[p-1]
			p--
		}
		top[p], idx[p] = d, j
		n = min(n+1, k)
	}
	gram := r.gram[g][c]
	var sum float32
	norm := 0.0
	for a := range k {
		sum += top[a]
		for b := range k {
			norm += float64(gram[idx[a]*m+idx[b]])
		}
	}
	if !(norm > 0) {
		return top[0]
	}
	return float32(float64(sum) / math.Sqrt(norm))
}

// Bands is the spectrum length the reference takes.
func (r *SpectralReference) Bands() int { return r.bands }

// Classes is the number of dense classes (the length of ClassDistances' rows).
func (r *SpectralReference) Classes() int { return r.classes }

// Len is the number of reference spectra.
func (r *SpectralReference) Len() int { return r.refs }

// Agreement returns a_other / (a_label + a_other) in 0..1, with a_label the
// spectral angle from spectrum to the nearest reference pixel of class label
// and a_other to the nearest of any other class: above 0.5 when the spectrum
// is closer to its label's training pixels. A label without reference pixels
// gives 0; a zero spectrum NaN. It equals AgreementOf(ClassDistances(...), label).
func (r *SpectralReference) Agreement(spectrum []float32, label int) float32 {
	if len(spectrum) != r.bands {
		return float32(math.NaN())
	}
	cos := make([]float32, r.classes)
	r.pixelDistances(spectrum, make([]float32, r.dotsLen()), cos, 0, r.newScratch())
	return AgreementOf(cos, label)
}

// ClassDistances writes, for each pixel of spectra ([n][bands], raw
// values), the cosine distance 1 - cos(angle) to the nearest reference of
// every class: out[i*Classes()+c] in 0..2, NoReference for a class without
// references, NaN for an invalid pixel (valid[i] false; valid may be nil)
// or one of zero length. Pixels are shared among runtime.GOMAXPROCS
// goroutines. A reference with changed groups (NewAlignedReference) first
// aligns the spectra given as one acquisition (alignedGroup).
//
// Distances rather than cosines, because the angles that matter are small:
// a cosine near 1 loses most of its precision when tiles average it, its
// distance to 1 keeps it (relative rounding), and AgreementOf takes the
// angle from the distance without cancellation.
func (r *SpectralReference) ClassDistances(spectra []float32, valid []bool, out []float32) error {
	if len(spectra)%r.bands != 0 {
		return fmt.Errorf("spectral distances: %d values do not divide into %d bands", len(spectra), r.bands)
	}
	n := len(spectra) / r.bands
	if len(out) != n*r.classes {
		return fmt.Errorf("spectral distances: output of %d values for %d pixels of %d classes", len(out), n, r.classes)
	}
	if valid != nil && len(valid) != n {
		return fmt.Errorf("spectral distances: %d validity flags for %d pixels", len(valid), n)
	}
	aligned := r.alignedGroup(spectra, valid)
	if r.groupSpectra != nil {
		// Penalty pi: the aligned group alone counts.
		a := &r.alone[aligned]
		a.once.Do(func() {
			a.ref, a.err = newReference(r.groupSpectra(aligned), r.bands, r.class, r.classes, nil, nil, 0, r.localMean)
		})
		if a.err != nil {
			return fmt.Errorf("spectral distances, group %d alone: %w", aligned, a.err)
		}
		return a.ref.ClassDistances(spectra, valid, out)
	}
	// Below a few thousand pixels a goroutine costs more than it saves.
	const minPixelsPerWorker = 2048
	workers := max(1, min(runtime.GOMAXPROCS(0), n/minPixelsPerWorker))
	per := (n + workers - 1) / max(workers, 1)
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Go(func() { r.distancesOf(spectra, valid, out, lo, hi, aligned) })
	}
	wg.Wait()
	return nil
}

// dots8Pixels is how many pixels share each block of references read for
// kernels.Dots8 (the kernel reads a 32-reference block once for all of
// them): as many as keep their dots (pixels x padded references) within
// about 512 KiB, the second-level cache's share, from 8 to 64. The kernel
// alone on 3,264 references of 200 bands (BenchmarkDots8, thread CPU
// time, AVX-512): 193 GFLOP/cpu-s at 8 pixels a call, 208 at 32, 220 at
// 64. Above one run it is a multiple of kernels.Dots8Run: with AVX2, 64
// pixels left 4 of each call to the slower four-pixel kernel, 2% of the
// bench-big crop's CPU.
func dots8Pixels(padded int) int {
	n := max(8, min(64, (512<<10)/(4*padded)/8*8))
	if run := kernels.Dots8Run(); n > run {
		n = n / run * run
	}
	return n
}

// dotsLen is the length of the dots scratch pixelDots takes: every
// reference's dot and, with a linear basis, the basis dots after them.
func (r *SpectralReference) dotsLen() int {
	if r.linear != nil {
		return r.padded + r.linear.padded
	}
	return r.padded
}

// table is what the dot kernels multiply a pixel with: the references
// themselves or, with a linear basis, the basis; padded is its row length.
func (r *SpectralReference) table() (unitT, dots8 []float32, padded int) {
	if r.linear != nil {
		return r.linear.unitT, r.linear.dots8, r.linear.padded
	}
	return r.unitT, r.dots8, r.padded
}

// expanded is the dots of every reference from the kernel's dots kd: kd
// itself, or with a linear basis the copies' dots made from it into dots
// (len r.padded at least).
func (r *SpectralReference) expanded(kd, dots []float32) []float32 {
	if r.linear == nil {
		return kd
	}
	r.linear.expand(kd, dots)
	return dots[:r.padded]
}

// kernelPart is the part of a pixelDots scratch (len dotsLen) the kernel
// writes: all of it, or with a linear basis the part after the
// references' dots.
func (r *SpectralReference) kernelPart(dots []float32) []float32 {
	if r.linear != nil {
		return dots[r.padded:r.dotsLen()]
	}
	return dots[:r.padded]
}

// distancesOf is ClassDistances for pixels lo..hi-1, on one goroutine.
func (r *SpectralReference) distancesOf(spectra []float32, valid []bool, out []float32, lo, hi, aligned int) {
	var px, dots, kd [4][]float32
	for p := range dots {
		dots[p] = make([]float32, r.dotsLen())
		kd[p] = r.kernelPart(dots[p])
	}
	unitT, dots8, tpadded := r.table()
	scratch := r.newScratch()
	ok := func(i int) bool { return valid == nil || valid[i] }
	spectrum := func(i int) []float32 { return spectra[i*r.bands : (i+1)*r.bands] }
	row := func(i int) []float32 { return out[i*r.classes : (i+1)*r.classes] }
	load := func(i int) { // pixels i..i+3 into px
		for p := range 4 {
			px[p] = spectrum(i + p)
		}
	}
	// distances4 writes pixels i..i+3, loaded in px, from their dots
	// (dots4(p) for pixel i+p).
	distances4 := func(i int, dots4 func(p int) []float32) {
		norms := norms4(&px)
		for p := range 4 {
			r.classDistances(norms[p], dots4(p), row(i+p), aligned, scratch)
		}
	}
	// four does pixels i..i+3: four valid pixels share every load of the
	// references; where one is invalid, each pixel on its own.
	four := func(i int) {
		if !allValid(valid, i, 4) {
			for p := range 4 {
				r.onePixel(spectrum(i+p), ok(i+p), dots[0], row(i+p), aligned, scratch)
			}
			return
		}
		load(i)
		if kernels.HaveSIMD {
			kernels.Dots4SIMD(unitT, tpadded, &px, &kd)
		} else {
			for p := range 4 {
				kernels.DotsScalar(unitT, tpadded, px[p], kd[p])
			}
		}
		distances4(i, func(p int) []float32 { return r.expanded(kd[p], dots[p]) })
	}
	i := lo
	// Runs of eight valid pixels, up to dots8Pixels' at a time, through the
	// 8 x 32 kernel where the CPU has it (kernels.Dots8): the same
	// distances bit for bit.
	if hi-lo >= 8 && dots8 != nil {
		block := dots8Pixels(tpadded)
		dotsN := make([]float32, block*tpadded)
		for i+8 <= hi {
			n := 0
			for n < block && i+n+8 <= hi && allValid(valid, i+n, 8) {
				n += 8
			}
			if n == 0 {
				four(i)
				four(i + 4)
				i += 8
				continue
			}
			kernels.Dots8(dots8, tpadded, r.bands, spectra[i*r.bands:(i+n)*r.bands], dotsN[:n*tpadded])
			for q := 0; q < n; q += 4 {
				load(i + q)
				distances4(i+q, func(p int) []float32 { return r.expanded(dotsN[(q+p)*tpadded:(q+p+1)*tpadded], dots[p]) })
			}
			i += n
		}
	}
	for ; i+4 <= hi; i += 4 {
		four(i)
	}
	for ; i < hi; i++ {
		r.onePixel(spectrum(i), ok(i), dots[0], row(i), aligned, scratch)
	}
}

// allValid reports whether pixels i..i+n-1 are valid (valid nil: all are).
func allValid(valid []bool, i, n int) bool {
	if valid == nil {
		return true
	}
	return !slices.Contains(valid[i:i+n], false)
}

// onePixel writes one pixel's class distances into cos: NaN when it is
// not valid.
func (r *SpectralReference) onePixel(s []float32, valid bool, dots, cos []float32, aligned int, scratch []float32) {
	if !valid {
		for c := range cos {
			cos[c] = float32(math.NaN())
		}
		return
	}
	r.pixelDistances(s, dots, cos, aligned, scratch)
}

// pixelDistances computes one pixel's class distances (1 - cos) into cos
// (len classes), using dots (len padded) as scratch.
func (r *SpectralReference) pixelDistances(s, dots, cos []float32, aligned int, scratch []float32) {
	r.pixelDots(s, dots)
	r.distancesFromDots(s, dots, cos, aligned, scratch)
}

// pixelDots writes the dot products of one spectrum s with every unit
// reference into dots[:padded] (dots of len dotsLen: the rest is the
// kernel's with a linear basis).
func (r *SpectralReference) pixelDots(s, dots []float32) {
	unitT, _, tpadded := r.table()
	kd := r.kernelPart(dots)
	if kernels.HaveSIMD {
		kernels.DotsSIMD(unitT, tpadded, s, kd)
	} else {
		kernels.DotsScalar(unitT, tpadded, s, kd)
	}
	r.expanded(kd, dots)
}

// squaredLength is s's squared length, summed in band order in float32
// (the sum every class distance divides by).
func squaredLength(s []float32) float32 {
	var norm float32
	for _, v := range s {
		norm += v * v
	}
	return norm
}

// distancesFromDots turns a pixel's dot products with the unit references
// into its class distances: NaN for a spectrum of zero or non-finite length.
func (r *SpectralReference) distancesFromDots(s, dots, cos []float32, aligned int, scratch []float32) {
	r.classDistances(squaredLength(s), dots, cos, aligned, scratch)
}

// norms4 is the squared length of four spectra, each summed in band order
// as distancesFromDots sums it (the same float32 result), with the four
// sums interleaved so that the CPU overlaps their chains of additions.
func norms4(s *[4][]float32) [4]float32 {
	s0 := s[0]
	s1, s2, s3 := s[1][:len(s0)], s[2][:len(s0)], s[3][:len(s0)]
	var n0, n1, n2, n3 float32
	for b, v := range s0 {
		n0 += v * v
		n1 += s1[b] * s1[b]
		n2 += s2[b] * s2[b]
		n3 += s3[b] * s3[b]
	}
	return [4]float32{n0, n1, n2, n3}
}

// classDistances is distancesFromDots for a spectrum of squared length
// norm, with changed group aligned (0: the spectra themselves) counting
// in full.
func (r *SpectralReference) classDistances(norm float32, dots, cos []float32, aligned int, scratch []float32) {
	if !(norm > 0) || math.IsInf(float64(norm), 0) {
		for c := range cos {
			cos[c] = float32(math.NaN())
		}
		return
	}
	inv := 1 / float32(math.Sqrt(float64(norm)))
	if r.blockLen > 0 && len(scratch) >= r.scratchLen() {
		r.blockDistances(inv, dots, cos, aligned, scratch)
		return
	}
	for c, sp := range r.span {
		if sp[0] == sp[1] {
			cos[c] = NoReference
			continue
		}
		if r.groupSpan != nil {
			cos[c] = r.groupDistance(c, inv, dots, aligned)
			continue
		}
		best := r.ownDot(dots, sp[0], sp[1], 0, c)
		cos[c] = min(2, max(0, 1-best*inv))
	}
}

// ownDot is class c's dot in group g (0: the spectra) counted in full,
// whose span's dots are dots[lo:hi]: the largest, or with a local mean
// meanDot's.
func (r *SpectralReference) ownDot(dots []float32, lo, hi, g, c int) float32 {
	if r.localMean >= 2 {
		return r.meanDot(dots, lo, hi, g, c)
	}
	return maxDot(dots[lo:hi])
}

// uniformBlocks is the block length of references whose groups each hold
// as many references of every class as span (the spectra themselves,
// which start at 0): the number of those; 0 when there are no groups or
// a group differs.
func uniformBlocks(span [][2]int, groups [][][2]int) int {
	if len(groups) == 0 {
		return 0
	}
	n := 0
	for _, sp := range span {
		n += sp[1] - sp[0]
	}
	for g, gs := range groups {
		for c, sp := range gs {
			if sp[1]-sp[0] != span[c][1]-span[c][0] || (sp[0] != sp[1] && sp[0]-(g+1)*n != span[c][0]) {
				return 0
			}
		}
	}
	return n
}

// newScratch is the scratch classDistances takes for r (nil when it
// needs none).
func (r *SpectralReference) newScratch() []float32 {
	if r.blockLen == 0 {
		return nil
	}
	return make([]float32, r.scratchLen())
}

// scratchLen is the length of newScratch's scratch: the two reduced
// blocks and each class's largest dot in either.
func (r *SpectralReference) scratchLen() int { return 2*r.blockLen + 2*len(r.span) }

// blockDistances is classDistances for references in uniform blocks
// (blockLen): the groups are first reduced to one block of the largest
// dots of the aligned group and one of the others, a vector maximum over
// whole blocks (kernels.MaxInto), and each class then looks only at its
// span in those two (kernels.SpanMax). The maxima are those of
// groupDistance's per-span loop, so the distances are bit for bit the
// same; the per-span loop ran one dependent comparison a reference and
// took 28% of a fused model's class distances (3,240 references: 8
// classes of 15 spectra and 26 changed groups).
func (r *SpectralReference) blockDistances(inv float32, dots, cos []float32, aligned int, scratch []float32) {
	n, k := r.blockLen, len(r.span)
	own, other := scratch[:n], scratch[n:2*n]
	ownBest, otherBest := scratch[2*n:2*n+k], scratch[2*n+k:2*n+2*k]
	// Every reference counts alike; with a local mean the spectra's
	// (group 0) is taken as the aligned group's, the others penalised by 0.
	shared := r.copyPenaltyRad == 0 && r.localMean < 2
	if shared {
		maxOfBlocks(own, dots, 1+len(r.groupSpan), -1)
	} else {
		copy(own, dots[aligned*n:(aligned+1)*n])
		maxOfBlocks(other, dots, 1+len(r.groupSpan), aligned)
		kernels.SpanMax(otherBest, other, r.span)
	}
	if r.localMean >= 2 {
		for c, sp := range r.span {
			if sp[0] < sp[1] {
				ownBest[c] = r.meanDot(own, sp[0], sp[1], aligned, c)
			}
		}
	} else {
		kernels.SpanMax(ownBest, own, r.span)
	}
	for c, sp := range r.span {
		switch {
		case sp[0] == sp[1]:
			cos[c] = NoReference
		case shared:
			cos[c] = min(2, max(0, 1-ownBest[c]*inv))
		default:
			cos[c] = r.penalised(ownBest[c], otherBest[c], inv)
		}
	}
}

// maxOfBlocks sets dst (len n) to the elementwise maximum of the blocks
// of len n of dots, all of them but block skip (-1: none).
func maxOfBlocks(dst, dots []float32, blocks, skip int) {
	n, first := len(dst), true
	for g := range blocks {
		switch {
		case g == skip:
		case first:
			copy(dst, dots[g*n:(g+1)*n])
			first = false
		default:
			kernels.MaxInto(dst, dots[g*n:(g+1)*n])
		}
	}
}

// maxDot is the largest of dots (at least one). The dots are finite here
// (a finite spectrum, unit references): a plain comparison gives max's
// result without its NaN handling.
func maxDot(dots []float32) float32 {
	best := dots[0]
	for _, d := range dots[1:] {
		if d > best {
			best = d
		}
	}
	return best
}

// AgreementOf is SpectralReference.Agreement from a pixel's class
// distances (one row of ClassDistances): a_other / (a_label + a_other) with
// the angles of the label's distance and of the smallest other one. NaN
// distances (no data) give NaN; a label without references 0; no
// competing class 1.
func AgreementOf(dist []float32, label int) float32 {
	if label < 0 || label >= len(dist) {
		return float32(math.NaN())
	}
	dl := dist[label]
	if math.IsNaN(float64(dl)) {
		return dl
	}
	const absent = NoReference - 1 // between the largest distance (2) and NoReference
	if dl > absent {
		return 0
	}
	other := float32(NoReference)
	for c, v := range dist {
		if c != label && v < other {
			other = v
		}
	}
	if other > absent {
		return 1
	}
	aLabel, aOther := angleOf(float64(dl)), angleOf(float64(other))
	if aLabel+aOther == 0 {
		return 0.5
	}
	return float32(aOther / (aLabel + aOther))
}

// SpectralReference returns the training pixels' spectra as a reference for
// the spectral reliability kinds, or an error wrapping
// ErrNoSpectralReference for a model file written before they were stored.
func (m *Model) SpectralReference() (*SpectralReference, error) {
	if len(m.meta.SpectralClasses) == 0 {
		return nil, ErrNoSpectralReference
	}
	return NewSpectralReference(m.meta.spectralSpectra, m.meta.Bands, m.meta.SpectralClasses, len(m.meta.Classes))
}

// trainSpectra copies the raw spectra of the training pixels (trainIdx,
// classes ytrain) out of s for the model file, in trainIdx's order: all of
// them, or the chooseMaxPerClass of a class with more (a densely labelled
// scene) that the fused decision's choice measures against (sampleTrain,
// drawn with seed), so that the decision is made with the references it
// was chosen on. Every pixel a product classifies is compared with every
// stored spectrum and, for the fused decision, with about 25 changed
// copies of each: a fully labelled 1000 x 1000 scene would otherwise store
// a million spectra (900 MB at 224 bands) and take hours a scene. The
// paper's 15 a class are all kept.
func trainSpectra(s Scene, trainIdx []int, ytrain []int32, classes int, seed int64) ([]float32, []int) {
	keep := make([]bool, len(trainIdx))
	n := 0
	for _, t := range sampleTrain(ytrain, classes, seed) {
		keep[t] = true
		n++
	}
	spectra := make([]float32, 0, n*s.Bands)
	class := make([]int, 0, n)
	for t, i := range trainIdx {
		if keep[t] {
			spectra = append(spectra, s.spectrumAt(i)...)
			class = append(class, int(ytrain[t]))
		}
	}
	return spectra, class
}

// checkSpectra verifies the stored training spectra of a decoded model file.
func (m *Model) checkSpectra() error {
	n := len(m.meta.SpectralClasses)
	if len(m.meta.spectralSpectra) != n*m.meta.Bands {
		return fmt.Errorf("%d training spectra values for %d pixels of %d bands", len(m.meta.spectralSpectra), n, m.meta.Bands)
	}
	for i, c := range m.meta.SpectralClasses {
		if c < 0 || c >= len(m.meta.Classes) {
			return fmt.Errorf("training spectrum %d has class %d outside 0..%d", i, c, len(m.meta.Classes)-1)
		}
	}
	return nil
}

// ResolveReliability picks the reliability kind products of m carry when
// asked for asked ("" = the default) and, for the spectral kinds, the
// model's training spectra. The default is DefaultReliability when m
// stores its training spectra and FallbackReliability otherwise
// (logged on log, which may be nil); an explicitly asked spectral kind that
// m cannot compute is an error wrapping ErrNoSpectralReference.
func (m *Model) ResolveReliability(asked ReliabilityKind, log *slog.Logger) (ReliabilityKind, *SpectralReference, error) {
	kind, err := ParseReliability(string(asked))
	if err != nil {
		return "", nil, err
	}
	if !kind.NeedsSpectrum() {
		return kind, nil, nil
	}
	ref, err := m.SpectralReference()
	if err == nil && ref.Bands() != m.Bands() {
		err = fmt.Errorf("training spectra of %d bands, model %d", ref.Bands(), m.Bands())
	}
	if err != nil {
		if asked != "" {
			return "", nil, fmt.Errorf("reliability %s: %w", kind, err)
		}
		if log != nil {
			log.Info("reliability falls back: the model file holds no usable training spectra",
				"wanted", kind, "using", FallbackReliability, "cause", err)
		}
		return FallbackReliability, nil, nil
	}
	return kind, ref, nil
}
