package synth

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/shareddata"
)

// fakeSource estimates a source from a made-up labelled image: three
// classes with smooth, distinct spectra and correlated variation, plus an
// unlabelled group, so that tests run without the shared data.
func fakeSource(t testing.TB, bands int) *Source {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 1200
	px := make([]float32, n*bands)
	lab := make([]uint8, n)
	for i := 0; i < n; i++ {
		c := i % 4 // 0 = unlabelled
		lab[i] = uint8(c)
		a, b := rng.NormFloat64(), rng.NormFloat64()
		for j := 0; j < bands; j++ {
			t := float64(j) / float64(bands)
			base := 1000 + 800*float64(c)*math.Sin(math.Pi*t*float64(c+1))
			px[i*bands+j] = float32(base + 60*a*t + 40*b*(1-t) + 10*rng.NormFloat64())
		}
	}
	src, err := Estimate("fake", px, lab, bands, EstimateOptions{Rank: 8, BackgroundClusters: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func dataDir(t testing.TB) string {
	t.Helper()
	d, err := FindDataDir(".")
	if err != nil {
		t.Skipf("shared data not available (%v): skipping test on real data", err)
	}
	return d
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in         string
		rows, cols int
		ok         bool
	}{
		{"610x340", 610, 340, true}, {"20000X20000", 20000, 20000, true},
		{"610", 0, 0, false}, {"0x5", 0, 0, false}, {"ax3", 0, 0, false}, {"-1x4", 0, 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, c, err := ParseSize(tc.in)
			if (err == nil) != tc.ok || r != tc.rows || c != tc.cols {
				t.Errorf("ParseSize(%q) = %d, %d, %v; want %d, %d, ok=%v", tc.in, r, c, err, tc.rows, tc.cols, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrLayout) {
				t.Errorf("error %v is not ErrLayout", err)
			}
		})
	}
}

func TestProceduralLayout(t *testing.T) {
	l, err := Procedural(400, 600, 3)
	if err != nil {
		t.Fatal(err)
	}
	if l.Rows != 400 || l.Cols != 600 || len(l.Labels) != 400*600 {
		t.Fatalf("got %dx%d with %d labels, want 400x600", l.Rows, l.Cols, len(l.Labels))
	}
	counts := l.Counts()
	if counts[0] != 0 {
		t.Errorf("got %d unlabelled pixels, want 0", counts[0])
	}
	for _, c := range []int{ClassMeadow, ClassRoad} {
		if counts[c] == 0 {
			t.Errorf("class %d (%s) is absent", c, ProceduralNames[c])
		}
	}
	if n := len(l.Classes()); n < 6 {
		t.Errorf("got %d classes, want at least 6", n)
	}
	// Boundaries are not grid-aligned: along straight pixel-aligned
	// boundaries the same column would change label row after row. Count the
	// label changes along rows whose column also has a change in the row
	// below: for rotated polygons most do not.
	same, total := 0, 0
	for r := 0; r+1 < l.Rows; r++ {
		for c := 0; c+1 < l.Cols; c++ {
			i := r*l.Cols + c
			if l.Labels[i] != l.Labels[i+1] {
				total++
				if l.Labels[i+l.Cols] != l.Labels[i+l.Cols+1] && l.Labels[i] == l.Labels[i+l.Cols] {
					same++
				}
			}
		}
	}
	if total == 0 || float64(same)/float64(total) > 0.8 {
		t.Errorf("got %d of %d boundary pixels continuing straight down, want well under 80%% (not grid-aligned)", same, total)
	}
	l2, _ := Procedural(400, 600, 3)
	if !bytes.Equal(l.Labels, l2.Labels) {
		t.Error("same seed gave different layouts")
	}
	l3, _ := Procedural(400, 600, 4)
	if bytes.Equal(l.Labels, l3.Labels) {
		t.Error("different seeds gave the same layout")
	}
	if _, err := Procedural(0, 10, 1); !errors.Is(err, ErrLayout) {
		t.Errorf("Procedural(0, 10) error %v, want ErrLayout", err)
	}
}

func TestGenerateDeterministicAcrossStrips(t *testing.T) {
	l, _ := Procedural(64, 80, 1)
	cfg := DefaultConfig()
	cfg.Seed, cfg.Bands = 42, 24
	g, err := New(l, fakeSource(t, 30), cfg)
	if err != nil {
		t.Fatal(err)
	}
	whole := make([]float32, 64*80*24)
	if err := g.GenerateRows(0, 64, whole); err != nil {
		t.Fatal(err)
	}
	part := make([]float32, 64*80*24)
	for _, s := range [][2]int{{0, 7}, {7, 30}, {37, 27}} {
		if err := g.GenerateRows(s[0], s[1], part[s[0]*80*24:(s[0]+s[1])*80*24]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range whole {
		if whole[i] != part[i] {
			t.Fatalf("sample %d: got %g in strips, %g whole", i, part[i], whole[i])
		}
	}
	par := make([]float32, len(whole))
	if err := g.generateParallel(context.Background(), 0, 64, par); err != nil {
		t.Fatal(err)
	}
	for i := range whole {
		if whole[i] != par[i] {
			t.Fatalf("sample %d: got %g in parallel, %g serial", i, par[i], whole[i])
		}
	}
	cfg.Seed = 43
	g2, _ := New(l, fakeSource(t, 30), cfg)
	other := make([]float32, len(whole))
	g2.GenerateRows(0, 64, other)
	diff := 0
	for i := range whole {
		if whole[i] != other[i] {
			diff++
		}
	}
	if diff < len(whole)/2 {
		t.Errorf("seed 43 differs from seed 42 in %d of %d samples, want most", diff, len(whole))
	}
}

func TestWriteSceneSameBytes(t *testing.T) {
	dir := t.TempDir()
	l, _ := Procedural(90, 70, 5)
	src := fakeSource(t, 20)
	write := func(name string) []byte {
		cfg := DefaultConfig()
		cfg.Seed = 9
		g, err := New(l, src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := WriteScene(context.Background(), g, WriteOptions{Path: p, LabelsPath: p + ".labels.tif",
			DataType: geo.Int16, GeoRef: DefaultGeoRef(2), Metadata: g.Describe(src.Name)}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := write("a.tif"), write("b.tif")
	if !bytes.Equal(a, b) {
		t.Fatalf("two writes with seed 9 differ (%d and %d bytes)", len(a), len(b))
	}
	s, err := geo.Open(filepath.Join(dir, "a.tif"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	if in.Rows != 90 || in.Cols != 70 || in.Bands != 20 || in.DataType != "Int16" || in.EPSG != 32632 {
		t.Errorf("got %dx%dx%d %s EPSG:%d, want 90x70x20 Int16 EPSG:32632", in.Rows, in.Cols, in.Bands, in.DataType, in.EPSG)
	}
	ls, err := geo.Open(filepath.Join(dir, "a.tif.labels.tif"))
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	blk, err := ls.ReadWindow(context.Background(), geo.Window{Cols: 70, Rows: 90})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range blk.Data {
		if uint8(v) != l.Labels[i] {
			t.Fatalf("label pixel %d: got %g, want %d", i, v, l.Labels[i])
		}
	}
}

// classPixels generates the whole scene in memory and groups pure interior
// pixels (no other class within 3 pixels) by spectral class.
func classPixels(t *testing.T, g *Generator) (data []float32, pure map[int][]int) {
	l := g.Layout()
	data = make([]float32, l.Rows*l.Cols*g.Bands())
	if err := g.GenerateRows(0, l.Rows, data); err != nil {
		t.Fatal(err)
	}
	pure = map[int][]int{}
	for r := 3; r < l.Rows-3; r++ {
		for c := 3; c < l.Cols-3; c++ {
			k := g.classOf[r*l.Cols+c]
			ok := true
			for dr := -3; dr <= 3 && ok; dr++ {
				for dc := -3; dc <= 3; dc++ {
					if g.classOf[(r+dr)*l.Cols+c+dc] != k {
						ok = false
						break
					}
				}
			}
			if ok {
				pure[int(k)] = append(pure[int(k)], r*l.Cols+c)
			}
		}
	}
	return data, pure
}

func TestSpectraStatistics(t *testing.T) {
	ctx := context.Background()
	var src *Source
	if d, err := FindDataDir("."); err == nil {
		if src, err = LoadSource(ctx, "SalinasA", d, EstimateOptions{Seed: 1}); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("shared data not available (%v): using a made-up source", err)
		src = fakeSource(t, 60)
	}
	l, _ := Procedural(300, 300, 2)
	cfg := DefaultConfig()
	cfg.Seed, cfg.Bands = 11, 103
	g, err := New(l, src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := src.Resample(103)
	data, pure := classPixels(t, g)
	nb := g.Bands()
	for k, sc := range g.Classes() {
		idx := pure[k]
		if len(idx) < 200 {
			continue
		}
		t.Run(sc.Origin, func(t *testing.T) {
			mean := make([]float64, nb)
			sd := make([]float64, nb)
			for _, i := range idx {
				for b := 0; b < nb; b++ {
					mean[b] += float64(data[i*nb+b])
				}
			}
			for b := range mean {
				mean[b] /= float64(len(idx))
			}
			for _, i := range idx {
				for b := 0; b < nb; b++ {
					d := float64(data[i*nb+b]) - mean[b]
					sd[b] += d * d
				}
			}
			// The class's expected mean: the resampled source class for real
			// classes (looked up by origin), its own mean for derived ones.
			want := sc.Stats.Mean
			for _, c := range append(append([]ClassStats{}, rs.Classes...), rs.Background...) {
				if c.Name == sc.Stats.Name && c.Label == sc.Stats.Label && c.Count == sc.Stats.Count {
					want = c.Mean
				}
			}
			var num, den float64
			for b := 0; b < nb; b++ {
				num += (mean[b] - want[b]) * (mean[b] - want[b])
				den += want[b] * want[b]
				if sd[b] == 0 {
					t.Errorf("band %d: within-class variance 0 over %d pixels", b, len(idx))
				}
			}
			// Tolerance: the illumination field and mode patches over a
			// few hundred pixels move the sample mean by a few percent.
			if rel := math.Sqrt(num / den); rel > 0.06 {
				t.Errorf("class mean differs from source mean by %.3f (relative L2), want < 0.06", rel)
			}
			// No constant spectrum: no two pure pixels of the class are equal.
			first := data[idx[0]*nb : (idx[0]+1)*nb]
			for _, i := range idx[1:] {
				if bytes.Equal(f32bytes(first), f32bytes(data[i*nb:(i+1)*nb])) {
					t.Fatalf("pixels %d and %d have the same spectrum", idx[0], i)
				}
			}
		})
	}
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		u := math.Float32bits(x)
		b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return b
}

func TestMixingNearBoundaries(t *testing.T) {
	// Two classes split by a vertical boundary at column 20.
	const rows, cols = 40, 40
	lab := make([]uint8, rows*cols)
	for i := range lab {
		lab[i] = 1
		if i%cols >= 20 {
			lab[i] = 2
		}
	}
	l, _ := NewLayout(rows, cols, lab)
	src := fakeSource(t, 16)
	for _, tc := range []struct {
		sigma   float64
		mixedAt []int // columns whose pixels must be mixed
		pureAt  []int
	}{
		{0.7, []int{19, 20}, []int{0, 10, 15, 25, 39}},
		{0, nil, []int{0, 19, 20, 39}},
	} {
		cfg := DefaultConfig()
		cfg.MixingSigmaPx = tc.sigma
		g, err := New(l, src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tc.mixedAt {
			cls, w := g.Abundances(10, c)
			if len(cls) != 2 || w[0] < 0.05 || w[1] < 0.05 {
				t.Errorf("sigma %g column %d: got classes %v abundances %v, want two classes mixed", tc.sigma, c, cls, w)
			}
		}
		for _, c := range tc.pureAt {
			if cls, _ := g.Abundances(10, c); len(cls) != 1 {
				t.Errorf("sigma %g column %d: got classes %v, want one", tc.sigma, c, cls)
			}
		}
	}
	// The mixed spectra lie between the two class means: project pixels of
	// columns 19 and 20 on the line between the means.
	cfg := DefaultConfig()
	cfg.NoiseRel = 0
	g, _ := New(l, src, cfg)
	data := make([]float32, rows*cols*g.Bands())
	g.GenerateRows(0, rows, data)
	m1, m2 := g.Classes()[0].Stats.Mean, g.Classes()[1].Stats.Mean
	proj := func(c int) float64 {
		var s float64
		for r := 0; r < rows; r++ {
			var num, den float64
			for b := range m1 {
				d := m2[b] - m1[b]
				num += (float64(data[(r*cols+c)*len(m1)+b]) - m1[b]) * d
				den += d * d
			}
			s += num / den
		}
		return s / rows
	}
	p5, p19, p20, p35 := proj(5), proj(19), proj(20), proj(35)
	if !(p5 < p19 && p19 < p20 && p20 < p35) || p19 < 0.05 || p20 > 0.95 {
		t.Errorf("mean position between class means: col 5 %.2f, 19 %.2f, 20 %.2f, 35 %.2f; want rising, with 19 and 20 strictly inside", p5, p19, p20, p35)
	}
}

func TestBackgroundRegions(t *testing.T) {
	const rows, cols = 120, 120
	lab := make([]uint8, rows*cols)
	for r := 40; r < 80; r++ {
		for c := 40; c < 80; c++ {
			lab[r*cols+c] = 5
		}
	}
	l, _ := NewLayout(rows, cols, lab)
	cfg := DefaultConfig()
	cfg.BackgroundClasses = 3
	g, err := New(l, fakeSource(t, 12), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.Classes()); n != 4 {
		t.Fatalf("got %d spectral classes, want 1 labelled + 3 background", n)
	}
	var seen [4]int
	for i, k := range g.classOf {
		if lab[i] == 5 && k != 0 {
			t.Fatalf("labelled pixel %d in class %d, want 0", i, k)
		}
		seen[k]++
	}
	for k := 1; k < 4; k++ {
		if seen[k] < 1000 {
			t.Errorf("background region %d has %d pixels, want a sizable share of the 12800", k, seen[k])
		}
	}
}

func TestLayoutFromRealGroundTruth(t *testing.T) {
	d := dataDir(t)
	l, ref, err := LoadLayout(context.Background(), filepath.Join(d, "PaviaU", "paviaU_gt.mat"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if ref != nil {
		t.Errorf("a .mat layout has no georeference, got %+v", ref)
	}
	if l.Rows != 610 || l.Cols != 340 {
		t.Fatalf("got %dx%d, want 610x340", l.Rows, l.Cols)
	}
	want := []int{6631, 18649, 2099, 3064, 1345, 5029, 1330, 3682, 947} // README.md
	counts := l.Counts()
	for i, w := range want {
		if counts[i+1] != w {
			t.Errorf("class %d: got %d pixels, want %d", i+1, counts[i+1], w)
		}
	}
	// Written labels keep the layout exactly.
	src := fakeSource(t, 10)
	cfg := DefaultConfig()
	g, err := New(l, src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "pavia.tif")
	if err := WriteScene(context.Background(), g, WriteOptions{Path: out, LabelsPath: filepath.Join(dir, "gt.tif"), DataType: geo.Int16, GeoRef: DefaultGeoRef(1.3)}); err != nil {
		t.Fatal(err)
	}
	l2, ref2, err := LoadLayout(context.Background(), filepath.Join(dir, "gt.tif"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.Labels, l2.Labels) {
		t.Error("labels written to GeoTIFF differ from the .mat layout")
	}
	if ref2 == nil || ref2.GeoTransform[1] != 1.3 {
		t.Errorf("got georeference %+v, want 1.3 m pixels", ref2)
	}
}

// ncmAccuracy classifies labelled pixels by their nearest class mean and
// returns the accuracy per label value.
func ncmAccuracy(px []float32, lab []uint8, bands int) map[int]float64 {
	sum := map[int][]float64{}
	cnt := map[int]int{}
	for i, l := range lab {
		if l == 0 {
			continue
		}
		if sum[int(l)] == nil {
			sum[int(l)] = make([]float64, bands)
		}
		for b := 0; b < bands; b++ {
			sum[int(l)][b] += float64(px[i*bands+b])
		}
		cnt[int(l)]++
	}
	for k := range sum {
		for b := range sum[k] {
			sum[k][b] /= float64(cnt[k])
		}
	}
	right := map[int]int{}
	for i, l := range lab {
		if l == 0 {
			continue
		}
		best, bd := 0, math.Inf(1)
		for k, m := range sum {
			if d := sqDist(px[i*bands:(i+1)*bands], m); d < bd {
				best, bd = k, d
			}
		}
		if best == int(l) {
			right[int(l)]++
		}
	}
	acc := map[int]float64{}
	for k := range cnt {
		acc[k] = float64(right[k]) / float64(cnt[k])
	}
	return acc
}

// TestSeparabilityResemblesSource compares nearest-class-mean accuracy per
// source class on the real scene and on a synthetic scene with the real
// scene's own layout: the synthetic task should be neither much easier nor
// much harder.
func TestSeparabilityResemblesSource(t *testing.T) {
	d := dataDir(t)
	ctx := context.Background()
	for _, name := range []string{"SalinasA", "JasperRidge"} {
		t.Run(name, func(t *testing.T) {
			im, _, names, err := LoadSourceImage(ctx, name, d)
			if err != nil {
				t.Fatal(err)
			}
			src, err := Estimate(name, im.Pixels, im.Labels, im.Bands, EstimateOptions{Names: names, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			real := ncmAccuracy(im.Pixels, im.Labels, im.Bands)
			l, _ := NewLayout(im.Rows, im.Cols, im.Labels)
			cfg := DefaultConfig()
			cfg.Seed = 5
			g, err := New(l, src, cfg)
			if err != nil {
				t.Fatal(err)
			}
			data := make([]float32, im.Rows*im.Cols*im.Bands)
			g.GenerateRows(0, im.Rows, data)
			syn := ncmAccuracy(data, im.Labels, im.Bands)
			var aaReal, aaSyn float64
			n := 0
			for _, sc := range g.Classes() {
				if sc.Label == 0 || sc.Stats.Label == 0 {
					continue
				}
				// The scene class with label sc.Label has the spectra of
				// source class sc.Stats.Label.
				aaReal += real[sc.Stats.Label]
				aaSyn += syn[sc.Label]
				n++
				t.Logf("source class %d %-28s real %.3f synthetic %.3f", sc.Stats.Label, sc.Stats.Name, real[sc.Stats.Label], syn[sc.Label])
			}
			aaReal /= float64(n)
			aaSyn /= float64(n)
			t.Logf("%s nearest-class-mean average accuracy: real %.3f, synthetic %.3f", name, aaReal, aaSyn)
			if aaSyn > aaReal+0.05 || aaSyn < aaReal-0.12 {
				t.Errorf("synthetic average accuracy %.3f, real %.3f: want within [-0.12, +0.05] of real", aaSyn, aaReal)
			}
		})
	}
}

func TestVRTTilesBlock(t *testing.T) {
	dir := t.TempDir()
	l, _ := Procedural(300, 200, 8)
	cfg := DefaultConfig()
	cfg.Bands = 6
	g, err := New(l, fakeSource(t, 12), cfg)
	if err != nil {
		t.Fatal(err)
	}
	vrt := filepath.Join(dir, "big.vrt")
	p, err := WriteVRT(context.Background(), g, WriteOptions{Path: vrt, LabelsPath: filepath.Join(dir, "big_gt.vrt"),
		DataType: geo.Int16, GeoRef: DefaultGeoRef(1)}, 20000, 20000)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(vrt)
	if st.Size() > 1<<20 {
		t.Errorf("VRT is %d bytes, want a small file", st.Size())
	}
	s, err := geo.Open(vrt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	if in.Rows != 20000 || in.Cols != 20000 || in.Bands != 6 {
		t.Fatalf("got %dx%dx%d, want 20000x20000x6", in.Rows, in.Cols, in.Bands)
	}
	if in.GeoTransform[0] != 510000 || in.GeoTransform[1] != 1 || in.EPSG != 32632 {
		t.Errorf("got geotransform %v EPSG:%d, want the block's", in.GeoTransform, in.EPSG)
	}
	win := geo.Window{Col: 15123, Row: 17890, Cols: 64, Rows: 48}
	got, err := s.ReadWindow(context.Background(), win)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := geo.Open(p.Block)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	block, err := bs.ReadWindow(context.Background(), geo.Window{Cols: 200, Rows: 300})
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < win.Rows; r++ {
		for c := 0; c < win.Cols; c++ {
			br, bc := (win.Row+r)%300, (win.Col+c)%200
			for b := 0; b < 6; b++ {
				w := block.Data[(br*200+bc)*6+b]
				if v := got.Data[(r*win.Cols+c)*6+b]; v != w {
					t.Fatalf("pixel (%d, %d) band %d: got %g, want block (%d, %d) = %g", win.Row+r, win.Col+c, b, v, br, bc, w)
				}
			}
		}
	}
	ls, err := geo.Open(filepath.Join(dir, "big_gt.vrt"))
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	lb, err := ls.ReadWindow(context.Background(), geo.Window{Col: 19990, Row: 19990, Cols: 10, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if v, w := lb.Data[0], l.Labels[(19990%300)*200+19990%200]; uint8(v) != w {
		t.Errorf("label at (19990, 19990): got %g, want %d", v, w)
	}
}

// TestFindDataDirKeepsCause: a PNEC_DATA naming no folder is ErrNoData,
// shareddata.ErrNotFound and, under them, the file system's own
// fs.ErrNotExist: the wrapping keeps every cause (it once flattened them
// into the text with %v).
func TestFindDataDirKeepsCause(t *testing.T) {
	t.Setenv("PNEC_DATA", filepath.Join(t.TempDir(), "absent"))
	_, err := FindDataDir(".")
	for _, target := range []error{ErrNoData, shareddata.ErrNotFound, fs.ErrNotExist} {
		if !errors.Is(err, target) {
			t.Errorf("FindDataDir with PNEC_DATA absent: %v, want errors.Is %v", err, target)
		}
	}
}

// TestNamedSourceWithoutDataSaysWhere: a named source without the shared
// data folder is ErrNoData with the way to name the folder or avoid it
// (the text once said only "shared data folder not found").
func TestNamedSourceWithoutDataSaysWhere(t *testing.T) {
	for _, spec := range []string{"SalinasA", "JasperRidge"} {
		_, _, _, err := LoadSourceImage(context.Background(), spec, "")
		if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "PNEC_DATA") || !strings.Contains(err.Error(), "SCENE,LABELS") {
			t.Errorf("source %s without a data folder: %v, want ErrNoData naming PNEC_DATA and SCENE,LABELS", spec, err)
		}
	}
}
