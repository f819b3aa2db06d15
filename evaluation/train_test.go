package evaluation

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
)

// writeTIFF writes a pixel-interleaved [rows][cols][bands] raster.
func writeTIFF(t testing.TB, path string, rows, cols, bands int, dt geo.DataType, data []float32, nodata *float64) {
	t.Helper()
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{Cols: cols, Rows: rows, Bands: bands, DataType: dt, NoData: nodata})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteWindow(geo.Window{Cols: cols, Rows: rows}, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// tinyScene is a small synthetic scene of three classes in blocks, each
// class a distinct spectrum plus noise, with labels on every pixel.
type tinyScene struct {
	rows, cols, bands int
	data              []float32
	labels            []float32 // class values 1..3 (row-major)
}

// scene is ts as a model scene and its labels as the training takes them.
func (ts tinyScene) scene() (model.Scene, []int32) {
	labels := make([]int32, len(ts.labels))
	for i, v := range ts.labels {
		labels[i] = int32(v)
	}
	return model.Scene{Rows: ts.rows, Cols: ts.cols, Bands: ts.bands, Data: ts.data}, labels
}

func newTinyScene(rows, cols, bands int, seed uint64) tinyScene {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	s := tinyScene{rows: rows, cols: cols, bands: bands,
		data: make([]float32, rows*cols*bands), labels: make([]float32, rows*cols)}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			k := 1
			switch {
			case c >= cols/2 && r < rows/2:
				k = 2
			case r >= rows/2:
				k = 3
			}
			i := r*cols + c
			s.labels[i] = float32(k)
			for b := 0; b < bands; b++ {
				x := float64(b) / float64(bands)
				v := 1000 + 400*math.Sin(float64(k)*2.1*x+float64(k)) + 30*rng.NormFloat64()
				s.data[i*bands+b] = float32(math.Round(v))
			}
		}
	}
	return s
}

func (s tinyScene) write(t testing.TB, dir string) (scene, labels string) {
	scene, labels = filepath.Join(dir, "scene.tif"), filepath.Join(dir, "labels.tif")
	writeTIFF(t, scene, s.rows, s.cols, s.bands, geo.Int16, s.data, nil)
	writeTIFF(t, labels, s.rows, s.cols, 1, geo.Byte, s.labels, nil)
	return scene, labels
}

// tinyConfig trains in seconds on the pure-Go backend.
func tinyConfig(epochs int) model.Config {
	c := model.DefaultConfig()
	c.Hidden = 32
	c.Epochs = epochs
	c.ECWarmupEpochs = 2
	c.LearningRate = 3e-3
	c.Recovery = model.RecoveryParams{Window: 3, Eta: 1}
	return c
}

func TestParseClassNames(t *testing.T) {
	cases := []struct {
		name, in string
		want     map[int]string
		wantErr  bool
	}{
		{"spaces and comments", "# SalinasA\n1 Brocoli_green_weeds_1\n\n10 Corn senesced green weeds\n", map[int]string{1: "Brocoli_green_weeds_1", 10: "Corn senesced green weeds"}, false},
		{"csv and tabs", "1,tree\n2\twater\n3=dirt\n4: road\n", map[int]string{1: "tree", 2: "water", 3: "dirt", 4: "road"}, false},
		{"quoted", "5,\"Painted metal sheets\"\n", map[int]string{5: "Painted metal sheets"}, false},
		{"no name", "1\n", nil, true},
		{"value zero", "0 background\n", nil, true},
		{"not a number", "x tree\n", nil, true},
		{"duplicate", "1 a\n1 b\n", nil, true},
		{"empty name", "1,\n", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseClassNames(strings.NewReader(tc.in), "names.txt")
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				if !strings.HasPrefix(err.Error(), "names.txt line ") {
					t.Errorf("error %q does not name the file and line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("class %d: got %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func FuzzParseClassNames(f *testing.F) {
	f.Add("1 a\n2,b\n")
	f.Add("# c\n3\tx y\n")
	f.Add("65536 big\n")
	f.Fuzz(func(t *testing.T, in string) {
		names, err := ParseClassNames(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		for v, n := range names {
			if v < 1 || v > math.MaxUint16 || n == "" {
				t.Fatalf("accepted class %d name %q", v, n)
			}
		}
	})
}

func TestReadLabelsErrors(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	good := filepath.Join(dir, "good.tif")
	writeTIFF(t, good, 4, 5, 1, geo.Byte, make([]float32, 20), nil)
	two := filepath.Join(dir, "two.tif")
	writeTIFF(t, two, 4, 5, 2, geo.Byte, make([]float32, 40), nil)
	frac := filepath.Join(dir, "frac.tif")
	fv := make([]float32, 20)
	fv[7] = 1.5
	writeTIFF(t, frac, 4, 5, 1, geo.Float32, fv, nil)
	neg := filepath.Join(dir, "neg.tif")
	nv := make([]float32, 20)
	nv[3] = -2
	writeTIFF(t, neg, 4, 5, 1, geo.Int16, nv, nil)
	nod := filepath.Join(dir, "nodata.tif")
	ndv := make([]float32, 20)
	for i := range ndv {
		ndv[i] = 2
	}
	ndv[0] = 255
	nd := 255.0
	writeTIFF(t, nod, 4, 5, 1, geo.Byte, ndv, &nd)

	if _, err := ReadLabels(ctx, good, 4, 5); err != nil {
		t.Fatalf("good labels: %v", err)
	}
	got, err := ReadLabels(ctx, nod, 4, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 0 || got[1] != 2 {
		t.Errorf("nodata labels: got %v..., want 0 at the nodata pixel and 2 elsewhere", got[:2])
	}
	cases := []struct {
		name, path string
		rows, cols int
		msg        string
	}{
		{"size mismatch", good, 5, 4, "5 x 4 pixels"},
		{"two bands", two, 4, 5, "2 bands"},
		{"fraction", frac, 4, 5, "holds 1.5"},
		{"negative", neg, 4, 5, "holds -2"},
		{"missing", filepath.Join(dir, "none.tif"), 4, 5, "none.tif"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadLabels(ctx, tc.path, tc.rows, tc.cols)
			if err == nil {
				t.Fatal("got nil error")
			}
			if !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q, want one line containing %q", err, tc.msg)
			}
			if tc.name != "missing" && !errors.Is(err, ErrLabels) {
				t.Errorf("got %v, want ErrLabels", err)
			}
		})
	}
}

func TestTrainAndEvaluateFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ts := newTinyScene(24, 20, 12, 1)
	scene, labels := ts.write(t, dir)
	// A fixed split: 4 pixels per class spread over the scene.
	mask := make([]float32, len(ts.labels))
	perClass := map[float32]int{}
	for i, v := range ts.labels {
		if i%29 == 3 && perClass[v] < 4 {
			mask[i] = v
			perClass[v]++
		}
	}
	maskPath := filepath.Join(dir, "train.tif")
	writeTIFF(t, maskPath, ts.rows, ts.cols, 1, geo.Byte, mask, nil)

	res, err := Train(ctx, TrainRequest{Scene: scene, Labels: labels, TrainMask: maskPath,
		Options: model.TrainOptions{Config: tinyConfig(40), Backend: "go", ClassNames: map[int]string{2: "water"}}})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Model
	if got := len(m.TrainIndices()); got != 12 {
		t.Fatalf("training pixels: got %d, want 12 (the mask's)", got)
	}
	for _, i := range m.TrainIndices() {
		if mask[i] == 0 {
			t.Fatalf("training pixel %d is not in the mask", i)
		}
	}
	if cs := m.Classes(); len(cs) != 3 || cs[1].Name != "water" || cs[0].Name != "class 1" {
		t.Fatalf("classes: got %+v, want 3 with class 2 named water and class 1 'class 1'", cs)
	}
	if res.LabelledPixels != ts.rows*ts.cols || res.Bands != ts.bands {
		t.Errorf("got %d labelled pixels and %d bands, want %d and %d", res.LabelledPixels, res.Bands, ts.rows*ts.cols, ts.bands)
	}

	ev, err := EvaluateFiles(ctx, m, scene, labels, EvalOptions{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.TestPixels != ts.rows*ts.cols-12 || ev.TrainPixelsExcluded != 12 {
		t.Fatalf("got %d test pixels, %d excluded; want %d and 12", ev.TestPixels, ev.TrainPixelsExcluded, ts.rows*ts.cols-12)
	}
	// Three well separated classes: far above chance (1/3).
	if oa := ev.Final().OA; oa < 0.8 {
		t.Errorf("OA after 40 epochs: got %.3f, want >= 0.8 (chance 0.33)", oa)
	}
	// On the training scene the spectral candidates are scored too.
	if want := len(model.ReliabilityKinds) + len(model.SpectralReliabilityKinds); len(ev.Reliability) != want {
		t.Errorf("got %d reliability rows, want %d", len(ev.Reliability), want)
	}

	// Band-count mismatch is a one-line error naming the scene.
	other := filepath.Join(dir, "other.tif")
	writeTIFF(t, other, ts.rows, ts.cols, ts.bands-2, geo.Int16, make([]float32, ts.rows*ts.cols*(ts.bands-2)), nil)
	_, err = EvaluateFiles(ctx, m, other, labels, EvalOptions{Backend: "go"})
	if !errors.Is(err, model.ErrBandCount) || !strings.Contains(err.Error(), "other.tif") {
		t.Errorf("band mismatch: got %v, want ErrBandCount naming other.tif", err)
	}
}

func TestTrainInputErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ts := newTinyScene(8, 8, 4, 2)
	scene, labels := ts.write(t, dir)
	small := filepath.Join(dir, "small.tif")
	writeTIFF(t, small, 4, 8, 1, geo.Byte, make([]float32, 32), nil)
	empty := filepath.Join(dir, "empty.tif")
	writeTIFF(t, empty, 8, 8, 1, geo.Byte, make([]float32, 64), nil)
	wrongMask := filepath.Join(dir, "wrongmask.tif")
	wm := make([]float32, 64)
	wm[0] = 3 // the labels say 1 there
	writeTIFF(t, wrongMask, 8, 8, 1, geo.Byte, wm, nil)
	cfg := tinyConfig(1)
	cases := []struct {
		name string
		req  TrainRequest
		msg  string
	}{
		{"missing scene", TrainRequest{Scene: filepath.Join(dir, "nope.tif"), Labels: labels}, "nope.tif"},
		{"labels size", TrainRequest{Scene: scene, Labels: small}, "small.tif: 8 x 4 pixels"},
		{"no labels", TrainRequest{Scene: scene, Labels: empty}, "no labelled pixel"},
		{"mask disagrees", TrainRequest{Scene: scene, Labels: labels, TrainMask: wrongMask}, "is class 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Options = model.TrainOptions{Config: cfg, Backend: "go"}
			_, err := Train(ctx, tc.req)
			if err == nil {
				t.Fatal("got nil error")
			}
			if !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q, want one line containing %q", err, tc.msg)
			}
		})
	}
}
