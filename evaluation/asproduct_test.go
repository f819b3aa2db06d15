package evaluation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/spectral"
)

// TestEvaluateScoresTheProductsMap: evaluate's final
// labels are the class band pnec classify writes for a scene the model's
// grid classifies whole (the fixture's 32 x 40, padded to 64 x 64): evaluate
// ran the network unpadded and scored another map (up to 6 OA points apart
// on half scenes).
func TestEvaluateScoresTheProductsMap(t *testing.T) {
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "scene.tif"), 4)
	out := filepath.Join(dir, "product.tif")
	c, err := processor.NewClassifier(m, processor.Options{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background(), processor.Request{Scene: scene, Out: out}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	product := readBand1(t, out)

	sc, _, err := readScene(context.Background(), scene, func(info geo.Info) (*spectral.Plan, error) { return trainPlan(info), nil })
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.NewPredictor(m, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pred, err := predictAsProduct(context.Background(), p, m, sc)
	if err != nil {
		t.Fatal(err)
	}
	K := pred.Classes
	// The class band's probabilities: fused with the spectra under the
	// default decision, then recovered, as Score does.
	prec, err := m.Decide(sc, pred.Prob)
	if err != nil {
		t.Fatal(err)
	}
	classes := m.Classes()
	differ := 0
	for i := 0; i < pred.Rows*pred.Cols; i++ {
		if got, want := float32(classes[argmaxAt(prec, K, i)].Value), product[i]; got != want {
			differ++
		}
	}
	if differ != 0 {
		t.Errorf("%d of %d pixels differ between evaluate's map and the product's class band", differ, pred.Rows*pred.Cols)
	}
}

// readBand1 reads band 1 of a raster (the product's class band).
func readBand1(t *testing.T, path string) []float32 {
	t.Helper()
	s, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	blk, err := s.ReadWindow(context.Background(), geo.Window{Cols: in.Cols, Rows: in.Rows})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, in.Rows*in.Cols)
	for i := range out {
		out[i] = blk.Data[i*in.Bands]
	}
	return out
}

// TestEvaluateScoresTiledProduct: for a
// scene the model's grid tiles (500 x 400, above the 384 px grid), the OA
// evaluate reports is the OA of the class band pnec classify writes, on
// the same labels. Evaluate predicted such a scene whole, whose map
// differs from the stitched tiles' near the seams; it now scores the
// product's class band. Fails before: the two OA differ.
func TestEvaluateScoresTiledProduct(t *testing.T) {
	const rows, cols = 400, 500
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	// The fixture's 32 x 40 pattern repeated, with the noise of another
	// seed in every copy, and its labels.
	data := make([]float32, rows*cols*fixture.Bands)
	labels := make([]float32, rows*cols)
	for br := 0; br*fixture.Rows < rows; br++ {
		for bc := 0; bc*fixture.Cols < cols; bc++ {
			d, l := fixture.SceneData(uint64(100 + br*16 + bc))
			for r := 0; r < fixture.Rows && br*fixture.Rows+r < rows; r++ {
				for c := 0; c < fixture.Cols && bc*fixture.Cols+c < cols; c++ {
					i, j := (br*fixture.Rows+r)*cols+bc*fixture.Cols+c, r*fixture.Cols+c
					labels[i] = float32(l[j])
					copy(data[i*fixture.Bands:(i+1)*fixture.Bands], d[j*fixture.Bands:(j+1)*fixture.Bands])
				}
			}
		}
	}
	scene, gt := filepath.Join(dir, "scene.tif"), filepath.Join(dir, "gt.tif")
	if err := fixture.WriteRaster(scene, rows, cols, fixture.Bands, data); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WriteFloat32(gt, rows, cols, 1, labels, fixture.GeoRef, -1); err != nil {
		t.Fatal(err)
	}
	ev, err := EvaluateFiles(context.Background(), m, scene, gt, EvalOptions{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "product.tif")
	c, err := processor.NewClassifier(m, processor.Options{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), processor.Request{Scene: scene, Out: out})
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Tiles < 2 {
		t.Fatalf("the scene ran as %d tile(s), want the grid's tiles", res.Tiles)
	}
	product := readBand1(t, out)
	right, n := 0, 0
	for i, l := range labels {
		if l == 0 {
			continue
		}
		n++
		if product[i] == l {
			right++
		}
	}
	if n != ev.TestPixels {
		t.Fatalf("%d labelled pixels, evaluate scored %d", n, ev.TestPixels)
	}
	if got, want := ev.Final().OA, float64(right)/float64(n); got != want || !ev.ScoredProduct {
		t.Errorf("evaluate's OA %.6f (scored the product: %v), the product's class band's %.6f (%d of %d right)", got, ev.ScoredProduct, want, right, n)
	}
}
