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

// TestEvaluateScoresTheProductsMap (issue 46, item 21): evaluate's final
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
