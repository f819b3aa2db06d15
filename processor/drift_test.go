package processor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
)

// TestClassifyDrift: a scene like the training scene gets verdict ok, the
// same ground with its bands reversed fail; the verdict and figures are in
// Result.Drift and in the product's metadata as gdalinfo reads it (PNEC
// domain and PNEC_-prefixed in the default one); a tiled run measures what
// a whole-image run does; a DriftCheck that refuses the scene leaves an
// earlier product as it was.
func TestClassifyDrift(t *testing.T) {
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	like := fixture.Scene(t, filepath.Join(dir, "like.tif"), 2)
	data, _ := fixture.SceneData(3)
	reversed := make([]float32, len(data))
	for i := 0; i < len(data); i += fixture.Bands {
		for b := 0; b < fixture.Bands; b++ {
			reversed[i+b] = data[i+fixture.Bands-1-b]
		}
	}
	rev := filepath.Join(dir, "reversed.tif")
	if err := fixture.WriteRaster(rev, fixture.Rows, fixture.Cols, fixture.Bands, reversed); err != nil {
		t.Fatal(err)
	}
	run := func(opts Options, scene, out string) (Result, error) {
		c, err := NewClassifier(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.Run(context.Background(), Request{Scene: scene, Out: out})
	}

	res, err := run(Options{}, like, filepath.Join(dir, "like_product.tif"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Drift == nil || res.Drift.Verdict != drift.OK || res.Drift.ValidPixels != int64(fixture.Rows*fixture.Cols) {
		t.Fatalf("scene like the training scene: drift %+v, want ok over every pixel", res.Drift)
	}
	md, _ := gdalinfoJSON(t, filepath.Join(dir, "like_product.tif"))["metadata"].(map[string]any)
	pnec, _ := md["PNEC"].(map[string]any)
	dflt, _ := md[""].(map[string]any)
	if pnec[drift.MetaVerdict] != "ok" || dflt["PNEC_"+drift.MetaVerdict] != "ok" {
		t.Errorf("product metadata %s = %v (default domain %v), want ok", drift.MetaVerdict, pnec[drift.MetaVerdict], dflt["PNEC_"+drift.MetaVerdict])
	}
	for _, k := range []string{drift.MetaFarShare, drift.MetaDistanceRatio, drift.MetaReliabilityRatio, drift.MetaBrightnessRatio, drift.MetaBandShiftMax,
		drift.MetaRecalibrationChangeShare, drift.MetaRecalibrationBandShift} {
		s, _ := pnec[k].(string)
		if v, err := strconv.ParseFloat(s, 64); err != nil || math.IsNaN(v) {
			t.Errorf("product metadata %s = %q, want a number", k, s)
		}
	}

	tiled, err := run(Options{TileSize: 20, Overlap: 8}, like, filepath.Join(dir, "like_tiled.tif"))
	if err != nil {
		t.Fatal(err)
	}
	if tiled.Tiles < 4 {
		t.Fatalf("tiled run has %d tiles, want at least 4", tiled.Tiles)
	}
	// The tiles' cells see another context than the whole image's, so the
	// network's figures agree to within what a few of the 80 cells move
	// (the verdict may differ where a figure lies that near a limit). Since a
	// whole image is padded to the 64 px ladder (tiling.Rung), the 32x40 scene
	// runs inside 64x64 with no-data beyond its edges while the forced 20 px
	// tiles run as they are: measured at 4aceb1d, 5 of the 80 cells change
	// sides of the far share (0.175 against 0.1125) and the margin ratio
	// moves by 0.024.
	w, d := res.Drift, tiled.Drift
	if d.ValidPixels != w.ValidPixels || d.ValidCells != w.ValidCells || math.Abs(d.BrightnessRatio-w.BrightnessRatio) > 1e-9 ||
		math.Abs(d.BandShiftMaxSD-w.BandShiftMaxSD) > 1e-6 || math.Abs(d.FarShare-w.FarShare) > 0.01 || math.Abs(d.ReliabilityRatio-w.ReliabilityRatio) > 0.01 ||
		math.Abs(d.FeatureFarShare-w.FeatureFarShare) > 0.08 || math.Abs(d.FeatureDistanceRatio-w.FeatureDistanceRatio) > 0.05 ||
		math.Abs(d.PrototypeMarginRatio-w.PrototypeMarginRatio) > 0.02 || math.Abs(d.MarginRatio-w.MarginRatio) > 0.035 ||
		math.Abs(d.UncertaintyRatio-w.UncertaintyRatio) > 0.01 {
		t.Errorf("tiled drift %+v, whole-image %+v: want the same figures", d, w)
	}
	// The recalibration probe reads and classifies its window on its own
	// (here the whole 32x40 scene), whatever the tiles: the same figures.
	if d.ProbePixels != int64(fixture.Rows*fixture.Cols) || d.ProbePixels != w.ProbePixels ||
		d.RecalibrationChangeShare != w.RecalibrationChangeShare || d.RecalibrationBandShift != w.RecalibrationBandShift {
		t.Errorf("tiled probe %d pixels, %g changed, band shift %g; whole-image %d, %g, %g: want the same over every pixel",
			d.ProbePixels, d.RecalibrationChangeShare, d.RecalibrationBandShift, w.ProbePixels, w.RecalibrationChangeShare, w.RecalibrationBandShift)
	}

	res, err = run(Options{}, rev, filepath.Join(dir, "rev_product.tif"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Drift == nil || res.Drift.Verdict == drift.OK || len(res.Drift.Reasons) == 0 {
		t.Fatalf("bands reversed: drift %+v, want warn or fail with reasons", res.Drift)
	}

	// Refused: an earlier product at the path stays.
	out := filepath.Join(dir, "refused.tif")
	if err := os.WriteFile(out, []byte("earlier product"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run(Options{DriftCheck: drift.Refuse(drift.Warn)}, rev, out)
	var de *drift.RefusedError
	if !errors.Is(err, drift.ErrRefused) || !errors.As(err, &de) || de.Report.Verdict == drift.OK {
		t.Fatalf("refused scene: error %v, want a drift.RefusedError with verdict warn or fail", err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "earlier product" {
		t.Errorf("refused scene changed the output: %q, %v", b, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "refused*"))
	if len(left) != 1 {
		t.Errorf("refused scene left %v, want only the earlier product", left)
	}
	// warn refuses fail too; ok passes either.
	if err := drift.Refuse(drift.Warn)(drift.Report{Verdict: drift.Warn}); !errors.Is(err, drift.ErrRefused) {
		t.Errorf("drift.Refuse(warn) on warn: %v, want drift.ErrRefused", err)
	}
	if err := drift.Refuse(drift.Fail)(drift.Report{Verdict: drift.Warn}); err != nil {
		t.Errorf("drift.Refuse(fail) on warn: %v, want nil", err)
	}
}

// TestDriftMetadataBandShifts: the per-band shifts are JSON with two
// decimals, null where undefined, and a shift that rounds to zero from
// below is 0, not -0.
func TestDriftMetadataBandShifts(t *testing.T) {
	md := drift.Metadata(drift.Report{Verdict: drift.OK, BandShiftSD: []float64{-0.001, 0.126, math.NaN(), -1.234}})
	if got, want := md[drift.MetaBandShift], "[0,0.13,null,-1.23]"; got != want {
		t.Errorf("%s = %s, want %s", drift.MetaBandShift, got, want)
	}
}

// recordingPredictor records the calls to the predictor it wraps: "tile
// RxC" (Predict) or "whole RxC" (PredictRecovered).
type recordingPredictor struct {
	predictor
	mu    sync.Mutex
	calls []string
}

func (p *recordingPredictor) record(kind string, s model.Scene) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, fmt.Sprintf("%s %dx%d", kind, s.Rows, s.Cols))
}

func (p *recordingPredictor) Predict(ctx context.Context, s model.Scene) (model.Prediction, error) {
	p.record("tile", s)
	return p.predictor.Predict(ctx, s)
}

func (p *recordingPredictor) PredictRecovered(ctx context.Context, s model.Scene) (model.Prediction, error) {
	p.record("whole", s)
	return p.predictor.(wholeRecoverer).PredictRecovered(ctx, s)
}

func (p *recordingPredictor) PrepInGraph() bool {
	g, ok := p.predictor.(interface{ PrepInGraph() bool })
	return ok && g.PrepInGraph()
}

// TestClassifyDriftProbeRuns: a scene that is its own probe window and
// runs whole lends the probe its labels, so the probe runs the network
// once (the recalibrated window) instead of twice, with the main pass's
// call: recovered in the graph where the main pass was (the input
// preparation in the graph, as on XLA), so both meet one compiled graph.
// Its figures are those of a probe that classified the window itself
// (TestClassifyDrift compares the whole run with a tiled one, whose probe
// does). A tiled run's probe runs twice, on ProbeShape.
func TestClassifyDriftProbeRuns(t *testing.T) {
	// What it checks is the network decision's alone (a fused decision
	// recovers on the host, and its probe classifies its window itself).
	m := fixture.LoadNetworkModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "like.tif"), 2)
	tiled := Options{TileSize: 20, Overlap: 8}
	probe, ok, err := ProbeShape(fixture.Rows, fixture.Cols, m, tiled)
	if err != nil || !ok {
		t.Fatalf("ProbeShape with 20 px tiles: %v, %v, %v: want a shape of its own", probe, ok, err)
	}
	if _, ok, _ := ProbeShape(fixture.Rows, fixture.Cols, m, Options{}); ok {
		t.Errorf("ProbeShape of a whole %dx%d scene: want none of its own", fixture.Rows, fixture.Cols)
	}
	probeCall := fmt.Sprintf("tile %dx%d", probe.Rows, probe.Cols)
	for _, tc := range []struct {
		name  string
		opts  Options
		prep  model.Prep
		probe []string // the probe's calls, after the tiles'
	}{
		{"whole", Options{}, model.PrepAuto, []string{"tile 64x64"}},
		{"whole, preparation in the graph", Options{}, model.PrepGraph, []string{"whole 64x64"}},
		{"tiled", tiled, model.PrepAuto, []string{probeCall, probeCall}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClassifier(m, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			inner, err := model.NewPredictorPrep(m, "go", tc.prep)
			if err != nil {
				t.Fatal(err)
			}
			closePredictor(c)
			rec := &recordingPredictor{predictor: inner}
			c.pred = rec
			res, err := c.Run(context.Background(), Request{Scene: scene, Out: filepath.Join(dir, tc.name+".tif")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Drift == nil || res.Drift.ProbePixels != int64(fixture.Rows*fixture.Cols) {
				t.Fatalf("drift %+v: want the probe over every pixel", res.Drift)
			}
			if len(rec.calls) != res.Tiles+len(tc.probe) || !slices.Equal(rec.calls[res.Tiles:], tc.probe) {
				t.Errorf("calls %v for %d tiles: want the probe's %v after the tiles'", rec.calls, res.Tiles, tc.probe)
			}
		})
	}
}

// TestProbeShapes: the probe's own shapes over scenes of any size, with
// the model's grid and with forced tiles (where a small scene no longer
// runs whole and its probe classifies its window itself).
func TestProbeShapes(t *testing.T) {
	// What it checks is the network decision's alone (a fused decision
	// recovers on the host, and its probe classifies its window itself).
	m := fixture.LoadNetworkModel(t)
	for _, tc := range []struct {
		opts Options
		want []model.CallShape
	}{
		{Options{}, []model.CallShape{{Rows: 64, Cols: 128}, {Rows: 128, Cols: 64}, {Rows: 128, Cols: 128}}},
		{Options{TileSize: 20, Overlap: 8}, []model.CallShape{{Rows: 64, Cols: 64}, {Rows: 64, Cols: 128}, {Rows: 128, Cols: 64}, {Rows: 128, Cols: 128}}},
	} {
		got, err := ProbeShapes(m, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b model.CallShape) int { return cmp.Or(a.Rows-b.Rows, a.Cols-b.Cols) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("tile size %d: probe shapes %v, want %v", tc.opts.TileSize, got, tc.want)
		}
	}
}

// TestClassifyDriftProbeThinSwath: a scene whose data are a thin diagonal
// swath that misses every window of the probe's grid (drift.ProbeWindows)
// still gets a probe, on the window around the valid pixel nearest the
// centre (drift.ProbeCandidates), instead of NaN figures; two tile grids
// (the model's own and 256 px tiles) find the same window.
func TestClassifyDriftProbeThinSwath(t *testing.T) {
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	const rows, cols = 900, 900
	scene := writeSynthScene(t, filepath.Join(dir, "scene.tif"), rows, cols, m.Bands(), 3, 5)
	// 40 px across the diagonal, between the grid windows' reach (their
	// centres lie 300 px apart and reach 95 px along r-c either way).
	inside := func(r, c int) bool { return r-c >= 130 && r-c < 170 }
	mask := make([]float32, rows*cols)
	for r := range rows {
		for c := range cols {
			if inside(r, c) {
				mask[r*cols+c] = 1
			}
		}
	}
	for _, w := range drift.ProbeWindows(rows, cols) {
		for r := w.Row; r < w.Row+w.Rows; r++ {
			for c := w.Col; c < w.Col+w.Cols; c++ {
				if inside(r, c) {
					t.Fatalf("grid window %v holds swath pixel (%d,%d): the test needs a swath they all miss", w, r, c)
				}
			}
		}
	}
	maskPath := filepath.Join(dir, "mask.tif")
	if err := fixture.WriteFloat32(maskPath, rows, cols, 1, mask, fixture.GeoRef, -1); err != nil {
		t.Fatal(err)
	}
	var got []*drift.Report
	for _, opts := range []Options{{}, {TileSize: 256, Overlap: 32}} {
		c, err := NewClassifier(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(context.Background(), Request{Scene: scene, Mask: maskPath, Out: filepath.Join(dir, fmt.Sprintf("out%d.tif", opts.TileSize))})
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		d := res.Drift
		if d == nil || d.ProbePixels == 0 {
			t.Fatalf("tile size %d: drift %+v: want the probe on the swath", opts.TileSize, d)
		}
		for _, f := range drift.Figures() {
			if math.IsNaN(f.Value(*d)) {
				t.Errorf("tile size %d: %s is NaN (%v): want every figure measured on the swath", opts.TileSize, f.Key, d.Reasons)
			}
		}
		got = append(got, d)
	}
	if got[0].ProbePixels != got[1].ProbePixels || got[0].RecalibrationChangeShare != got[1].RecalibrationChangeShare {
		t.Errorf("whole-image probe %d pixels, %g changed; tiled %d, %g: want the same window", got[0].ProbePixels,
			got[0].RecalibrationChangeShare, got[1].ProbePixels, got[1].RecalibrationChangeShare)
	}
}
