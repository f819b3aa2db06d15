package drift

import (
	"math"
	"slices"

	"github.com/pnec/pnec/tiling"
)

// The recalibration probe: what would the map lose if this
// scene were calibrated as the training scene? A new acquisition that
// costs the map accuracy mostly differs from the training scene by a
// calibration the network does not fully see past (a smooth spectral
// tilt, a shift of the band axis), and whether a given model loses 1 point
// or 7 to the same change depends on the model (its seed) as much as on
// the change. The probe measures it directly: it estimates the scene's
// calibration against the training scene (a shift of the band axis and a
// smooth gain curve over the bands, from the scene's mean spectrum and
// what the training scene gave for the same mix of labels), classifies a
// window of the scene as it is and with that calibration undone, and
// counts the pixels whose class changes. A model that sees past the
// change gives the same map both ways; one that suffers from it changes
// its map by about what the change cost it.

// ProbeSide is the largest side, pixels, of the window the recalibration
// probe classifies (twice): on a Pavia-size scene (610x340) its two runs
// cover 9% of the pixels.
const ProbeSide = 96

// ProbeMinValidShare is the share of valid pixels a candidate window
// needs to be taken (ProbeWindows; the centre first): below it the next
// candidate is tried, and with none at it the one with the most.
const ProbeMinValidShare = 0.5

// probeShiftLimit is the largest band shift the probe searches, bands, and
// probeShiftStep its step: calibration drift moves the band axis by a
// fraction of a band to a few bands.
const (
	probeShiftLimit = 4.0
	probeShiftStep  = 0.25
)

// ProbeWindows are the windows of a rows x cols scene the recalibration
// probe may run on, in order of preference: the centred one, then those
// centred on the other points of a 3x3 grid over the scene (for a scene
// whose centre holds no data). Each is at most ProbeSide a side, clipped
// to the scene, its corner on the network's stride grid; a scene that
// fits has one window, the scene.
func ProbeWindows(rows, cols int) []tiling.Rect {
	at := func(fr, fc float64) tiling.Rect { return probeWindowAt(rows, cols, fr*float64(rows), fc*float64(cols)) }
	out := []tiling.Rect{at(0.5, 0.5)}
	if out[0].Rows == rows && out[0].Cols == cols {
		return out
	}
	for _, fr := range []float64{1.0 / 6, 0.5, 5.0 / 6} {
		for _, fc := range []float64{1.0 / 6, 0.5, 5.0 / 6} {
			w := at(fr, fc)
			dup := false
			for _, o := range out {
				dup = dup || o == w
			}
			if !dup {
				out = append(out, w)
			}
		}
	}
	return out
}

// GridStride is the network's stride, pixels (model.Stride; model's tests
// hold the two equal): the probe's windows start on its grid, as tiles do.
const GridStride = 4

// probeWindowAt is the probe's window of a rows x cols scene centred as
// near (y, x) (pixels from the scene's corner) as the scene's edges and
// the stride grid allow.
func probeWindowAt(rows, cols int, y, x float64) tiling.Rect {
	nr, nc := min(ProbeSide, rows), min(ProbeSide, cols)
	r0 := int(y-float64(nr)/2) / GridStride * GridStride
	c0 := int(x-float64(nc)/2) / GridStride * GridStride
	r0 = min(max(r0, 0), rows-nr)
	c0 = min(max(c0, 0), cols-nc)
	return tiling.Rect{Row: r0, Col: c0, Rows: nr, Cols: nc}
}

// ProbeCandidates are ProbeWindows and, last, the window around near's
// pixel (the valid pixel nearest the scene's centre) when it is another:
// a scene whose data lie where the grid's windows miss them (a thin swath
// across a large empty raster) still gets a probe instead of NaN figures.
func ProbeCandidates(rows, cols int, near NearestValid) []tiling.Rect {
	out := ProbeWindows(rows, cols)
	if r, c, ok := near.Nearest(); ok {
		if w := probeWindowAt(rows, cols, float64(r)+0.5, float64(c)+0.5); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// NearestValid finds the valid pixel of a scene nearest its centre from
// the scene's rows, given in any order and in pieces (as the cores of its
// tiles give them). Ties go to the first pixel in row-major order, so a
// scene has one answer however it is tiled.
type NearestValid struct {
	rows, cols int
	row, col   int
	d2         int64 // squared distance to the centre, half pixels; -1 while none was found
}

// NewNearestValid starts the search over a rows x cols scene.
func NewNearestValid(rows, cols int) NearestValid {
	return NearestValid{rows: rows, cols: cols, d2: -1}
}

// AddRow adds the n pixels of scene row row from column col0; valid says
// which are valid (nil: all).
func (v *NearestValid) AddRow(row, col0, n int, valid []bool) {
	if n <= 0 || v.rows == 0 {
		return
	}
	dr := int64(2*row - (v.rows - 1))
	if v.d2 >= 0 && dr*dr > v.d2 {
		return // no pixel of this row is as near
	}
	consider := func(c int) {
		dc := int64(2*c - (v.cols - 1))
		d := dr*dr + dc*dc
		if v.d2 < 0 || d < v.d2 || d == v.d2 && (row < v.row || row == v.row && c < v.col) {
			v.row, v.col, v.d2 = row, c, d
		}
	}
	if valid == nil {
		consider(min(max((v.cols-1)/2, col0), col0+n-1))
		return
	}
	for i, ok := range valid[:n] {
		if ok {
			consider(col0 + i)
		}
	}
}

// Nearest is the pixel found, ok false while no valid pixel was added.
func (v NearestValid) Nearest() (row, col int, ok bool) { return v.row, v.col, v.d2 >= 0 }

// ChooseProbeWindow picks among candidate windows (ProbeWindows) by their
// counts of valid pixels: the first with at least ProbeMinValidShare of
// its pixels valid, else the one with the most (the first among equals);
// -1 when none holds a valid pixel.
func ChooseProbeWindow(windows []tiling.Rect, valid []int) int {
	best := -1
	for i, w := range windows {
		if i >= len(valid) {
			break
		}
		if float64(valid[i]) >= ProbeMinValidShare*float64(w.Rows*w.Cols) && valid[i] > 0 {
			return i
		}
		if valid[i] > 0 && (best < 0 || valid[i] > valid[best]) {
			best = i
		}
	}
	return best
}

// Recalibration is what the recalibration probe found on a window.
type Recalibration struct {
	// Pixels are the window's valid pixels, Changed those whose class
	// (after the model's recovery) changed with the calibration undone.
	Pixels, Changed int64
	// BandShift is the estimated shift of the scene's band axis against
	// the training scene's, bands (band b of the scene holds what band
	// b+BandShift of the training scene would: Radiometric.BandShift).
	BandShift float64
}

// estimateCalibration estimates w's calibration against the training
// scene: the band shift s and the smooth gain G with, per band b,
//
//	mean(b) ~ G(b) * train(b + s)
//
// where mean is the mean spectrum of w's valid pixels (labels l, -1 for
// invalid) and train the training scene's class mean spectra
// (classMean, [k][bands]) weighted by w's counts of each label: another
// mix of the same classes is no change. G is exp of a polynomial of degree
// probeGainDegree in the band position, fitted to log(mean/train) by least
// squares; s is the shift, in steps of probeShiftStep up to
// probeMaxShift(bands) either way, whose fit leaves the smallest mean
// squared residual (the smallest |s| among equals). ok is false without a
// pixel to estimate from.
func estimateCalibration(data []float32, B int, l []int, classMean []float32, k int) (shift float64, gain []float64, ok bool) {
	mean, train, ok := probeSpectra(data, B, l, classMean, k)
	if !ok {
		return 0, nil, false
	}
	deg := probeGainDegree(B)
	maxShift := probeMaxShift(B)
	bestRes := math.Inf(1)
	var fitted bool
	ratio := make([]float64, B)
	use := make([]bool, B)
	// Shifts in order of |s|: 0, +step, -step, +2 step, ...
	for j := 0; float64(j)*probeShiftStep <= maxShift+1e-9; j++ {
		for _, sign := range []float64{1, -1} {
			if j == 0 && sign < 0 {
				continue
			}
			s := sign * float64(j) * probeShiftStep
			used := 0
			for b := range ratio {
				x := float64(b) + s
				use[b] = false
				if x < 0 || x > float64(B-1) {
					continue
				}
				t := interpBand(train, x)
				if mean[b] > 0 && t > 0 {
					ratio[b], use[b] = math.Log(mean[b]/t), true
					used++
				}
			}
			if used < 2*(deg+1) {
				continue
			}
			coef := fitLegendre(ratio, use, deg)
			var res float64
			for b := range ratio {
				if use[b] {
					d := ratio[b] - evalLegendre(coef, bandPosition(b, B))
					res += d * d
				}
			}
			res /= float64(used)
			if res < bestRes {
				bestRes, shift, fitted = res, s, true
				gain = make([]float64, B)
				for b := range gain {
					gain[b] = math.Exp(evalLegendre(coef, bandPosition(b, B)))
				}
			}
		}
	}
	if !fitted {
		// Too few bands with positive means to fit a curve: the level alone.
		gain, ok = levelGain(mean, train)
		return 0, gain, ok
	}
	return shift, gain, true
}

// probeSpectra are the mean spectrum of w's valid pixels with finite
// values (labels l, -1 for invalid) and the training scene's class mean
// spectra (classMean, [k][bands]) weighted by those pixels' counts of each
// label; ok is false without such a pixel.
func probeSpectra(data []float32, B int, l []int, classMean []float32, k int) (mean, train []float64, ok bool) {
	sum := make([]float64, B)
	counts := make([]float64, k)
	var n float64
	for i, c := range l {
		if c < 0 || c >= k {
			continue
		}
		px := data[i*B : (i+1)*B]
		finite := true
		for _, v := range px {
			finite = finite && v-v == 0
		}
		if !finite {
			continue
		}
		for b, v := range px {
			sum[b] += float64(v)
		}
		counts[c]++
		n++
	}
	if n == 0 {
		return nil, nil, false
	}
	mean = make([]float64, B)
	train = make([]float64, B)
	for b := range mean {
		mean[b] = sum[b] / n
		for c := range k {
			train[b] += counts[c] / n * float64(classMean[c*B+b])
		}
	}
	return mean, train, true
}

// levelGain is the one gain for every band that best explains mean by
// train on the log scale (their mean log ratio over the bands where both
// are positive); ok is false where no band is.
func levelGain(mean, train []float64) ([]float64, bool) {
	var lsum float64
	var used int
	for b := range mean {
		if mean[b] > 0 && train[b] > 0 {
			lsum += math.Log(mean[b] / train[b])
			used++
		}
	}
	if used == 0 {
		return nil, false
	}
	gain := make([]float64, len(mean))
	for b := range gain {
		gain[b] = math.Exp(lsum / float64(used))
	}
	return gain, true
}

// probeGainDegree is the degree of the gain curve's polynomial for a
// scene of bands bands: cubic (a tilt, a bow, a wave over the spectrum)
// where there are bands enough to tell it from the spectra's own shape.
func probeGainDegree(bands int) int { return max(0, min(3, (bands-1)/4)) }

// probeMaxShift is the largest band shift the probe searches for a scene
// of bands bands: probeShiftLimit, and no more than an eighth of the bands.
func probeMaxShift(bands int) float64 { return math.Min(probeShiftLimit, math.Floor(float64(bands)/8)) }

// bandPosition is band b's position in [-1, 1].
func bandPosition(b, bands int) float64 {
	if bands < 2 {
		return 0
	}
	return 2*float64(b)/float64(bands-1) - 1
}

// interpBand is v at fractional band x, linear between bands, clamped to
// the first and last.
func interpBand(v []float64, x float64) float64 {
	x = math.Min(math.Max(x, 0), float64(len(v)-1))
	j := int(x)
	j2 := min(j+1, len(v)-1)
	f := x - float64(j)
	return v[j] + f*(v[j2]-v[j])
}

// legendre are the Legendre polynomials P_0..P_deg at u.
func legendre(u float64, deg int) []float64 {
	p := make([]float64, deg+1)
	p[0] = 1
	if deg >= 1 {
		p[1] = u
	}
	for n := 2; n <= deg; n++ {
		p[n] = ((2*float64(n)-1)*u*p[n-1] - (float64(n)-1)*p[n-2]) / float64(n)
	}
	return p
}

func evalLegendre(coef []float64, u float64) float64 {
	var y float64
	for i, p := range legendre(u, len(coef)-1) {
		y += coef[i] * p
	}
	return y
}

// fitLegendre fits y (at the bands use marks) with Legendre polynomials
// of the band position up to degree deg, by least squares (the normal
// equations: the basis is near orthogonal over the bands, so they are
// well conditioned).
func fitLegendre(y []float64, use []bool, deg int) []float64 {
	n := deg + 1
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n+1)
	}
	for b, v := range y {
		if !use[b] {
			continue
		}
		p := legendre(bandPosition(b, len(y)), deg)
		for i := range n {
			for j := range n {
				a[i][j] += p[i] * p[j]
			}
			a[i][n] += p[i] * v
		}
	}
	// Gauss-Jordan with partial pivoting.
	for i := range n {
		piv := i
		for r := i + 1; r < n; r++ {
			if math.Abs(a[r][i]) > math.Abs(a[piv][i]) {
				piv = r
			}
		}
		a[i], a[piv] = a[piv], a[i]
		if a[i][i] == 0 {
			continue
		}
		for j := n; j >= i; j-- {
			a[i][j] /= a[i][i]
		}
		for r := range n {
			if r != i && a[r][i] != 0 {
				f := a[r][i]
				for j := i; j <= n; j++ {
					a[r][j] -= f * a[i][j]
				}
			}
		}
	}
	coef := make([]float64, n)
	for i := range coef {
		coef[i] = a[i][n]
	}
	return coef
}

// undoCalibration is data with the calibration (shift, gain) undone: per
// pixel and band b, out(b) = in(b - shift) / gain(b - shift), interpolated
// between bands and clamped to the first and last (Radiometric.Apply
// inverted). Invalid pixels are copied unchanged. The interpolation's
// bands and weights, gain included, are the same for every pixel, so they
// are worked out once per band (a pixel at a time they took a fifth of the
// probe's time on a 96x96x204 window).
func undoCalibration(data []float32, valid []bool, B int, shift float64, gain []float64) []float32 {
	lo, hi := make([]int, B), make([]int, B)
	wlo, whi := make([]float64, B), make([]float64, B)
	for b := range B {
		x := math.Min(math.Max(float64(b)-shift, 0), float64(B-1))
		j := int(x)
		j2 := min(j+1, B-1)
		f := x - float64(j)
		lo[b], hi[b] = j, j2
		wlo[b], whi[b] = (1-f)/gain[j], f/gain[j2]
	}
	out := make([]float32, len(data))
	for i := 0; i < len(data)/B; i++ {
		in, dst := data[i*B:(i+1)*B], out[i*B:(i+1)*B]
		if valid != nil && !valid[i] {
			copy(dst, in)
			continue
		}
		for b := range dst {
			dst[b] = float32(float64(in[lo[b]])*wlo[b] + float64(in[hi[b]])*whi[b])
		}
	}
	return out
}

// Calibration is a scene's calibration against the training scene as the
// recalibration probe estimates it: band b of the scene holds about
// Gain(b) times what band b+BandShift of the training scene would.
type Calibration struct {
	BandShift float64
	Gain      []float64
}

// EstimateCalibration estimates the calibration of a window's pixels
// (data, [pixels][bands] raw values; labels the window's dense class
// labels, -1 where invalid) against the training scene's class mean
// spectra (classMean, [k][bands]; Stats.ClassMeanSpectrum) by
// estimateCalibration's fit; ok is false without a pixel to estimate from.
func EstimateCalibration(data []float32, bands int, labels []int, classMean []float32, k int) (Calibration, bool) {
	shift, gain, ok := estimateCalibration(data, bands, labels, classMean, k)
	return Calibration{BandShift: shift, Gain: gain}, ok
}

// Undo is the pixels data ([pixels][bands]; valid may be nil) with c
// undone (undoCalibration); invalid pixels are copied unchanged.
func (c Calibration) Undo(data []float32, valid []bool, bands int) []float32 {
	return undoCalibration(data, valid, bands, c.BandShift, c.Gain)
}
