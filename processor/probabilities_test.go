package processor

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
)

// probFile is a probabilities file read back through GDAL.
type probFile struct {
	rows, cols, bands int
	names             []string
	data              []float32 // pixel-interleaved as stored (no-data pixels read as 0)
	valid             []bool
}

func readProbabilities(t *testing.T, product string) probFile {
	t.Helper()
	s, err := geo.Open(geo.ProbabilitiesPath(product))
	if err != nil {
		t.Fatalf("open probabilities: %v", err)
	}
	defer s.Close()
	info := s.Info()
	b, err := s.ReadWindow(context.Background(), geo.Window{Cols: info.Cols, Rows: info.Rows})
	if err != nil {
		t.Fatal(err)
	}
	return probFile{rows: info.Rows, cols: info.Cols, bands: info.Bands, names: info.BandNames, data: b.Data, valid: b.Valid}
}

// compareProbabilities checks that the probabilities beside product got
// equal those beside product want: every percent within 1 (the blend of
// identical tile values may round the other way) and the classes of a
// top-k file equal wherever the ranks' probabilities differ by more than
// that.
func compareProbabilities(t *testing.T, what, want, got string) {
	t.Helper()
	w, g := readProbabilities(t, want), readProbabilities(t, got)
	if w.bands != g.bands || w.rows != g.rows || w.cols != g.cols {
		t.Fatalf("%s: got %dx%dx%d probabilities, want %dx%dx%d", what, g.cols, g.rows, g.bands, w.cols, w.rows, w.bands)
	}
	topK := len(w.names) > 0 && w.names[0] == "class_1"
	nb := w.bands
	var pctDiff, clsDiff, worst int
	for i, v := range w.valid {
		if v != g.valid[i] {
			t.Fatalf("%s: pixel %d valid %v, want %v", what, i, g.valid[i], v)
		}
		if !v {
			continue
		}
		for b := 0; b < nb; b++ {
			a, c := w.data[i*nb+b], g.data[i*nb+b]
			if topK && b%2 == 0 {
				// A class: ranks of (nearly) equal probability may swap.
				if a != c && math.Abs(float64(w.data[i*nb+b+1]-w.data[i*nb+min(b+3, nb-1)])) > 1 {
					clsDiff++
				}
				continue
			}
			d := int(math.Abs(float64(a - c)))
			worst = max(worst, d)
			if d > 1 {
				pctDiff++
			}
		}
	}
	t.Logf("%s: largest probability difference %d percent", what, worst)
	if pctDiff > 0 || clsDiff > 0 {
		t.Errorf("%s: %d probabilities differ by more than 1 percent and %d top-k classes differ from the whole-image run, want 0", what, pctDiff, clsDiff)
	}
}

// TestClassifyProbabilities classifies the small fixture scene with each
// probabilities layout and checks them against the product: the
// recovered probabilities' argmax (top-1) is the class band, a pixel's
// percents add up to 100 within rounding, no-data matches, and the
// network's probabilities are not the recovered ones.
func TestClassifyProbabilities(t *testing.T) {
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "scene.tif"), 3)
	k := len(m.Classes())
	run := func(o Options, name string) (product, probFile) {
		c, err := NewClassifier(m, o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		out := filepath.Join(dir, name)
		if _, err := c.Run(context.Background(), Request{Scene: scene, Out: out}); err != nil {
			t.Fatal(err)
		}
		return readProduct(t, out), readProbabilities(t, out)
	}
	prod, all := run(Options{Probabilities: ProbabilitiesRecovered}, "all.tif")
	_, top := run(Options{Probabilities: ProbabilitiesRecovered, TopK: 2}, "top.tif")
	_, net := run(Options{Probabilities: ProbabilitiesNetwork}, "net.tif")
	if all.bands != k || top.bands != 4 || net.bands != k {
		t.Fatalf("got %d, %d, %d bands, want %d, 4, %d", all.bands, top.bands, net.bands, k, k)
	}
	for j, c := range m.Classes() {
		if all.names[j] != c.Name {
			t.Errorf("band %d: got name %q, want the class name %q", j+1, all.names[j], c.Name)
		}
	}
	var differ int
	for i, cls := range prod.class {
		if (cls != 0) != all.valid[i] || all.valid[i] != top.valid[i] {
			t.Fatalf("pixel %d: class %d but probabilities valid %v, top-k valid %v", i, cls, all.valid[i], top.valid[i])
		}
		if cls == 0 {
			continue
		}
		px := all.data[i*k : (i+1)*k]
		var sum float32
		best := 0
		for j, p := range px {
			sum += p
			if p > px[best] {
				best = j
			}
			if net.data[i*k+j] != p {
				differ++
			}
		}
		if math.Abs(float64(sum-100)) > float64(k)/2 {
			t.Fatalf("pixel %d: percents %v add up to %v, want 100 within rounding", i, px, sum)
		}
		if int(top.data[i*4]) != cls {
			t.Fatalf("pixel %d: top-1 class %v, the class band says %d", i, top.data[i*4], cls)
		}
		if top.data[i*4+1] != px[best] || top.data[i*4+1] < top.data[i*4+3] {
			t.Fatalf("pixel %d: top-k %v, per-class %v: want the largest first", i, top.data[i*4:i*4+4], px)
		}
	}
	if differ == 0 {
		t.Error("network and recovered probabilities are identical everywhere: the stage is not applied")
	}
}

func TestProbabilityOptionsErrors(t *testing.T) {
	m := fixture.LoadModel(t)
	for _, o := range []Options{
		{TopK: 2},
		{Probabilities: "smoothed"},
		{Probabilities: ProbabilitiesRecovered, TopK: 4},
		{Probabilities: ProbabilitiesNetwork, TopK: -1},
	} {
		if _, err := NewClassifier(m, o); !errors.Is(err, ErrProbabilities) {
			t.Errorf("%+v: got %v, want ErrProbabilities", o, err)
		}
	}
}

// TestPlanCountsProbabilities: the planner's estimate grows by the
// probabilities output's buffers and block cache, more with more bands.
func TestPlanCountsProbabilities(t *testing.T) {
	m := fixture.LoadModel(t)
	info := geo.Info{Rows: 4000, Cols: 6000, Bands: m.Bands(), SampleBytes: 4, BlockCols: 256, BlockRows: 256}
	plain := Options{TileSize: 512, MaxMemoryBytes: 64 << 30}
	plan, _, err := PlanSceneInfo(info, m, plain)
	if err != nil {
		t.Fatal(err)
	}
	base := PlannedBytes(plan, info, m, plain)
	prev := base
	for _, o := range []Options{
		{Probabilities: ProbabilitiesRecovered, TopK: 1},
		{Probabilities: ProbabilitiesRecovered},
	} {
		o.TileSize, o.MaxMemoryBytes = plain.TileSize, plain.MaxMemoryBytes
		got := PlannedBytes(plan, info, m, o)
		nb := probabilityBands(o, len(m.Classes()))
		heap, cache := probabilityMemoryBytes(info.Cols, nb, 1)
		want := base + cache + int64(math.Ceil(Calibrated.Headroom*float64(heap)))
		if d := got - want; d < -1 || d > 1 {
			t.Errorf("%d probability bands: planned %d bytes, want %d (base %d + cache %d + heap %d)", nb, got, want, base, cache, heap)
		}
		if got <= prev {
			t.Errorf("%d probability bands: planned %d bytes, not more than %d", nb, got, prev)
		}
		prev = got
	}
}

// Tiled probabilities of the real network follow the product's agreement
// (TestTiledAgreesWithWholeImage): the network's context differs at tile
// edges, so they are close, not equal. Measured on the fixture's five
// tilings: mean absolute differences of 0.047-0.080 percent (single pixels
// up to 16); the bound is three times the largest.
const maxMeanProbDiff = 0.25

// agreeProbabilities checks the mean absolute difference of the
// probabilities beside got from those beside want, over valid pixels.
func agreeProbabilities(t *testing.T, want, got string) {
	t.Helper()
	w, g := readProbabilities(t, want), readProbabilities(t, got)
	if w.bands != g.bands || len(w.data) != len(g.data) {
		t.Fatalf("got %d bands, want %d", g.bands, w.bands)
	}
	var sum float64
	var n, worst int
	for i, v := range w.valid {
		if v != g.valid[i] {
			t.Fatalf("pixel %d: valid %v, want %v", i, g.valid[i], v)
		}
		if !v {
			continue
		}
		for b := 0; b < w.bands; b++ {
			d := math.Abs(float64(w.data[i*w.bands+b] - g.data[i*w.bands+b]))
			sum += d
			worst = max(worst, int(d))
			n++
		}
	}
	mean := sum / float64(max(n, 1))
	t.Logf("probabilities: mean absolute difference %.3f percent, largest %d", mean, worst)
	if mean > maxMeanProbDiff {
		t.Errorf("probabilities: mean absolute difference from the whole-image run %.3f percent, want <= %.1f", mean, maxMeanProbDiff)
	}
}
