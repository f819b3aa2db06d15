package spectral

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// grid is a band set of centres from lo to hi (inclusive) every step nm,
// each fwhm wide (NaN: no widths).
func grid(lo, hi, step, fwhm float64) BandSet {
	var b BandSet
	for c := lo; c <= hi+1e-9; c += step {
		b.CentresNM = append(b.CentresNM, c)
		if !math.IsNaN(fwhm) {
			b.FWHMNM = append(b.FWHMNM, fwhm)
		}
	}
	b.Bands = len(b.CentresNM)
	return b
}

func TestMatchSelection(t *testing.T) {
	scene := grid(400, 490, 10, 10)
	withBad := scene
	withBad.Bad = make([]bool, scene.Bands)
	withBad.Bad[2], withBad.Bad[7] = true, true
	good := withBad.Subset(withBad.Good())
	good.Bad = nil
	rounded := scene
	rounded.CentresNM = slices.Clone(scene.CentresNM)
	for i := range rounded.CentresNM {
		rounded.CentresNM[i] += 0.4 // within 10% of a 10 nm FWHM
	}
	tests := []struct {
		name         string
		model, scene BandSet
		read         []int
		shift        float64
	}{
		{"same bands", scene, scene, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0},
		{"model without the scene's bad bands", good, withBad, []int{0, 1, 3, 4, 5, 6, 8, 9}, 0},
		{"model of every 3rd band", scene.Subset([]int{0, 3, 6, 9}), scene, []int{0, 3, 6, 9}, 0},
		{"centres rounded differently", scene, rounded, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0.4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Match(tt.model, tt.scene, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Weights != nil || !slices.Equal(p.Read, tt.read) || p.Out != tt.model.Bands {
				t.Errorf("got read %v weights %v out %d, want selection %v of %d", p.Read, p.Weights != nil, p.Out, tt.read, tt.model.Bands)
			}
			if math.Abs(p.MaxShiftNM-tt.shift) > 1e-9 {
				t.Errorf("got max shift %g nm, want %g", p.MaxShiftNM, tt.shift)
			}
			if len(p.Warnings) != 0 {
				t.Errorf("got warnings %q, want none", p.Warnings)
			}
		})
	}
}

func TestMatchRefusesOtherBands(t *testing.T) {
	model := grid(400, 2500, 10, 10) // 211 bands
	shifted := grid(405, 2505, 10, 10)
	wider := grid(400, 2500, 10, 15)
	fewer := grid(400, 2500, 20, 10)
	tests := []struct {
		name      string
		scene     BandSet
		largestNM float64
		inMsg     []string
	}{
		{"same count shifted 5 nm", shifted, 5, []string{"scene 211 bands, 405-2505 nm, FWHM 10 nm", "model 211 bands, 400-2500 nm, FWHM 10 nm", "largest centre difference 5.00 nm", "model band 1 at 400 nm"}},
		{"same centres, wider bands", wider, 0, []string{"is 10 nm wide, the scene's 15 nm"}},
		{"half the bands", fewer, 10, []string{"scene 106 bands", "largest centre difference 10.0 nm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Match(model, tt.scene, Options{})
			var mis *MismatchError
			if !errors.As(err, &mis) || !errors.Is(err, ErrBandsDiffer) {
				t.Fatalf("got %v, want a *MismatchError", err)
			}
			if math.Abs(mis.LargestNM-tt.largestNM) > 1e-9 {
				t.Errorf("got largest difference %g nm, want %g", mis.LargestNM, tt.largestNM)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("message has several lines: %q", msg)
			}
			for _, s := range tt.inMsg {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
		})
	}
}

func TestMatchByCount(t *testing.T) {
	withWL := grid(400, 470, 10, 10) // 8 bands
	noWL := BandSet{Bands: 8}
	tests := []struct {
		name         string
		model, scene BandSet
		opts         Options
		read         []int
		warnings     int
		err          error
	}{
		{"scene without wavelengths, same count", withWL, noWL, Options{}, []int{0, 1, 2, 3, 4, 5, 6, 7}, 1, nil},
		{"model without wavelengths, same count", noWL, withWL, Options{}, []int{0, 1, 2, 3, 4, 5, 6, 7}, 1, nil},
		{"neither with wavelengths, same count", noWL, noWL, Options{}, []int{0, 1, 2, 3, 4, 5, 6, 7}, 0, nil},
		{"scene without wavelengths, other count", withWL, BandSet{Bands: 9}, Options{}, nil, 0, ErrBandCount},
		{"training scene's count", BandSet{Bands: 3}, noWL, Options{Source: &Source{Bands: 8, Used: []int{1, 4, 6}}}, []int{1, 4, 6}, 0, nil},
		{"neither count", BandSet{Bands: 3}, BandSet{Bands: 7}, Options{Source: &Source{Bands: 8, Used: []int{1, 4, 6}}}, nil, 0, ErrBandCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Match(tt.model, tt.scene, tt.opts)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("got %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Read, tt.read) || len(p.Warnings) != tt.warnings {
				t.Errorf("got read %v warnings %q, want %v and %d warnings", p.Read, p.Warnings, tt.read, tt.warnings)
			}
		})
	}
}

// Spectra whose Gaussian averages are known in closed form: avg(c, s) is
// the spectrum's mean under a Gaussian of centre c and standard deviation s.
var analytic = []struct {
	name string
	avg  func(c, s float64) float64
	tol  float64 // absolute, in the spectrum's units: float32 rounding (measured errors 1e-7 to 1.2e-6)
}{
	{"quadratic", func(c, s float64) float64 { // 0.2 + 4e-4 l - 3e-7 l^2
		return 0.2 + 4e-4*c - 3e-7*(c*c+s*s)
	}, 1e-6},
	{"exponential", func(c, s float64) float64 { // exp(k l), k = 2e-3
		k := 2e-3
		return math.Exp(k*c + k*k*s*s/2)
	}, 1e-5},
	{"Gaussian absorption line", func(c, s float64) float64 { // 1 - 0.6 exp(-(l-700)^2 / (2 6^2))
		tau := 6.0
		v := tau*tau + s*s
		return 1 - 0.6*tau/math.Sqrt(v)*math.Exp(-(c-700)*(c-700)/(2*v))
	}, 1e-5},
}

// sceneValues are what a scene's bands measure of a spectrum.
func sceneValues(b BandSet, avg func(c, s float64) float64) []float32 {
	x := make([]float32, b.Bands)
	for j, c := range b.CentresNM {
		f, _ := b.FWHM(j)
		x[j] = float32(avg(c, f/FWHMPerSigma))
	}
	return x
}

// apply runs plan p on a whole-scene pixel x.
func apply(p Plan, x []float32) []float32 {
	in := make([]float32, len(p.Read))
	for k, j := range p.Read {
		in[k] = x[j]
	}
	out := make([]float32, p.Out)
	p.Apply(in, out)
	return out
}

func TestResampleAnalyticSpectra(t *testing.T) {
	fine := grid(400, 1000, 1, 2) // a fine scene: 1 nm bands, FWHM 2 nm
	// truth is the scene's bands as they measure; scene what it declares.
	tests := []struct {
		name                string
		model, scene, truth BandSet
	}{
		{"10 nm model from a 1 nm scene", grid(450, 950, 12.5, 10), fine, fine},
		{"30 nm model from a 1 nm scene", grid(500, 900, 50, 30), fine, fine},
		{"5 nm model from a 2 nm scene declaring no widths", grid(451, 951, 25, 5), grid(400, 1000, 2, math.NaN()), grid(400, 1000, 2, 2)},
	}
	for _, tt := range tests {
		p, err := Match(tt.model, tt.scene, Options{Resample: true})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !p.Resampled() || p.Out != tt.model.Bands {
			t.Fatalf("%s: got a plan of %d bands (resampled %v), want %d resampled", tt.name, p.Out, p.Resampled(), tt.model.Bands)
		}
		for _, sp := range analytic {
			t.Run(tt.name+"/"+sp.name, func(t *testing.T) {
				got := apply(p, sceneValues(tt.truth, sp.avg))
				for k, c := range tt.model.CentresNM {
					f, _ := tt.model.FWHM(k)
					want := sp.avg(c, f/FWHMPerSigma)
					if d := math.Abs(float64(got[k]) - want); d > sp.tol {
						t.Errorf("model band %d (%g nm, FWHM %g): got %.7f, want %.7f (off by %.2g)", k+1, c, f, got[k], want, d)
					}
				}
			})
		}
	}
}

func TestResampleNarrowModelInterpolates(t *testing.T) {
	scene := grid(400, 1000, 10, 10)
	model := grid(403, 993, 7.3, 3) // narrower than the scene's spacing, centres between its bands
	p, err := Match(model, scene, Options{Resample: true})
	if err != nil {
		t.Fatal(err)
	}
	linear := func(c, s float64) float64 { return 0.05 + 3e-4*c } // any Gaussian average of a line is the line
	got := apply(p, sceneValues(scene, linear))
	for k, c := range model.CentresNM {
		if d := math.Abs(float64(got[k]) - linear(c, 0)); d > 1e-6 {
			t.Errorf("model band %d (%g nm): got %g, want %g", k+1, c, got[k], linear(c, 0))
		}
	}
}

func TestResampleWeights(t *testing.T) {
	scene := grid(380, 2500, 5, 6)
	scene.Bad = make([]bool, scene.Bands)
	for i, c := range scene.CentresNM {
		scene.Bad[i] = (c > 1340 && c < 1450) || (c > 1800 && c < 1960)
	}
	model := grid(400, 1330, 10, 10)
	model = BandSet{Bands: model.Bands + 3, CentresNM: append(model.CentresNM, 1500, 2000, 2400), FWHMNM: append(model.FWHMNM, 10, 10, 10)}
	p, err := Match(model, scene, Options{Resample: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range p.Read {
		if scene.Bad[j] {
			t.Errorf("the plan reads bad band %d (%g nm)", j+1, scene.CentresNM[j])
		}
	}
	n := len(p.Read)
	for k := range p.Out {
		var s float64
		for _, w := range p.Weights[k*n : (k+1)*n] {
			if w < 0 {
				t.Errorf("model band %d has a negative weight %g", k+1, w)
			}
			s += float64(w)
		}
		if math.Abs(s-1) > 1e-5 {
			t.Errorf("model band %d: weights sum to %g, want 1", k+1, s)
		}
	}
}

func TestResampleRefusesUncovered(t *testing.T) {
	vnir := grid(400, 1000, 5, 6)
	withGap := grid(400, 2500, 10, 10)
	withGap.Bad = make([]bool, withGap.Bands)
	for i, c := range withGap.CentresNM {
		withGap.Bad[i] = c > 1340 && c < 1450
	}
	tests := []struct {
		name         string
		model, scene BandSet
		band         int
		inMsg        string
	}{
		{"SWIR model on a VNIR scene", grid(900, 2400, 100, 10), vnir, 2, "model band 3 (1100 nm) lies outside the scene's good bands (400-1000 nm); it is not extrapolated"},
		{"below the range", grid(350, 500, 50, 10), vnir, 0, "model band 1 (350 nm) lies outside"},
		{"in a water-vapour gap", BandSet{Bands: 2, CentresNM: []float64{1200, 1400}, FWHMNM: []float64{10, 10}}, withGap, 1, "falls in the scene's gap between good bands at 1340 and 1450 nm"},
		{"no width, no band near", BandSet{Bands: 1, CentresNM: []float64{702.5}}, grid(400, 1000, 10, 3), 0, "has no FWHM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Match(tt.model, tt.scene, Options{Resample: true})
			var ce *CoverageError
			if !errors.As(err, &ce) || !errors.Is(err, ErrNotCovered) {
				t.Fatalf("got %v, want a *CoverageError", err)
			}
			if ce.ModelBand != tt.band || !strings.Contains(err.Error(), tt.inMsg) {
				t.Errorf("got %q (band %d), want band %d and %q", err, ce.ModelBand, tt.band, tt.inMsg)
			}
		})
	}
}

func TestResampleNoWidthTakesNearest(t *testing.T) {
	scene := grid(400, 1000, 10, 10)
	model := BandSet{Bands: 2, CentresNM: []float64{501, 748}}
	p, err := Resample(model, scene)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, scene.Bands)
	for j := range x {
		x[j] = float32(j)
	}
	if got := apply(p, x); got[0] != 10 || got[1] != 35 {
		t.Errorf("got %v, want the nearest bands' values [10 35]", got)
	}
}

func TestPlanGain(t *testing.T) {
	p := Plan{Read: []int{0, 2}, Out: 2, Gain: 10000}
	out := make([]float32, 2)
	p.Apply([]float32{0.25, 0.5}, out)
	if out[0] != 2500 || out[1] != 5000 {
		t.Errorf("got %v, want [2500 5000]", out)
	}
	if p.Identity(2) {
		t.Error("a plan with a gain counts as the identity")
	}
}

func TestConvertRadiometry(t *testing.T) {
	refl1 := Radiometry{Quantity: QuantityReflectance, Scale: 1}
	refl1e4 := Radiometry{Quantity: QuantityReflectance, Scale: 10000}
	rad := Radiometry{Quantity: QuantityRadiance, Units: "uW cm-2 sr-1 nm-1"}
	tests := []struct {
		name         string
		model, scene Radiometry
		gain         float64
		err          bool
		inMsg        string
	}{
		{"same", refl1, refl1, 1, false, ""},
		{"unknown scene", refl1, Radiometry{}, 1, false, ""},
		{"unknown model", Radiometry{}, rad, 1, false, ""},
		{"0-1 scene, 0-10000 model", refl1e4, refl1, 10000, false, "reflectance 0-1 is converted to the model's reflectance 0-10000 (x10000)"},
		{"0-10000 scene, 0-1 model", refl1, refl1e4, 1e-4, false, "x0.0001"},
		{"radiance scene, reflectance model", refl1, rad, 0, true, "the scene holds radiance (uW cm-2 sr-1 nm-1), the model was trained on reflectance 0-1"},
		{"radiance in other units", rad, Radiometry{Quantity: QuantityRadiance, Units: "W m-2 sr-1 um-1"}, 0, true, "W m-2 sr-1 um-1"},
		{"radiance units spelled differently", rad, Radiometry{Quantity: QuantityRadiance, Units: "uW cm^-2 sr^-1 nm^-1"}, 1, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, note, err := ConvertRadiometry(tt.model, tt.scene)
			if tt.err {
				if !errors.Is(err, ErrRadiometry) || !strings.Contains(err.Error(), tt.inMsg) {
					t.Fatalf("got %v, want ErrRadiometry with %q", err, tt.inMsg)
				}
				return
			}
			if err != nil || math.Abs(g-tt.gain) > 1e-12 || !strings.Contains(note, tt.inMsg) {
				t.Errorf("got gain %g, note %q, err %v; want %g, %q", g, note, err, tt.gain, tt.inMsg)
			}
		})
	}
}

// FuzzMatch checks Match's invariants on arbitrary band sets: no panic,
// and any plan reads existing good bands and makes the model's count, each
// resampled band a convex combination.
func FuzzMatch(f *testing.F) {
	f.Add(400.0, 10.0, 10.0, uint8(20), 405.0, 7.0, 8.0, uint8(40), uint8(3), true)
	f.Add(400.0, 10.0, 0.0, uint8(5), 400.0, 10.0, 0.0, uint8(5), uint8(0), false)
	f.Fuzz(func(t *testing.T, m0, mStep, mFWHM float64, mN uint8, s0, sStep, sFWHM float64, sN uint8, badEvery uint8, resample bool) {
		mk := func(c0, step, fwhm float64, n uint8) BandSet {
			b := BandSet{Bands: int(n)}
			for i := range b.Bands {
				b.CentresNM = append(b.CentresNM, c0+float64(i)*step)
				b.FWHMNM = append(b.FWHMNM, fwhm)
			}
			return b
		}
		model, scene := mk(m0, mStep, mFWHM, mN), mk(s0, sStep, sFWHM, sN)
		if badEvery > 0 {
			scene.Bad = make([]bool, scene.Bands)
			for i := range scene.Bad {
				scene.Bad[i] = i%int(badEvery) == 0
			}
		}
		p, err := Match(model, scene, Options{Resample: resample})
		if err != nil {
			return
		}
		if p.Out != model.Bands {
			t.Fatalf("plan makes %d bands, the model has %d", p.Out, model.Bands)
		}
		for _, j := range p.Read {
			if j < 0 || j >= scene.Bands {
				t.Fatalf("plan reads band %d of %d", j, scene.Bands)
			}
		}
		if p.Weights == nil {
			if len(p.Read) != p.Out {
				t.Fatalf("selection of %d bands for %d", len(p.Read), p.Out)
			}
			return
		}
		n := len(p.Read)
		for k := range p.Out {
			s := 0.0
			for _, w := range p.Weights[k*n : (k+1)*n] {
				if w < 0 || math.IsNaN(float64(w)) {
					t.Fatalf("weight %g", w)
				}
				s += float64(w)
			}
			if math.Abs(s-1) > 1e-4 {
				t.Fatalf("model band %d weights sum to %g", k, s)
			}
		}
	})
}

// TestApplierMatchesPlan: the compiled plan gives the dense product's values.
func TestApplierMatchesPlan(t *testing.T) {
	scene := grid(400, 2500, 5, 6)
	model := grid(410, 2400, 10, 10)
	p, err := Resample(model, scene)
	if err != nil {
		t.Fatal(err)
	}
	p.Gain = 3
	in := make([]float32, len(p.Read))
	for j := range in {
		in[j] = float32(math.Sin(float64(j) * 0.37))
	}
	dense, sparse := make([]float32, p.Out), make([]float32, p.Out)
	p.Apply(in, dense)
	p.Compile().Apply(in, sparse)
	for k := range dense {
		if math.Abs(float64(dense[k]-sparse[k])) > 1e-5 {
			t.Fatalf("model band %d: compiled %g, dense %g", k+1, sparse[k], dense[k])
		}
	}
}

// BenchmarkApplyResampling compares the dense product with the compiled
// plan: 199 model bands (10 nm) from 421 scene bands (5 nm).
func BenchmarkApplyResampling(b *testing.B) {
	p, err := Resample(grid(410, 2400, 10, 10), grid(400, 2500, 5, 6))
	if err != nil {
		b.Fatal(err)
	}
	in, out := make([]float32, len(p.Read)), make([]float32, p.Out)
	for j := range in {
		in[j] = float32(j)
	}
	b.Run("dense", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			p.Apply(in, out)
		}
	})
	c := p.Compile()
	b.Run("compiled", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			c.Apply(in, out)
		}
	})
}

// TestConvertRadiometryRefusesScales: a scale outside [MinScale, MaxScale]
// on either side (a scene's metadata, a model file) is refused, not turned
// into a gain that overflows float32 (reflectance:1e-300 gave a
// gain of 1e304).
func TestConvertRadiometryRefusesScales(t *testing.T) {
	good := Radiometry{Quantity: QuantityReflectance, Scale: 10000}
	for _, sc := range []float64{1e-300, math.Inf(1), math.NaN(), 1e300, -1} {
		bad := Radiometry{Quantity: QuantityReflectance, Scale: sc}
		for _, pair := range [][2]Radiometry{{good, bad}, {bad, good}} {
			if _, _, err := ConvertRadiometry(pair[0], pair[1]); !errors.Is(err, ErrScale) {
				t.Errorf("model %v, scene %v: got %v, want ErrScale", pair[0], pair[1], err)
			}
		}
	}
}
