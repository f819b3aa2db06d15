package synth

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// ErrSource reports spectra that cannot serve as a source (too few pixels,
// no labelled classes, mismatched sizes).
var ErrSource = errors.New("bad spectra source")

// Mode is one Gaussian component of a class: a low-rank covariance plus
// independent per-band residuals, x = Mean + sum_k z_k*Axes[k] + ResidualSD.*e
// with z, e standard normal.
type Mode struct {
	// Weight is the share of the class's pixels in this mode (modes sum to 1).
	Weight float64
	Mean   []float64
	// Axes span the top principal subspace of the mode's covariance, each
	// scaled so that their outer products sum to the covariance restricted to
	// that subspace.
	Axes [][]float64
	// ResidualSD is the per-band standard deviation the axes leave out.
	ResidualSD []float64
}

// ClassStats is the spectral distribution of one class: a mixture of a few
// Gaussian modes (real classes are rarely unimodal: a crop with weeds, a
// road with and without shade), each estimated from a k-means cluster of the
// class's pixels.
type ClassStats struct {
	Label int    // class value in the source's labels (0 for clusters of unlabelled pixels)
	Name  string // class name, or a description of where it comes from
	Count int    // source pixels it was estimated from (0 for derived classes)
	Mean  []float64
	Modes []Mode
}

// Source is a set of class spectra distributions.
type Source struct {
	Name  string
	Bands int
	// Classes are the labelled classes, in ascending label order.
	Classes []ClassStats
	// Background are clusters of the source's unlabelled pixels: real
	// spectra of other land covers (empty when every pixel is labelled).
	Background []ClassStats
}

// EstimateOptions tunes Estimate.
type EstimateOptions struct {
	// Rank is the number of principal axes kept per class (default 8).
	Rank int
	// BackgroundClusters is how many k-means clusters the unlabelled pixels
	// are split into (default 3; 0 after defaults means none).
	BackgroundClusters int
	// Names names label values.
	Names map[int]string
	// MaxModes is the most Gaussian modes per class (default 3); a class
	// gets one mode per pixelsPerMode of its pixels, up to MaxModes.
	MaxModes int
	// Seed makes the k-means and subspace iterations reproducible.
	Seed uint64
}

// pixelsPerMode is how many source pixels each mode needs at least.
const pixelsPerMode = 150

// minClassPixels is the fewest pixels a class needs for its statistics.
const minClassPixels = 20

// Estimate computes class statistics from a labelled image: pixels is
// pixel-interleaved (len = len(labels)*bands), labels are per pixel with 0 =
// unlabelled.
func Estimate(name string, pixels []float32, labels []uint8, bands int, opt EstimateOptions) (*Source, error) {
	if bands <= 0 || len(pixels) != len(labels)*bands {
		return nil, fmt.Errorf("%w: %s: %d samples for %d pixels x %d bands", ErrSource, name, len(pixels), len(labels), bands)
	}
	if opt.Rank <= 0 {
		opt.Rank = 8
	}
	if opt.MaxModes <= 0 {
		opt.MaxModes = 3
	}
	if opt.BackgroundClusters < 0 {
		opt.BackgroundClusters = 0
	}
	byLabel := map[int][]int{}
	for i, l := range labels {
		byLabel[int(l)] = append(byLabel[int(l)], i)
	}
	keys := make([]int, 0, len(byLabel))
	for k := range byLabel {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	src := &Source{Name: name, Bands: bands}
	for _, k := range keys {
		if k == 0 || len(byLabel[k]) < minClassPixels {
			continue
		}
		cs := classStats(pixels, byLabel[k], bands, opt, opt.Seed+uint64(k))
		cs.Label = k
		cs.Name = opt.Names[k]
		if cs.Name == "" {
			cs.Name = fmt.Sprintf("class %d", k)
		}
		src.Classes = append(src.Classes, cs)
	}
	if len(src.Classes) == 0 {
		return nil, fmt.Errorf("%w: %s: no class has %d or more labelled pixels", ErrSource, name, minClassPixels)
	}
	if bg := byLabel[0]; opt.BackgroundClusters > 0 && len(bg) >= minClassPixels*opt.BackgroundClusters {
		for ci, members := range kmeans(pixels, bg, bands, opt.BackgroundClusters, opt.Seed) {
			if len(members) < minClassPixels {
				continue
			}
			cs := classStats(pixels, members, bands, opt, opt.Seed+1000+uint64(ci))
			cs.Name = fmt.Sprintf("unlabelled cluster %d", len(src.Background)+1)
			src.Background = append(src.Background, cs)
		}
	}
	return src, nil
}

// classStats estimates a class's overall mean and its modes: k-means
// clusters of its pixels, each with its own mean and covariance.
func classStats(pixels []float32, idx []int, bands int, opt EstimateOptions, seed uint64) ClassStats {
	m := min(opt.MaxModes, max(1, len(idx)/pixelsPerMode))
	groups := [][]int{idx}
	if m > 1 {
		groups = kmeans(pixels, idx, bands, m, seed)
	}
	cs := ClassStats{Count: len(idx), Mean: make([]float64, bands)}
	for gi, g := range groups {
		if len(g) < minClassPixels {
			continue
		}
		md := modeStats(pixels, g, bands, opt.Rank, seed+uint64(gi)*7919)
		md.Weight = float64(len(g))
		cs.Modes = append(cs.Modes, md)
	}
	var total float64
	for _, md := range cs.Modes {
		total += md.Weight
	}
	for i := range cs.Modes {
		cs.Modes[i].Weight /= total
		for b, v := range cs.Modes[i].Mean {
			cs.Mean[b] += cs.Modes[i].Weight * v
		}
	}
	return cs
}

// modeStats estimates mean, principal axes and residuals of the pixels idx.
func modeStats(pixels []float32, idx []int, bands, rank int, seed uint64) Mode {
	n := len(idx)
	mean := make([]float64, bands)
	for _, i := range idx {
		for b, v := range pixels[i*bands : (i+1)*bands] {
			mean[b] += float64(v)
		}
	}
	for b := range mean {
		mean[b] /= float64(n)
	}
	// Covariance, upper triangle accumulated then mirrored.
	cov := make([]float64, bands*bands)
	d := make([]float64, bands)
	for _, i := range idx {
		for b, v := range pixels[i*bands : (i+1)*bands] {
			d[b] = float64(v) - mean[b]
		}
		for a := 0; a < bands; a++ {
			da := d[a]
			row := cov[a*bands:]
			for b := a; b < bands; b++ {
				row[b] += da * d[b]
			}
		}
	}
	for a := 0; a < bands; a++ {
		for b := a; b < bands; b++ {
			v := cov[a*bands+b] / float64(max(1, n-1))
			cov[a*bands+b], cov[b*bands+a] = v, v
		}
	}
	rank = min(rank, bands, n-1)
	axes := lowRankFactor(cov, bands, rank, seed)
	resid := make([]float64, bands)
	for b := range resid {
		v := cov[b*bands+b]
		for _, ax := range axes {
			v -= ax[b] * ax[b]
		}
		resid[b] = math.Sqrt(math.Max(v, 0))
	}
	return Mode{Mean: mean, Axes: axes, ResidualSD: resid}
}

// lowRankFactor returns rank vectors a_k with sum_k a_k a_k^T = Q (Q^T C Q) Q^T
// where Q spans C's top-rank eigenspace (orthogonal subspace iteration, then
// a Cholesky factor of the projected matrix).
func lowRankFactor(cov []float64, n, rank int, seed uint64) [][]float64 {
	if rank <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eb5))
	q := make([][]float64, rank)
	for k := range q {
		q[k] = make([]float64, n)
		for i := range q[k] {
			q[k][i] = rng.NormFloat64()
		}
	}
	orthonormalize(q)
	tmp := make([][]float64, rank)
	for k := range tmp {
		tmp[k] = make([]float64, n)
	}
	// 30 orthogonal iterations: the subspace (not each eigenvector) is what
	// the factor needs, and hyperspectral spectra have fast-decaying eigenvalues.
	for it := 0; it < 30; it++ {
		for k := range q {
			matVec(cov, n, q[k], tmp[k])
		}
		q, tmp = tmp, q
		orthonormalize(q)
	}
	// T = Q^T C Q, rank x rank.
	t := make([]float64, rank*rank)
	cq := make([]float64, n)
	for j := range q {
		matVec(cov, n, q[j], cq)
		for i := range q {
			t[i*rank+j] = dot(q[i], cq)
		}
	}
	l := cholesky(t, rank)
	axes := make([][]float64, rank)
	for k := range axes {
		axes[k] = make([]float64, n)
		for i := k; i < rank; i++ { // (Q L)[:,k] = sum_i Q[:,i] L[i,k]
			c := l[i*rank+k]
			for b := range axes[k] {
				axes[k][b] += q[i][b] * c
			}
		}
	}
	return axes
}

func matVec(m []float64, n int, x, y []float64) {
	for i := 0; i < n; i++ {
		y[i] = dot(m[i*n:(i+1)*n], x)
	}
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// orthonormalize applies modified Gram-Schmidt; a vector that collapses
// (rank-deficient covariance) is left at zero.
func orthonormalize(q [][]float64) {
	for k := range q {
		for j := 0; j < k; j++ {
			p := dot(q[k], q[j])
			for i := range q[k] {
				q[k][i] -= p * q[j][i]
			}
		}
		nrm := math.Sqrt(dot(q[k], q[k]))
		if nrm < 1e-12 {
			for i := range q[k] {
				q[k][i] = 0
			}
			continue
		}
		for i := range q[k] {
			q[k][i] /= nrm
		}
	}
}

// cholesky returns lower-triangular L with L L^T = a (row-major n x n);
// non-positive pivots (zero directions) give zero columns.
func cholesky(a []float64, n int) []float64 {
	l := make([]float64, n*n)
	for j := 0; j < n; j++ {
		s := a[j*n+j]
		for k := 0; k < j; k++ {
			s -= l[j*n+k] * l[j*n+k]
		}
		if s <= 0 {
			continue
		}
		d := math.Sqrt(s)
		l[j*n+j] = d
		for i := j + 1; i < n; i++ {
			v := a[i*n+j]
			for k := 0; k < j; k++ {
				v -= l[i*n+k] * l[j*n+k]
			}
			l[i*n+j] = v / d
		}
	}
	return l
}

// kmeans splits the pixels idx into k clusters (Lloyd iterations from a
// deterministic farthest-point start) and returns the members of each.
func kmeans(pixels []float32, idx []int, bands, k int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 0x4b4d))
	cent := make([][]float64, 0, k)
	first := idx[rng.IntN(len(idx))]
	cent = append(cent, toF64(pixels[first*bands:(first+1)*bands]))
	dist := make([]float64, len(idx))
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	for len(cent) < k {
		far, best := 0, -1.0
		for j, i := range idx {
			d := sqDist(pixels[i*bands:(i+1)*bands], cent[len(cent)-1])
			dist[j] = math.Min(dist[j], d)
			if dist[j] > best {
				far, best = i, dist[j]
			}
		}
		cent = append(cent, toF64(pixels[far*bands:(far+1)*bands]))
	}
	assign := make([]int, len(idx))
	for it := 0; it < 30; it++ {
		changed := false
		for j, i := range idx {
			p := pixels[i*bands : (i+1)*bands]
			bi, bd := 0, math.Inf(1)
			for c := range cent {
				if d := sqDist(p, cent[c]); d < bd {
					bi, bd = c, d
				}
			}
			if assign[j] != bi || it == 0 {
				changed = changed || assign[j] != bi
				assign[j] = bi
			}
		}
		counts := make([]int, k)
		for c := range cent {
			for b := range cent[c] {
				cent[c][b] = 0
			}
		}
		for j, i := range idx {
			c := assign[j]
			counts[c]++
			for b, v := range pixels[i*bands : (i+1)*bands] {
				cent[c][b] += float64(v)
			}
		}
		for c := range cent {
			for b := range cent[c] {
				cent[c][b] /= float64(max(1, counts[c]))
			}
		}
		if !changed && it > 0 {
			break
		}
	}
	out := make([][]int, k)
	for j, i := range idx {
		out[assign[j]] = append(out[assign[j]], i)
	}
	return out
}

func toF64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func sqDist(p []float32, c []float64) float64 {
	var s float64
	for b, v := range p {
		d := float64(v) - c[b]
		s += d * d
	}
	return s
}

// Resample returns the source with every class linearly interpolated over
// the band axis to n bands: output band j sits at source band position
// j*(S-1)/(n-1). Means and axes are interpolated (an exact linear map of the
// low-rank part). Residual variances are interpolated as variances
// ((1-f)*v0 + f*v1) rather than propagated through the map, which would
// shrink them by up to half between bands: a sensor with fewer or more bands
// has its own per-band noise, not an average of the source's.
func (s *Source) Resample(n int) (*Source, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: %s: resample to %d bands", ErrSource, s.Name, n)
	}
	if n == s.Bands {
		return s, nil
	}
	pos := func(j int) (int, float64) {
		if n == 1 || s.Bands == 1 {
			t := float64(s.Bands-1) / 2
			i := int(t)
			return i, t - float64(i)
		}
		t := float64(j) * float64(s.Bands-1) / float64(n-1)
		i := min(int(t), s.Bands-2)
		return i, t - float64(i)
	}
	interp := func(v []float64) []float64 {
		out := make([]float64, n)
		for j := range out {
			i, f := pos(j)
			if i+1 < len(v) {
				out[j] = (1-f)*v[i] + f*v[i+1]
			} else {
				out[j] = v[i]
			}
		}
		return out
	}
	convMode := func(c Mode) Mode {
		o := c
		o.Mean = interp(c.Mean)
		o.Axes = make([][]float64, len(c.Axes))
		for k, a := range c.Axes {
			o.Axes[k] = interp(a)
		}
		o.ResidualSD = make([]float64, n)
		for j := range o.ResidualSD {
			i, f := pos(j)
			v := c.ResidualSD[i] * c.ResidualSD[i] * (1 - f)
			if i+1 < len(c.ResidualSD) {
				v += c.ResidualSD[i+1] * c.ResidualSD[i+1] * f
			}
			o.ResidualSD[j] = math.Sqrt(v)
		}
		return o
	}
	conv := func(c ClassStats) ClassStats {
		o := c
		o.Mean = interp(c.Mean)
		o.Modes = make([]Mode, len(c.Modes))
		for i, md := range c.Modes {
			o.Modes[i] = convMode(md)
		}
		return o
	}
	out := &Source{Name: s.Name, Bands: n}
	for _, c := range s.Classes {
		out.Classes = append(out.Classes, conv(c))
	}
	for _, c := range s.Background {
		out.Background = append(out.Background, conv(c))
	}
	return out, nil
}
