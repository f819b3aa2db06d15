package synth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
)

// ErrConfig reports generation settings out of range.
var ErrConfig = errors.New("bad settings")

// Config sets how a scene is generated. Start from DefaultConfig.
type Config struct {
	// Bands is the number of output bands (0 = the source's).
	Bands int
	// Seed makes the scene reproducible: same seed, same layout and source,
	// same pixels.
	Seed uint64
	// NoiseRel is the sensor noise standard deviation as a fraction of the
	// band's mean signal over all classes (default 0.01).
	NoiseRel float64
	// MixingSigmaPx is the standard deviation, in pixels, of the Gaussian
	// point spread that mixes class abundances near boundaries (default 0.7;
	// 0 = no mixed pixels).
	MixingSigmaPx float64
	// BackgroundClasses is how many land-cover regions the layout's
	// unlabelled background is split into (default 3).
	BackgroundClasses int
	// SpatialFraction is the share of the variance along the first principal
	// axes that varies smoothly in space (within-field gradients) rather than
	// independently per pixel (default 0.5).
	SpatialFraction float64
	// TailDOF gives the within-class variation along the principal axes
	// Student-t tails with this many degrees of freedom (same covariance,
	// more outlying pixels, as real classes have); 0 = Gaussian. Default 5.
	TailDOF float64
	// IlluminationRel is the amplitude (standard deviation, fraction) of a
	// smooth multiplicative brightness field (default 0.03).
	IlluminationRel float64
}

// DefaultConfig returns the default settings.
func DefaultConfig() Config {
	return Config{NoiseRel: 0.01, MixingSigmaPx: 0.7, BackgroundClasses: 3, SpatialFraction: 0.5, IlluminationRel: 0.03, TailDOF: 5}
}

// SceneClass is one spectral class of a generated scene.
type SceneClass struct {
	// Label is the value in the label raster (0 for background regions).
	Label int
	// Region numbers background regions from 1 (0 for labelled classes).
	Region int
	// Origin says where the spectra come from.
	Origin string
	Stats  ClassStats
}

// modeParams is a Mode flattened for the inner loop.
type modeParams struct {
	cumWeight float64   // cumulative weight up to and including this mode
	mean      []float32 // [band]
	axes      []float32 // [axis*bands+band]
	nAxes     int
	pureSD    []float32 // sqrt(residual^2 + noise^2) per band
	resid     []float32
}

// spatialAxes is how many leading principal axes get a smooth spatial part.
const spatialAxes = 3

// Generator synthesises the pixels of a scene row by row. Its methods may be
// called from several goroutines at once.
type Generator struct {
	layout  *Layout
	cfg     Config
	bands   int
	classes []SceneClass
	// classOf[r*Cols+c] indexes classes.
	classOf []uint8
	// modes[class] are the class's modes flattened to float32 for speed.
	modes [][]modeParams
	noise []float64 // per band, absolute
	maxAx int
	// modeF[class] picks the mode of each pixel: smooth, so modes form
	// patches within a field as real sub-populations do.
	modeF []field
	// Mixing kernel offsets and weights within radius.
	kOff []struct{ dr, dc int }
	kW   []float64
	kRad int
	zf   [spatialAxes]field
	illf field
}

// ConfigError names the Config field that is out of range (errors.Is(err,
// ErrConfig) holds for it).
type ConfigError struct {
	Field string  // the Config field, e.g. "NoiseRel"
	Value float64 // its value
	Want  string  // the range it must be in, in words
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%v: %s %g: want %s", ErrConfig, e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrConfig }

// validate checks each field of c, the first out of range as a *ConfigError.
func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    float64
		ok   bool
		want string
	}{
		{"Bands", float64(c.Bands), c.Bands >= 0, "0 (the source's) or more"},
		{"NoiseRel", c.NoiseRel, c.NoiseRel >= 0, "0 or more"},
		{"MixingSigmaPx", c.MixingSigmaPx, c.MixingSigmaPx >= 0 && c.MixingSigmaPx <= 5, "0..5 pixels"},
		{"BackgroundClasses", float64(c.BackgroundClasses), c.BackgroundClasses >= 0, "0 or more"},
		{"SpatialFraction", c.SpatialFraction, c.SpatialFraction >= 0 && c.SpatialFraction <= 1, "0..1"},
		{"TailDOF", c.TailDOF, c.TailDOF == 0 || c.TailDOF > 2, "0 (Gaussian) or more than 2"},
		{"IlluminationRel", c.IlluminationRel, c.IlluminationRel >= 0 && c.IlluminationRel <= 0.3, "0..0.3"},
	} {
		if !f.ok || math.IsNaN(f.v) {
			return &ConfigError{Field: f.name, Value: f.v, Want: f.want}
		}
	}
	return nil
}

// New prepares a generator for layout with class spectra drawn from src.
func New(layout *Layout, src *Source, cfg Config) (*Generator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Bands == 0 {
		cfg.Bands = src.Bands
	}
	rs, err := src.Resample(cfg.Bands)
	if err != nil {
		return nil, err
	}
	g := &Generator{layout: layout, cfg: cfg, bands: cfg.Bands}
	labelClass, bgRegions, err := g.planClasses(rs)
	if err != nil {
		return nil, err
	}
	g.assignPixels(labelClass, bgRegions)
	if err := g.prepare(); err != nil {
		return nil, err
	}
	return g, nil
}

// Bands returns the number of bands generated.
func (g *Generator) Bands() int { return g.bands }

// Layout returns the layout the scene follows.
func (g *Generator) Layout() *Layout { return g.layout }

// Classes returns the scene's spectral classes.
func (g *Generator) Classes() []SceneClass { return g.classes }

// planClasses gives every layout class and every background region a
// spectral class: real source classes first (in a seed-dependent order),
// then clusters of the source's unlabelled pixels, then derived classes
// (mixtures of two real classes with a smooth spectral perturbation).
func (g *Generator) planClasses(src *Source) (map[int]int, int, error) {
	labels := g.layout.Classes()
	counts := g.layout.Counts()
	bg := 0
	if counts[0] > 0 {
		bg = g.cfg.BackgroundClasses
	}
	if len(labels)+bg > 255 {
		return nil, 0, fmt.Errorf("%w: %d classes and %d background regions: at most 255 in all", ErrLayout, len(labels), bg)
	}
	rng := rand.New(rand.NewPCG(g.cfg.Seed, 0xc1a55))
	var pool []pooledClass
	for _, i := range rng.Perm(len(src.Classes)) {
		c := src.Classes[i]
		pool = append(pool, pooledClass{c, fmt.Sprintf("%s class %d (%s)", src.Name, c.Label, c.Name)})
	}
	for _, c := range src.Background {
		pool = append(pool, pooledClass{c, fmt.Sprintf("%s %s", src.Name, c.Name)})
	}
	real := len(pool)
	next := 0
	take := func() (ClassStats, string) {
		if next < real {
			p := pool[next]
			next++
			return p.st, p.origin
		}
		return derive(src, pool[:real], rng)
	}
	labelClass := map[int]int{}
	for _, v := range labels {
		st, origin := take()
		labelClass[v] = len(g.classes)
		g.classes = append(g.classes, SceneClass{Label: v, Origin: origin, Stats: st})
	}
	for r := 1; r <= bg; r++ {
		st, origin := take()
		g.classes = append(g.classes, SceneClass{Region: r, Origin: origin, Stats: st})
	}
	return labelClass, bg, nil
}

// pooledClass is a real class available to a scene, with its origin.
type pooledClass struct {
	st     ClassStats
	origin string
}

// derive makes a new class: w*a + (1-w)*b of two distinct real classes,
// times (1 + a smooth low-frequency curve over the bands of 4-10%
// amplitude), with the covariance w*Ca + (1-w)*Cb (the axes of both,
// scaled).
func derive(src *Source, pool []pooledClass, rng *rand.Rand) (ClassStats, string) {
	bands := src.Bands
	ai := rng.IntN(len(pool))
	bi := ai
	if len(pool) > 1 {
		bi = (ai + 1 + rng.IntN(len(pool)-1)) % len(pool)
	}
	a, b := pool[ai].st, pool[bi].st
	w := 0.55 + 0.3*rng.Float64()
	amp := 0.04 + 0.06*rng.Float64()
	f1, f2 := 0.5+rng.Float64(), 1.5+1.5*rng.Float64()
	p1, p2 := 2*math.Pi*rng.Float64(), 2*math.Pi*rng.Float64()
	curve := make([]float64, bands)
	for j := range curve {
		t := float64(j) / float64(max(1, bands-1))
		curve[j] = 1 + amp*(0.6*math.Cos(2*math.Pi*f1*t+p1)+0.4*math.Cos(2*math.Pi*f2*t+p2))
	}
	scale := func(ax []float64, s float64) []float64 {
		o := make([]float64, bands)
		for j := range o {
			o[j] = ax[j] * s * curve[j]
		}
		return o
	}
	// Each mode of a is blended with b's dominant mode, so the derived class
	// keeps a's multimodality.
	bm := b.Modes[0]
	for _, md := range b.Modes {
		if md.Weight > bm.Weight {
			bm = md
		}
	}
	out := ClassStats{Mean: make([]float64, bands)}
	for _, am := range a.Modes {
		m := Mode{Weight: am.Weight, Mean: make([]float64, bands), ResidualSD: make([]float64, bands)}
		for j := range m.Mean {
			m.Mean[j] = (w*am.Mean[j] + (1-w)*bm.Mean[j]) * curve[j]
			m.ResidualSD[j] = math.Sqrt(w*am.ResidualSD[j]*am.ResidualSD[j]+(1-w)*bm.ResidualSD[j]*bm.ResidualSD[j]) * curve[j]
			out.Mean[j] += m.Weight * m.Mean[j]
		}
		for _, ax := range am.Axes {
			m.Axes = append(m.Axes, scale(ax, math.Sqrt(w)))
		}
		for _, ax := range bm.Axes {
			m.Axes = append(m.Axes, scale(ax, math.Sqrt(1-w)))
		}
		out.Modes = append(out.Modes, m)
	}
	out.Name = fmt.Sprintf("derived %.2f %s + %.2f %s, perturbed %.0f%%", w, a.Name, 1-w, b.Name, 100*amp)
	return out, out.Name
}

// assignPixels maps every pixel to its spectral class; background pixels
// go to regions cut from a smooth random field at its quantiles, so regions
// are blobs of similar total area.
func (g *Generator) assignPixels(labelClass map[int]int, bgRegions int) {
	l := g.layout
	g.classOf = make([]uint8, len(l.Labels))
	var bgField field
	var cuts []float64
	if bgRegions > 0 {
		cell := math.Max(24, math.Min(float64(l.Rows), float64(l.Cols))/3)
		bgField = newField(g.cfg.Seed^0xb6f1e1d, cell, 3)
		// Quantiles of the field over a subsample of background pixels.
		var vals []float64
		step := max(1, l.Counts()[0]/20000)
		n := 0
		for i, v := range l.Labels {
			if v == 0 {
				if n%step == 0 {
					vals = append(vals, bgField.at(float64(i%l.Cols)+0.5, float64(i/l.Cols)+0.5))
				}
				n++
			}
		}
		sort.Float64s(vals)
		for k := 1; k < bgRegions; k++ {
			cuts = append(cuts, vals[k*len(vals)/bgRegions])
		}
	}
	base := len(labelClass)
	for i, v := range l.Labels {
		if v != 0 {
			g.classOf[i] = uint8(labelClass[int(v)])
			continue
		}
		f := bgField.at(float64(i%l.Cols)+0.5, float64(i/l.Cols)+0.5)
		k := sort.SearchFloat64s(cuts, f)
		g.classOf[i] = uint8(base + k)
	}
}

// prepare flattens class parameters and builds the mixing kernel.
func (g *Generator) prepare() error {
	nb := g.bands
	g.noise = make([]float64, nb)
	for _, c := range g.classes {
		if len(c.Stats.Modes) == 0 {
			return fmt.Errorf("%w: class %q has no modes", ErrSource, c.Origin)
		}
		for b, m := range c.Stats.Mean {
			g.noise[b] += math.Abs(m) / float64(len(g.classes))
		}
	}
	for b := range g.noise {
		g.noise[b] *= g.cfg.NoiseRel
	}
	for ci, c := range g.classes {
		var ms []modeParams
		var cum float64
		for _, md := range c.Stats.Modes {
			cum += md.Weight
			p := modeParams{cumWeight: cum, mean: make([]float32, nb), pureSD: make([]float32, nb),
				resid: make([]float32, nb), axes: make([]float32, len(md.Axes)*nb), nAxes: len(md.Axes)}
			for b := 0; b < nb; b++ {
				p.mean[b] = float32(md.Mean[b])
				p.pureSD[b] = float32(math.Hypot(md.ResidualSD[b], g.noise[b]))
				p.resid[b] = float32(md.ResidualSD[b])
			}
			for k, a := range md.Axes {
				for b, v := range a {
					p.axes[k*nb+b] = float32(v)
				}
			}
			g.maxAx = max(g.maxAx, p.nAxes)
			ms = append(ms, p)
		}
		ms[len(ms)-1].cumWeight = 2 // guard against rounding: the last mode takes the rest
		g.modes = append(g.modes, ms)
		g.modeF = append(g.modeF, newField(g.cfg.Seed^(0x30de+uint64(ci)*0x9e37), 14, 2))
	}
	if s := g.cfg.MixingSigmaPx; s > 0 {
		g.kRad = min(3, int(math.Ceil(2.5*s)))
		for dr := -g.kRad; dr <= g.kRad; dr++ {
			for dc := -g.kRad; dc <= g.kRad; dc++ {
				w := math.Exp(-float64(dr*dr+dc*dc) / (2 * s * s))
				if w < 1e-3 {
					continue
				}
				g.kOff = append(g.kOff, struct{ dr, dc int }{dr, dc})
				g.kW = append(g.kW, w)
			}
		}
	}
	for k := range g.zf {
		g.zf[k] = newField(g.cfg.Seed^(0x7a11+uint64(k)*0x1f3), 20+10*float64(k), 2)
	}
	g.illf = newField(g.cfg.Seed^0x111, 96, 2)
	return nil
}

// rowRNG returns row r's random stream: independent of how rows are batched.
func (g *Generator) rowRNG(r int) *rand.Rand {
	return rand.New(rand.NewPCG(g.cfg.Seed, 0x5c3e0000_00000000^uint64(r)))
}

// Abundances returns the class abundances of pixel (r, c) as parallel
// slices of class indexes (into Classes) and fractions summing to 1.
func (g *Generator) Abundances(r, c int) ([]int, []float64) {
	var cls [64]int
	var w [64]float64
	n := g.abundances(r, c, &cls, &w)
	return append([]int(nil), cls[:n]...), append([]float64(nil), w[:n]...)
}

func (g *Generator) abundances(r, c int, cls *[64]int, w *[64]float64) int {
	l := g.layout
	own := int(g.classOf[r*l.Cols+c])
	if g.kRad == 0 {
		cls[0], w[0] = own, 1
		return 1
	}
	pure := true
	for _, o := range g.kOff {
		rr, cc := r+o.dr, c+o.dc
		if rr < 0 || rr >= l.Rows || cc < 0 || cc >= l.Cols {
			continue
		}
		if int(g.classOf[rr*l.Cols+cc]) != own {
			pure = false
			break
		}
	}
	if pure {
		cls[0], w[0] = own, 1
		return 1
	}
	n := 0
	var total float64
	for i, o := range g.kOff {
		rr, cc := r+o.dr, c+o.dc
		if rr < 0 || rr >= l.Rows || cc < 0 || cc >= l.Cols {
			continue
		}
		k := int(g.classOf[rr*l.Cols+cc])
		j := 0
		for j < n && cls[j] != k {
			j++
		}
		if j == n {
			cls[n], w[n] = k, 0
			n++
		}
		w[j] += g.kW[i]
		total += g.kW[i]
	}
	for j := 0; j < n; j++ {
		w[j] /= total
	}
	return n
}

// GenerateRows fills dst (pixel-interleaved [nrows][Cols][Bands]) with rows
// row0..row0+nrows-1.
func (g *Generator) GenerateRows(row0, nrows int, dst []float32) error {
	l := g.layout
	if row0 < 0 || nrows < 0 || row0+nrows > l.Rows {
		return fmt.Errorf("%w: rows %d..%d of %d", ErrConfig, row0, row0+nrows, l.Rows)
	}
	if len(dst) != nrows*l.Cols*g.bands {
		return fmt.Errorf("%w: buffer of %d for %d rows x %d cols x %d bands", ErrConfig, len(dst), nrows, l.Cols, g.bands)
	}
	nb := g.bands
	z := make([]float32, g.maxAx)
	acc := make([]float32, nb)
	var cls [64]int
	var w [64]float64
	rho := g.cfg.SpatialFraction
	sp, ind := math.Sqrt(rho), math.Sqrt(1-rho)
	for i := 0; i < nrows; i++ {
		r := row0 + i
		rng := g.rowRNG(r)
		for c := 0; c < l.Cols; c++ {
			x, y := float64(c)+0.5, float64(r)+0.5
			for k := range z {
				if k < spatialAxes {
					z[k] = float32(sp*g.zf[k].at(x, y) + ind*rng.NormFloat64())
				} else {
					z[k] = float32(rng.NormFloat64())
				}
			}
			if nu := g.cfg.TailDOF; nu > 0 {
				// Scale mixture: z * sqrt((nu-2)/chi2_nu) is Student-t with
				// unit variance. chi2 is drawn as a Gamma(nu/2, 2).
				t := float32(math.Sqrt((nu - 2) / (2 * gammaVariate(rng, nu/2))))
				for k := range z {
					z[k] *= t
				}
			}
			ill := float32(1 + g.cfg.IlluminationRel*g.illf.at(x, y))
			out := dst[(i*l.Cols+c)*nb : (i*l.Cols+c+1)*nb]
			n := g.abundances(r, c, &cls, &w)
			if n == 1 {
				m := g.pickMode(cls[0], x, y, rng)
				copy(out, m.mean)
				for a := 0; a < m.nAxes; a++ {
					za := z[a]
					row := m.axes[a*nb : (a+1)*nb]
					for b := range out {
						out[b] += za * row[b]
					}
				}
				for b := range out {
					out[b] = out[b]*ill + m.pureSD[b]*float32(rng.NormFloat64())
				}
				continue
			}
			for b := range acc {
				acc[b] = 0
			}
			for b := range out {
				out[b] = 0
			}
			for j := 0; j < n; j++ {
				m, a32 := g.pickMode(cls[j], x, y, rng), float32(w[j])
				for b := range out {
					out[b] += a32 * m.mean[b]
					acc[b] += a32 * m.resid[b]
				}
				for a := 0; a < m.nAxes; a++ {
					za := a32 * z[a]
					row := m.axes[a*nb : (a+1)*nb]
					for b := range out {
						out[b] += za * row[b]
					}
				}
			}
			for b := range out {
				sd := math.Hypot(float64(acc[b]), g.noise[b])
				out[b] = out[b]*ill + float32(sd*rng.NormFloat64())
			}
		}
	}
	return nil
}

// pickMode chooses the mode of class k at (x, y): a smooth field plus some
// per-pixel randomness, mapped to a uniform variate by the normal CDF and
// compared with the modes' cumulative weights.
func (g *Generator) pickMode(k int, x, y float64, rng *rand.Rand) *modeParams {
	ms := g.modes[k]
	if len(ms) == 1 {
		return &ms[0]
	}
	v := 0.85*g.modeF[k].at(x, y) + 0.53*rng.NormFloat64()
	u := 0.5 * (1 + math.Erf(v/math.Sqrt2))
	for i := range ms {
		if u < ms[i].cumWeight {
			return &ms[i]
		}
	}
	return &ms[len(ms)-1]
}

// generateParallel fills dst for rows row0..row0+nrows-1 using up to
// GOMAXPROCS goroutines (rows are independent, so the result is identical
// to a single call).
func (g *Generator) generateParallel(ctx context.Context, row0, nrows int, dst []float32) error {
	workers := min(runtime.GOMAXPROCS(0), nrows)
	if workers <= 1 {
		return g.GenerateRows(row0, nrows, dst)
	}
	per := (nrows + workers - 1) / workers
	rowLen := g.layout.Cols * g.bands
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		a := w * per
		b := min(nrows, a+per)
		if a >= b {
			break
		}
		wg.Add(1)
		go func(w, a, b int) {
			defer wg.Done()
			if err := ctx.Err(); err != nil {
				errs[w] = err
				return
			}
			errs[w] = g.GenerateRows(row0+a, b-a, dst[a*rowLen:b*rowLen])
		}(w, a, b)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// gammaVariate draws Gamma(shape, 1) (Marsaglia and Tsang's method).
func gammaVariate(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gammaVariate(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
