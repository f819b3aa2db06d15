package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/tiling"
)

// product is a product read back through GDAL.
type product struct {
	rows, cols int
	class      []int
	rel        []float32 // band 2 as stored
}

func readProduct(t *testing.T, path string) product {
	t.Helper()
	s, err := geo.Open(path)
	if err != nil {
		t.Fatalf("open product: %v", err)
	}
	defer s.Close()
	info := s.Info()
	if info.Bands != 2 {
		t.Fatalf("product has %d bands, want 2", info.Bands)
	}
	b, err := s.ReadWindow(context.Background(), geo.Window{Cols: info.Cols, Rows: info.Rows})
	if err != nil {
		t.Fatal(err)
	}
	p := product{rows: info.Rows, cols: info.Cols, class: make([]int, info.Rows*info.Cols), rel: make([]float32, info.Rows*info.Cols)}
	for i := range p.class {
		p.class[i] = int(b.Data[2*i])
		p.rel[i] = b.Data[2*i+1]
	}
	// Invalid pixels read as 0 in every band through geo; take the stored
	// reliability from an unmasked read of band 2 where it matters.
	return p
}

// readProductFloat is readProduct with rel taken from the product's Float32
// reliability file (Options.ReliabilityFloat32), 0..1.
func readProductFloat(t *testing.T, path string) product {
	t.Helper()
	p := readProduct(t, path)
	s, err := geo.Open(geo.ReliabilityPath(path))
	if err != nil {
		t.Fatalf("open reliability file: %v", err)
	}
	defer s.Close()
	b, err := s.ReadWindow(context.Background(), geo.Window{Cols: p.cols, Rows: p.rows})
	if err != nil {
		t.Fatal(err)
	}
	copy(p.rel, b.Data)
	return p
}

func classify(t *testing.T, f *sceneFixture, opts Options, out string) Result {
	t.Helper()
	return classifyReporting(t, f, opts, out, nil)
}

// classifyReporting is classify with the request's progress reported to report.
func classifyReporting(t *testing.T, f *sceneFixture, opts Options, out string, report progress.Func) Result {
	t.Helper()
	c, err := NewClassifier(f.model, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Run(context.Background(), Request{Scene: f.scene, Out: out, Progress: report})
	if err != nil {
		t.Fatalf("classify %+v: %v", opts, err)
	}
	return res
}

// gdalinfoJSON runs gdalinfo -json, an independent reader.
func gdalinfoJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("gdalinfo"); err != nil {
		t.Skip("gdalinfo not on PATH (install gdal-bin)")
	}
	out, err := exec.Command("gdalinfo", "-json", "-mdd", "all", path).Output()
	if err != nil {
		t.Fatalf("gdalinfo %s: %v", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClassifyWholeImage(t *testing.T) {
	f := getFixture(t)
	out := filepath.Join(t.TempDir(), "whole.tif")
	var calls int
	var last progress.Event
	res := classifyReporting(t, f, Options{}, out, func(ev progress.Event) { calls++; last = ev })
	// The whole image, its input padded to the ladder.
	if wr, wc := tiling.Rung(f.rows, tiling.LadderStep), tiling.Rung(f.cols, tiling.LadderStep); res.Tiles != 1 || res.TileRows != wr || res.TileCols != wc {
		t.Fatalf("got %d tiles of %dx%d, want one whole-image tile of %dx%d", res.Tiles, res.TileCols, res.TileRows, wc, wr)
	}
	if all := int64(f.rows * f.cols); calls != 1 || last.Stage != "classify" || last.Subject != f.scene || last.Part != 1 || last.Parts != 1 ||
		last.Done != all || last.Total != all || last.Unit != "px" || !strings.HasPrefix(last.Message, "tile 1/1, ") {
		t.Errorf("progress called %d times, last with %+v; want once, with the whole scene's %d px and its one tile done", calls, last, all)
	}
	p := readProduct(t, out)
	if p.rows != f.rows || p.cols != f.cols {
		t.Fatalf("product %dx%d, want %dx%d", p.cols, p.rows, f.cols, f.rows)
	}
	valid := map[int]bool{}
	for _, k := range f.model.Classes() {
		valid[k.Value] = true
	}
	var nValid, correct int64
	counts := map[int]int64{}
	for i, k := range p.class {
		switch {
		case !f.valid[i] && k != 0:
			t.Fatalf("nodata pixel %d got class %d, want 0", i, k)
		case f.valid[i] && !valid[k]:
			t.Fatalf("valid pixel %d got class %d, not one of the model's", i, k)
		case f.valid[i]:
			nValid++
			counts[k]++
			if int32(k) == f.labels[i] {
				correct++
			}
			if !(p.rel[i] >= 0 && p.rel[i] <= 100) {
				t.Fatalf("valid pixel %d reliability %v, want 0..100", i, p.rel[i])
			}
		}
	}
	if res.ValidPixels != nValid {
		t.Errorf("Result.ValidPixels %d, product has %d classified pixels", res.ValidPixels, nValid)
	}
	for k, n := range counts {
		if res.ClassCounts[k] != n {
			t.Errorf("Result.ClassCounts[%d] = %d, product has %d", k, res.ClassCounts[k], n)
		}
	}
	// The model is small and briefly trained, but the scene is easy: a
	// product that ignores its input would score about 1/classes.
	if acc := float64(correct) / float64(nValid); acc < 0.8 {
		t.Errorf("accuracy against the scene's labels %.3f, want >= 0.8", acc)
	}
	t.Logf("whole image: accuracy %.4f, times %+v", float64(correct)/float64(nValid), res.Times)
}

// The product's georeferencing must be the scene's, as an independent reader sees both.
func TestClassifyKeepsGeoreference(t *testing.T) {
	f := getFixture(t)
	out := filepath.Join(t.TempDir(), "geo.tif")
	classify(t, f, Options{TileSize: 64}, out)
	in, got := gdalinfoJSON(t, f.scene), gdalinfoJSON(t, out)
	for _, key := range []string{"geoTransform", "size"} {
		a, _ := json.Marshal(in[key])
		b, _ := json.Marshal(got[key])
		if string(a) != string(b) {
			t.Errorf("%s: got %s, want %s", key, b, a)
		}
	}
	wkt := func(m map[string]any) string {
		cs, _ := m["coordinateSystem"].(map[string]any)
		s, _ := cs["wkt"].(string)
		return s
	}
	if wkt(got) == "" || wkt(got) != wkt(in) {
		t.Errorf("CRS: got %.80q..., want %.80q...", wkt(got), wkt(in))
	}
	md, _ := got["metadata"].(map[string]any)
	pnec, _ := md["PNEC"].(map[string]any)
	if pnec["MODEL_CHECKSUM"] != f.model.Checksum() {
		t.Errorf("PNEC metadata MODEL_CHECKSUM %v, want %s", pnec["MODEL_CHECKSUM"], f.model.Checksum())
	}
}

// tileEdges marks the pixels within px of an interior edge of any tile's
// input (edges on the scene border are not tile edges).
func tileEdges(p tiling.Plan, px int) []bool {
	near := make([]bool, p.Rows*p.Cols)
	mark := func(r0, r1, c0, c1 int) {
		for r := max(r0, 0); r < min(r1, p.Rows); r++ {
			for c := max(c0, 0); c < min(c1, p.Cols); c++ {
				near[r*p.Cols+c] = true
			}
		}
	}
	for _, t := range p.Tiles {
		in := t.Input
		if in.Row > 0 {
			mark(in.Row-px, in.Row+px, in.Col, in.Col+in.Cols)
		}
		if end := in.Row + in.Rows; end < p.Rows {
			mark(end-px, end+px, in.Col, in.Col+in.Cols)
		}
		if in.Col > 0 {
			mark(in.Row, in.Row+in.Rows, in.Col-px, in.Col+px)
		}
		if end := in.Col + in.Cols; end < p.Cols {
			mark(in.Row, in.Row+in.Rows, end-px, end+px)
		}
	}
	return near
}

// On a scene that fits whole, tiled runs (tiles that do not divide the
// scene, several overlaps) must agree with the whole-image run, and the
// pixels that disagree must not crowd at tile edges.
//
// The network cannot give identical labels on tiles: its scan is global
// and causal, so a tile lacks the context of the scene above and left of
// it (see README.md, "Classifying scenes"). Its GroupNorm layers use statistics
// stored at training (model.Model.FixedNorm), so every tile is normalised
// exactly like the whole scene; with per-image statistics, agreement was
// 0.974-0.989. Measured with stored statistics: 0.9995-0.9998 overall and
// 0.9997-1.0000 within 8 px of tile edges. The thresholds are the issue's.
// TestTiledEqualsWholeWithoutContext checks the tiling machinery itself exactly.
const (
	minAgreement     = 0.995 // overall
	minEdgeAgreement = 0.99  // within 8 px of any tile edge
	maxEdgeShortfall = 0.005 // and edges may trail overall by at most this
)

func TestTiledAgreesWithWholeImage(t *testing.T) {
	f := getFixture(t)
	if !f.model.FixedNorm() {
		t.Fatal("sceneFixture model has no stored GroupNorm statistics; tiles would be normalised unlike the whole scene")
	}
	dir := t.TempDir()
	whole := readProduct(t, func() string {
		out := filepath.Join(dir, "whole.tif")
		classify(t, f, Options{Probabilities: ProbabilitiesRecovered}, out)
		return out
	}())
	cases := []struct{ tile, overlap int }{
		{96, 0},   // default overlap (32 px); 96 divides neither 224 nor 260
		{128, 48}, // wider than default
		{176, 0},
		{200, 64},
		{128, 32},
	}
	if testing.Short() {
		cases = cases[:2]
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("tile%d_overlap%d", tc.tile, tc.overlap), func(t *testing.T) {
			out := filepath.Join(dir, "tiled.tif")
			opts := Options{TileSize: tc.tile, Overlap: tc.overlap, Probabilities: ProbabilitiesRecovered}
			res := classify(t, f, opts, out)
			agreeProbabilities(t, filepath.Join(dir, "whole.tif"), out)
			plan, _, err := PlanSceneInfo(assumedInfo(f.rows, f.cols, f.bands), f.model, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Tiles < 4 || res.Tiles != len(plan.Tiles) {
				t.Fatalf("got %d tiles (plan %v), want the plan's %d and at least 4", res.Tiles, plan, len(plan.Tiles))
			}
			tiled := readProduct(t, out)
			edges := tileEdges(plan, 8)
			var n, agree, nEdge, agreeEdge int
			for i := range whole.class {
				if !f.valid[i] {
					if tiled.class[i] != 0 {
						t.Fatalf("nodata pixel %d got class %d in the tiled run", i, tiled.class[i])
					}
					continue
				}
				same := whole.class[i] == tiled.class[i]
				n++
				if same {
					agree++
				}
				if edges[i] {
					nEdge++
					if same {
						agreeEdge++
					}
				}
			}
			overall, edge := float64(agree)/float64(n), float64(agreeEdge)/float64(nEdge)
			t.Logf("%v: agreement %.4f overall, %.4f within 8 px of tile edges (%d px)", plan, overall, edge, nEdge)
			if overall < minAgreement {
				t.Errorf("overall agreement %.4f, want >= %.3f", overall, minAgreement)
			}
			if edge < minEdgeAgreement {
				t.Errorf("agreement within 8 px of tile edges %.4f, want >= %.3f", edge, minEdgeAgreement)
			}
			if edge < overall-maxEdgeShortfall {
				t.Errorf("agreement within 8 px of tile edges %.4f, want >= overall %.4f - %.3f: disagreements crowd at tile edges", edge, overall, maxEdgeShortfall)
			}
		})
	}
}

func TestClassifyFloat32Reliability(t *testing.T) {
	f := getFixture(t)
	out := filepath.Join(t.TempDir(), "f32.tif")
	classify(t, f, Options{ReliabilityFloat32: true, TileSize: 64}, out)
	// The product keeps its Byte class band with its palette:
	// the Float32 reliability is a second file.
	info := gdalinfoJSON(t, out)
	bands, _ := info["bands"].([]any)
	if len(bands) != 2 {
		t.Fatalf("got %d bands, want 2", len(bands))
	}
	b1, _ := bands[0].(map[string]any)
	if b1["type"] != "Byte" || b1["colorInterpretation"] != "Palette" {
		t.Errorf("class band: type %v, colour interpretation %v; want Byte with its palette", b1["type"], b1["colorInterpretation"])
	}
	rinfo := gdalinfoJSON(t, geo.ReliabilityPath(out))
	rb, _ := rinfo["bands"].([]any)
	if len(rb) != 1 || rb[0].(map[string]any)["type"] != "Float32" {
		t.Fatalf("reliability file bands: got %v, want one Float32", rb)
	}
	whole := readProduct(t, out)
	fl, err := geo.Open(geo.ReliabilityPath(out))
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	blk, err := fl.ReadWindow(context.Background(), geo.Window{Cols: whole.cols, Rows: whole.rows})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range whole.class {
		if c == 0 {
			continue
		}
		// The product's percent is the rounded Float32 fraction.
		if d := math.Abs(float64(blk.Data[i])*100 - float64(whole.rel[i])); blk.Valid[i] && d > 0.5+1e-4 {
			t.Fatalf("pixel %d: float reliability %v, product %v percent", i, blk.Data[i], whole.rel[i])
		}
	}
}

func TestClassifyBandMismatch(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	scene := filepath.Join(dir, "few.tif")
	data, _ := synthScene(40, 40, f.bands-3, 3, 9)
	if err := writeScene(scene, 40, 40, f.bands-3, data, f.geoRef); err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(f.model, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := filepath.Join(dir, "out.tif")
	_, err = c.Run(context.Background(), Request{Scene: scene, Out: out})
	if !errors.Is(err, model.ErrBandCount) {
		t.Fatalf("got %v, want ErrBandCount", err)
	}
	if !strings.Contains(err.Error(), scene) {
		t.Errorf("error %q does not name the scene", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("product exists after a failed run: %v", err)
	}
}

// Cancelling mid-run returns the context's error, leaves no product and
// no temporary file, and stops every goroutine.
func TestClassifyCancel(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "cancel.tif")
	// An existing product must survive a cancelled run untouched.
	if err := os.WriteFile(out, []byte("old product"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(f.model, Options{TileSize: 48})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	stopAtTile2 := func(ev progress.Event) {
		if ev.Part == 2 {
			cancel()
		}
	}
	_, err = c.Run(ctx, Request{Scene: f.scene, Out: out, Progress: stopAtTile2})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "old product" {
		t.Errorf("existing product changed by a cancelled run: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only the old product", names)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after cancel, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	// The classifier still works after a cancelled run.
	if _, err := c.Run(context.Background(), Request{Scene: f.scene, Out: out}); err != nil {
		t.Fatalf("classify after cancel: %v", err)
	}
}

func TestPadTile(t *testing.T) {
	// A 3x2 block of 2 bands padded to a 4x4 input: the overhang is zero and invalid.
	b := geo.Block{Window: geo.Window{Cols: 2, Rows: 3}, Bands: 2,
		Data:  []float32{1, 10, 2, 20, 3, 30, 4, 40, 5, 50, 6, 60},
		Valid: []bool{true, true, true, false, true, true}}
	tl := tiling.Tile{Input: tiling.Rect{Cols: 4, Rows: 4}, Read: tiling.Rect{Cols: 2, Rows: 3}}
	s := padTile(b, tl)
	if s.Rows != 4 || s.Cols != 4 || len(s.Data) != 32 || len(s.Valid) != 16 {
		t.Fatalf("got %dx%d with %d values, want 4x4 with 32", s.Cols, s.Rows, len(s.Data))
	}
	want := [][2]float32{{1, 10}, {2, 20}, {}, {}, {3, 30}, {4, 40}, {}, {}, {5, 50}, {6, 60}, {}, {}, {}, {}, {}, {}}
	for i, w := range want {
		if got := [2]float32{s.Data[2*i], s.Data[2*i+1]}; got != w {
			t.Errorf("pixel %d: got %v, want %v", i, got, w)
		}
	}
	wantValid := []bool{true, true, false, false, true, false, false, false, true, true, false, false, false, false, false, false}
	for i, w := range wantValid {
		if s.Valid[i] != w {
			t.Errorf("pixel %d: got valid %v, want %v", i, s.Valid[i], w)
		}
	}
}

// TestPaddedTileMatchesWhole runs the network on a scene whose sides are
// not multiples of the stride, whole and as one tile padded to the
// stride: the last 1-3 rows and columns sit in partial 4x4 cells, which
// average only the scene's pixels in both, so the probabilities agree.
// (Padding that repeats the last row and column shifts those cells' means.)
// This is the cell encoder's property: the paper encoder's floor grid gives
// a scene's last partial cell's pixels the nearest whole cell, where a
// padded tile has a cell for them, so there tiled products agree with whole
// ones to the stitching tolerance (TestTiledAgreesWithWholeImage), not exactly.
func TestPaddedTileMatchesWhole(t *testing.T) {
	f := getFixture(t)
	const rows, cols = 150, 141 // 150 = 4*37 + 2, 141 = 4*35 + 1
	data, _ := synthScene(rows, cols, f.bands, fixClasses, 9)
	valid := make([]bool, rows*cols)
	for i := range valid {
		valid[i] = true
	}
	cfg := model.DefaultConfig()
	cfg.Encoder = model.EncoderCell
	cfg.Hidden, cfg.DState, cfg.HeadDim, cfg.Chunk = 16, 8, 16, 32
	cfg.Epochs, cfg.ECWarmupEpochs, cfg.LearningRate = 5, 2, 3e-3
	tdata, tlabels := synthScene(32, 32, f.bands, fixClasses, 1)
	m, err := model.Train(context.Background(), model.Scene{Rows: 32, Cols: 32, Bands: f.bands, Data: tdata}, tlabels,
		model.TrainOptions{Config: cfg, TrainPerClass: 10, Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.NewPredictor(m, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	whole, err := p.Predict(context.Background(), model.Scene{Rows: rows, Cols: cols, Bands: f.bands, Data: data, Valid: valid})
	if err != nil {
		t.Fatal(err)
	}
	b := geo.Block{Window: geo.Window{Rows: rows, Cols: cols}, Bands: f.bands, Data: data, Valid: valid}
	tile := tiling.Tile{Input: tiling.Rect{Rows: 152, Cols: 144}, Read: tiling.Rect{Rows: rows, Cols: cols}}
	padded, err := p.Predict(context.Background(), padTile(b, tile))
	if err != nil {
		t.Fatal(err)
	}
	k := whole.Classes
	worst := 0.0
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			for j := 0; j < k; j++ {
				d := math.Abs(float64(whole.Prob[(r*cols+c)*k+j] - padded.Prob[(r*144+c)*k+j]))
				worst = max(worst, d)
			}
		}
	}
	t.Logf("max |P_up whole - P_up padded tile| = %.3g", worst)
	if worst > 1e-5 {
		t.Errorf("probabilities of the padded tile differ from the whole scene's by %.3g, want <= 1e-5", worst)
	}
}

// pointwise is a stand-in network without spatial context: each pixel's
// probabilities depend on its own spectrum only. With it, tiling cannot
// change anything, so a tiled run must reproduce the whole-image product
// exactly: this isolates the planning, padding, stitching, recovery and
// streaming from the real network's context effects.
type pointwise struct{ classes int }

func (p pointwise) Backend() string { return "pointwise" }
func (p pointwise) Close() error    { return nil }
func (p pointwise) Predict(ctx context.Context, s model.Scene) (model.Prediction, error) {
	out := model.Prediction{Rows: s.Rows, Cols: s.Cols, Classes: p.classes,
		Prob: make([]float32, s.Rows*s.Cols*p.classes), Uncertainty: make([]float32, s.Rows*s.Cols)}
	for i := 0; i < s.Rows*s.Cols; i++ {
		px := s.Data[i*s.Bands : (i+1)*s.Bands]
		var sum float64
		for k := 0; k < p.classes; k++ {
			z := math.Exp(float64(px[(3*k)%s.Bands]-px[(3*k+1)%s.Bands]) / 100)
			out.Prob[i*p.classes+k] = float32(z)
			sum += z
		}
		for k := 0; k < p.classes; k++ {
			out.Prob[i*p.classes+k] /= float32(sum)
		}
		out.Uncertainty[i] = float32(math.Abs(math.Sin(float64(px[0]))))
	}
	return out, nil
}

func TestTiledEqualsWholeWithoutContext(t *testing.T) {
	// Any model of the network's decision serves: the pointwise network
	// replaces it; only its classes, band count and recovery parameters are
	// used. The tiny shared one trains in seconds. A fused model would not:
	// its decision aligns each tile's pixels to the training spectra or a
	// group of their changed copies on its own (model.NewAlignedReference),
	// and this scene, not the model's, aligns to copies as a whole and to
	// the spectra in tiles under 2,048 pixels.
	m := fixture.LoadNetworkModel(t)
	dir := t.TempDir()
	const rows, cols = 101, 90
	data, _ := synthScene(rows, cols, m.Bands(), 3, 5)
	wantNoData := 0
	for i := 0; i < rows*cols; i++ {
		r, c := i/cols, i%cols
		if (r >= 40 && r < 47 && c >= 10 && c < 30) || i%97 == 0 {
			wantNoData++
			for b := 0; b < m.Bands(); b++ {
				data[i*m.Bands()+b] = fixNoData
			}
		}
	}
	scene := filepath.Join(dir, "scene.tif")
	if err := writeScene(scene, rows, cols, m.Bands(), data, fixture.GeoRef); err != nil {
		t.Fatal(err)
	}
	run := func(opts Options, out string) Result {
		c, err := NewClassifier(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		closePredictor(c)
		c.pred = pointwise{classes: len(m.Classes())}
		defer c.Close()
		res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// The probabilities must tile as the product does: the recovered ones
	// (one band per class) with the product, the network's top-2 in a
	// second run.
	probOpts := []Options{{Probabilities: ProbabilitiesRecovered}, {Probabilities: ProbabilitiesNetwork, TopK: 2}}
	for i, po := range probOpts {
		run(po, filepath.Join(dir, fmt.Sprintf("whole%d.tif", i)))
	}
	whole := readProduct(t, filepath.Join(dir, "whole0.tif"))
	nodata := 0
	for _, k := range whole.class {
		if k == 0 {
			nodata++
		}
	}
	if nodata != wantNoData {
		t.Fatalf("whole-image product has %d nodata pixels, want the scene's %d", nodata, wantNoData)
	}
	for _, tc := range []struct{ tile, overlap int }{{16, -1}, {32, 0}, {48, -1}, {40, 8}, {64, 28}, {100, 0}} {
		out := filepath.Join(dir, fmt.Sprintf("t%d_%d.tif", tc.tile, tc.overlap))
		res := run(Options{TileSize: tc.tile, Overlap: tc.overlap, Probabilities: ProbabilitiesRecovered}, out)
		got := readProduct(t, out)
		compareProbabilities(t, fmt.Sprintf("tile %d overlap %d recovered", tc.tile, tc.overlap), filepath.Join(dir, "whole0.tif"), out)
		out2 := filepath.Join(dir, fmt.Sprintf("t%d_%d_net.tif", tc.tile, tc.overlap))
		run(Options{TileSize: tc.tile, Overlap: tc.overlap, Probabilities: ProbabilitiesNetwork, TopK: 2}, out2)
		compareProbabilities(t, fmt.Sprintf("tile %d overlap %d network top-2", tc.tile, tc.overlap), filepath.Join(dir, "whole1.tif"), out2)
		diff, relDiff := 0, 0
		for i := range got.class {
			if got.class[i] != whole.class[i] {
				diff++
			}
			if math.Abs(float64(got.rel[i]-whole.rel[i])) > 1 {
				relDiff++
			}
		}
		if diff > 0 || relDiff > 0 {
			t.Errorf("tile %d overlap %d (%s): %d class and %d reliability differences from the whole-image run, want 0",
				tc.tile, tc.overlap, res.Plan, diff, relDiff)
		}
	}
}

// TestClassifyUngeoreferenced: a scene without geotransform or CRS gives a
// product without them, not GDAL's pixel-coordinate default written as a
// fake geotransform.
func TestClassifyUngeoreferenced(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	scene := filepath.Join(dir, "local.tif")
	data, _ := synthScene(40, 48, f.bands, 3, 5)
	if err := writeScene(scene, 40, 48, f.bands, data, geo.GeoRef{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "local-product.tif")
	c, err := NewClassifier(f.model, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Run(context.Background(), Request{Scene: scene, Out: out}); err != nil {
		t.Fatal(err)
	}
	s, err := geo.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	if in.HasGeoTransform || in.WKT != "" {
		t.Errorf("product of an ungeoreferenced scene: geotransform %v (%v), CRS %q; want none", in.GeoTransform, in.HasGeoTransform, in.WKT)
	}
}

// TestPlanSceneForcedTileBudget: a forced tile at least as large as the
// scene makes a one-tile (whole-image) plan, and that plan is held to the
// budget like any forced tile (it was not: --max-memory 512M --tile 1100 on
// a 1100 x 1100 scene planned 4.2 GiB and ran).
func TestPlanSceneForcedTileBudget(t *testing.T) {
	f := getFixture(t)
	const rows, cols = 1100, 1100
	info := assumedInfo(rows, cols, f.bands)
	wholePlan, _, err := PlanSceneInfo(info, f.model, Options{MaxMemoryBytes: 1 << 50, TileSize: cols})
	if err != nil || !wholePlan.Whole {
		t.Fatalf("ample budget: %v, %v; want a whole-image plan", wholePlan, err)
	}
	need := PlannedBytes(wholePlan, info, f.model, Options{})
	for _, tile := range []int{1024, 1100, 1104, 4096} {
		for _, tc := range []struct {
			budget int64
			ok     bool
		}{{need / 4, false}, {need + need/10, true}} {
			t.Run(fmt.Sprintf("tile %d budget %d MiB", tile, tc.budget>>20), func(t *testing.T) {
				opts := Options{MaxMemoryBytes: tc.budget, TileSize: tile}
				p, _, err := PlanSceneInfo(info, f.model, opts)
				if !tc.ok {
					if !errors.Is(err, tiling.ErrBudget) {
						t.Fatalf("got %v (%v), want ErrBudget: the plan needs %d MiB", p, err, PlannedBytes(p, info, f.model, opts)>>20)
					}
					t.Logf("%v", err)
					return
				}
				if err != nil {
					t.Fatalf("got %v, want a plan", err)
				}
				if got := PlannedBytes(p, info, f.model, opts); got > tc.budget {
					t.Errorf("plan %v needs %d bytes, budget %d", p, got, tc.budget)
				}
			})
		}
	}
}

// TestPlanSceneHugeTile: a tile side or overlap beyond MaxTileSide is
// ErrTileTooLarge, not an overflowed negative tile in the message.
func TestPlanSceneHugeTile(t *testing.T) {
	f := getFixture(t)
	for _, opts := range []Options{{TileSize: math.MaxInt}, {TileSize: 64, Overlap: math.MaxInt}} {
		_, _, err := PlanSceneInfo(assumedInfo(100, 100, f.bands), f.model, opts)
		if !errors.Is(err, ErrTileTooLarge) || strings.Contains(err.Error(), "-") {
			t.Errorf("tile %d overlap %d: got %v, want ErrTileTooLarge without negative sizes", opts.TileSize, opts.Overlap, err)
		}
	}
	if _, _, err := PlanSceneInfo(assumedInfo(100, 100, f.bands), f.model, Options{TileSize: MaxTileSide, MaxMemoryBytes: 1 << 40}); err != nil {
		t.Errorf("tile MaxTileSide on a 100 x 100 scene: %v, want the whole scene", err)
	}
}

// TestRunAfterConcurrentClose: a Run that waits for the Classifier while
// a Close is queued before it gets ErrClosed. Run (then ClassifyMasked)
// once looked at the predictor before waiting, so the Close
// cleared it under its feet: a nil predictor called (a panic), and a data
// race `go test -race` reports. Go queues the waiters of the Classifier
// (a channel send) in order: the Close is started first and given time to
// queue; were it not queued first, the scene would simply be classified.
func TestRunAfterConcurrentClose(t *testing.T) {
	f := getFixture(t)
	c, err := NewClassifier(f.model, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.busy <- struct{}{} // a scene in progress
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	time.Sleep(200 * time.Millisecond) // the Close queues
	done := make(chan error, 1)
	out := filepath.Join(t.TempDir(), "p.tif")
	go func() {
		_, err := c.Run(context.Background(), Request{Scene: f.scene, Out: out})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // the Run queues after it
	<-c.busy                           // the scene ends
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Run queued after Close: %v, want ErrClosed", err)
	}
}

// TestClassifierCloseWhileClassifying closes a Classifier from another
// goroutine while it classifies (Close once cleared the predictor without
// holding the Classifier, a data race `go test -race` reports): Close waits
// for the scene, which completes, and a later Run says ErrClosed.
func TestClassifierCloseWhileClassifying(t *testing.T) {
	f := getFixture(t)
	c, err := NewClassifier(f.model, Options{TileSize: 48})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	out := filepath.Join(t.TempDir(), "p.tif")
	go func() {
		close(started)
		_, err := c.Run(context.Background(), Request{Scene: f.scene, Out: out})
		done <- err
	}()
	<-started
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("Run during Close: %v, want success or ErrClosed", err)
	}
	if _, err := c.Run(context.Background(), Request{Scene: f.scene, Out: out}); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
	if c.Backend() == "" {
		t.Error("Backend() empty after Close")
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// closePredictor closes the predictor c opened, if any (a Classifier whose
// Options name no backend opens one on its first Run), before a test puts
// its own in its place.
func closePredictor(c *Classifier) {
	if c.pred != nil {
		c.pred.Close()
	}
}

// TestDefaultBackendDecidedOnFirstRun: a Classifier whose Options name no
// backend opens none until its first Run, which decides for that scene's
// pixels (backend.Decide); the CLI no longer opens the scene to decide.
func TestDefaultBackendDecidedOnFirstRun(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "")
	f := getFixture(t)
	c, err := NewClassifier(f.model, Options{TileSize: 48})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.pred != nil {
		t.Fatal("NewClassifier opened a predictor before knowing the scene")
	}
	res, err := c.Run(context.Background(), Request{Scene: f.scene, Out: filepath.Join(t.TempDir(), "p.tif")})
	if err != nil {
		t.Fatal(err)
	}
	if c.pred == nil || res.Backend != c.Backend() || res.Backend == "" {
		t.Errorf("after the first Run: predictor %v, result's backend %q, Backend() %q; want one opened and named alike", c.pred != nil, res.Backend, c.Backend())
	}
	first := c.pred
	if _, err := c.Run(context.Background(), Request{Scene: f.scene, Out: filepath.Join(t.TempDir(), "q.tif")}); err != nil {
		t.Fatal(err)
	}
	if c.pred != first {
		t.Error("the second Run opened another predictor: the default is decided once")
	}
}

// tiledClassifier is a Classifier of the fixture's model on the Go
// backend in 48 px tiles (closed at the test's end), the fixture and a
// folder for products.
func tiledClassifier(t *testing.T) (*sceneFixture, *Classifier, string) {
	t.Helper()
	f := getFixture(t)
	c, err := NewClassifier(f.model, Options{Backend: "go", TileSize: 48})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return f, c, t.TempDir()
}

// TestRunOwnsTheOutputLock: Run takes the output's lock itself (a library
// user gets what pnec classify and pnec batch get): while another holder
// has it Run refuses with tempfiles.ErrBusy and removes nothing; once it
// is free Run removes the stale temporaries of an earlier run, reports how
// many, and keeps an input named like one. LockHeld leaves both to a
// caller that holds the lock (pnec batch).
func TestRunOwnsTheOutputLock(t *testing.T) {
	f, c, dir := tiledClassifier(t)
	out := filepath.Join(dir, "map.tif")
	stale := filepath.Join(dir, ".map.tif.pnec-123.stage.tif")
	input := filepath.Join(dir, ".map.tif.pnec-9.tmp.tif") // an input named like a temporary
	for _, p := range []string{stale, input} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	held, err := tempfiles.TryLock(dir, "map")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background(), Request{Scene: f.scene, Out: out}); !errors.Is(err, tempfiles.ErrBusy) {
		t.Errorf("Run while the lock is held: %v, want ErrBusy", err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("a temporary was removed while another held the lock: %v", err)
	}
	// The caller that holds the lock says so: Run neither locks nor sweeps.
	res, err := c.Run(context.Background(), Request{Scene: f.scene, Out: out, LockHeld: true})
	if err != nil || res.StaleTemporaries != 0 {
		t.Fatalf("Run with LockHeld: %v, %d removed; want a product and none removed", err, res.StaleTemporaries)
	}
	held.Release()
	res, err = c.Run(context.Background(), Request{Scene: f.scene, Out: out, Keep: []string{input}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) || res.StaleTemporaries != 1 {
		t.Errorf("after Run: stale temporary %v, %d reported removed; want it gone and 1", err, res.StaleTemporaries)
	}
	if _, err := os.Stat(input); err != nil {
		t.Errorf("an input named like a temporary was removed: %v", err)
	}
}

// TestRunChecksTheRequestFirst: Run refuses an unusable product path and
// an output that is one of the run's files (the scene, a file in
// Request.Keep) before it takes the lock or reads anything, naming each
// file by its role so that a caller can word it (pnec classify: by flag).
func TestRunChecksTheRequestFirst(t *testing.T) {
	f, c, dir := tiledClassifier(t)
	missing := filepath.Join(dir, "no", "map.tif")
	if _, err := c.Run(context.Background(), Request{Scene: f.scene, Out: missing}); !errors.Is(err, ErrBadOutput) {
		t.Errorf("a product in a missing folder: %v, want ErrBadOutput", err)
	}
	kept := filepath.Join(dir, "model.pnec")
	if err := os.WriteFile(kept, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, out, role string
	}{
		{"the product is a kept file", kept, RoleKept},
		{"the product is the scene", f.scene, RoleScene},
	} {
		_, err := c.Run(context.Background(), Request{Scene: f.scene, Out: tc.out, Keep: []string{kept}})
		var cf *samefile.Conflict
		if !errors.As(err, &cf) || cf.InputRole != tc.role || cf.OutputRole != "the product" {
			t.Errorf("%s: %v, want a conflict of the product with %s", tc.name, err, tc.role)
		}
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "x" {
		t.Errorf("the kept file after the refusals: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "model.pnec" {
			t.Errorf("a refused run left %s", e.Name())
		}
	}
}
