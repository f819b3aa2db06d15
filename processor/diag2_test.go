package processor

import (
	"context"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
)

func argmaxAll(p model.Prediction) []int {
	out := make([]int, p.Rows*p.Cols)
	for i := range out {
		b := 0
		for k := 0; k < p.Classes; k++ {
			if p.Prob[i*p.Classes+k] > p.Prob[i*p.Classes+b] {
				b = k
			}
		}
		out[i] = b
	}
	return out
}

func TestDiagGN(t *testing.T) {
	f := getFixture(t)
	sc, _ := geo.Open(f.scene)
	defer sc.Close()
	blk, _ := sc.ReadWindow(context.Background(), geo.Window{Cols: f.cols, Rows: f.rows})
	pr, err := model.NewPredictor(f.model, "go")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := pr.Predict(context.Background(), model.Scene{Rows: f.rows, Cols: f.cols, Bands: f.bands, Data: blk.Data, Valid: blk.Valid})
	if err != nil {
		t.Fatal(err)
	}
	wa := argmaxAll(whole)
	half := f.rows / 2 / 4 * 4
	cmp := func(name string, s model.Scene, rows int) {
		p, err := pr.Predict(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		a := argmaxAll(p)
		n, d := 0, 0
		for i := 0; i < (rows-8)*f.cols; i++ {
			if !f.valid[i] {
				continue
			}
			n++
			if a[i] != wa[i] {
				d++
			}
		}
		t.Logf("%s: top %d rows disagree on %d of %d (%.4f)", name, rows-8, d, n, float64(d)/float64(n))
	}
	// 1. Bottom half replaced by a copy of the top half: only GN statistics (and the boundary) change for the top rows.
	mod := append([]float32(nil), blk.Data...)
	mv := append([]bool(nil), blk.Valid...)
	for r := half; r < f.rows; r++ {
		src := r - half
		copy(mod[r*f.cols*f.bands:(r+1)*f.cols*f.bands], blk.Data[src*f.cols*f.bands:(src+1)*f.cols*f.bands])
		copy(mv[r*f.cols:(r+1)*f.cols], blk.Valid[src*f.cols:(src+1)*f.cols])
	}
	cmp("bottom half = copy of top", model.Scene{Rows: f.rows, Cols: f.cols, Bands: f.bands, Data: mod, Valid: mv}, half)
	// 2. Top half alone (GN stats of the top half, no bottom).
	cmp("top half alone", model.Scene{Rows: half, Cols: f.cols, Bands: f.bands, Data: blk.Data[:half*f.cols*f.bands], Valid: blk.Valid[:half*f.cols]}, half)
}
