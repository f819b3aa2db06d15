package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

// runCaptured runs the app on args with stdout and stderr captured.
func runCaptured(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err = app.RunContext(context.Background(), append([]string{"pnec"}, args...))
	return out.String(), errOut.String(), err
}

func writeRasterT(t *testing.T, path string, rows, cols, bands int, dt geo.DataType, data []float32) {
	t.Helper()
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{Cols: cols, Rows: rows, Bands: bands, DataType: dt})
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

// writeTinyScene writes a rows x cols scene of three block-shaped classes
// with distinct spectra, and its labels; it returns their paths.
func writeTinyScene(t *testing.T, dir string, rows, cols, bands int) (scene, labels string) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]float32, rows*cols*bands)
	lab := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			k := 1
			switch {
			case c >= cols/2 && r < rows/2:
				k = 2
			case r >= rows/2:
				k = 3
			}
			lab[r*cols+c] = float32(k)
			for b := 0; b < bands; b++ {
				x := float64(b) / float64(bands)
				data[(r*cols+c)*bands+b] = float32(math.Round(1000 + 400*math.Sin(float64(k)*2.1*x+float64(k)) + 30*rng.NormFloat64()))
			}
		}
	}
	scene, labels = filepath.Join(dir, "scene.tif"), filepath.Join(dir, "labels.tif")
	writeRasterT(t, scene, rows, cols, bands, geo.Int16, data)
	writeRasterT(t, labels, rows, cols, 1, geo.Byte, lab)
	return scene, labels
}

var tinyFlags = []string{"--hidden", "32", "--lr", "0.003", "--warmup", "2", "--window", "3", "--train-per-class", "4", "--backend", "go"}

func TestTrainEvaluateExperimentCommands(t *testing.T) {
	dir := t.TempDir()
	scene, labels := writeTinyScene(t, dir, 24, 20, 12)
	modelPath := filepath.Join(dir, "m.pnec")

	args := append([]string{"train", "--scene", scene, "--labels", labels, "--out", modelPath, "--epochs", "40", "--class-name", "2=water"}, tinyFlags...)
	stdout, stderr, err := runCaptured(t, args...)
	if err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "2 water") || !strings.Contains(stdout, "12 training of 480 labelled pixels") {
		t.Errorf("train summary: got %q, want the classes and 12 of 480 pixels", stdout)
	}
	// Beside the model, its STAC Item (machine learning model extension),
	// linking the training inputs; pnec model-item writes the same for an
	// existing model (schema validation: pipelines' TestModelItemValidates).
	checkModelItem(t, modelPath, scene)
	os.Remove(modelPath + ".json")
	if _, stderr, err := runCaptured(t, "model-item", "--model", modelPath, "-q"); err != nil {
		t.Fatalf("model-item: %v\n%s", err, stderr)
	}
	checkModelItem(t, modelPath, scene)
	// Not a terminal: plain log lines with epoch, loss, accuracy and ETA.
	for _, want := range []string{"epoch 1/40", "epoch 40/40", "loss=", "train_acc=", "eta="} {
		if !strings.Contains(stderr, want) {
			t.Errorf("train progress lacks %q:\n%s", want, stderr)
		}
	}

	stdout, stderr, err = runCaptured(t, "evaluate", "--model", modelPath, "--scene", scene, "--labels", labels, "--json", "--backend", "go")
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, stderr)
	}
	var ev struct {
		TestPixels int `json:"test_pixels"`
		Rec        struct {
			OA float64 `json:"oa"`
		} `json:"with_recovery"`
		Reliability []struct {
			Kind string `json:"kind"`
		} `json:"reliability"`
	}
	if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
		t.Fatalf("evaluate --json: %v\n%s", err, stdout)
	}
	if ev.TestPixels != 480-12 || ev.Rec.OA < 0.8 || len(ev.Reliability) != 7 {
		t.Errorf("evaluate: got %d test pixels, OA %.3f, %d reliability rows; want 468, >= 0.8 (chance 0.33), 7",
			ev.TestPixels, ev.Rec.OA, len(ev.Reliability))
	}
	stdout, _, err = runCaptured(t, "evaluate", "--model", modelPath, "--scene", scene, "--labels", labels, "--backend", "go", "--window", "5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "with recovery (window 5, eta 1)") || !strings.Contains(stdout, "error AUROC") {
		t.Errorf("evaluate text:\n%s", stdout)
	}

	args = append([]string{"experiment", "--scene", scene, "--labels", labels, "--runs", "2", "--epochs", "2", "--json", "--quiet"}, tinyFlags...)
	stdout, stderr, err = runCaptured(t, args...)
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, stderr)
	}
	var exp struct {
		Runs     int `json:"runs"`
		Variants []struct {
			Label string `json:"label"`
			Runs  []struct {
				Seed int64 `json:"seed"`
			} `json:"runs"`
		} `json:"variants"`
	}
	if err := json.Unmarshal([]byte(stdout), &exp); err != nil {
		t.Fatalf("experiment --json: %v\n%s", err, stdout)
	}
	if len(exp.Variants) != 1 || exp.Variants[0].Label != "PNEC-Mamba" || len(exp.Variants[0].Runs) != 2 ||
		exp.Variants[0].Runs[1].Seed != 202502 {
		t.Errorf("experiment: got %+v, want one PNEC-Mamba column with seeds 202501, 202502", exp)
	}
}

func TestTrainEvaluateBadInputs(t *testing.T) {
	dir := t.TempDir()
	scene, labels := writeTinyScene(t, dir, 8, 8, 6)
	small := filepath.Join(dir, "small.tif")
	writeRasterT(t, small, 4, 8, 1, geo.Byte, make([]float32, 32))
	// 65535 is the no-data value of a product with UInt16 classes: a model
	// with that class value would be refused by classify.
	bigLabel := filepath.Join(dir, "biglabel.tif")
	lab := make([]float32, 64)
	for i := range lab {
		lab[i] = float32(1 + i%2)
	}
	lab[9] = 65535
	writeRasterT(t, bigLabel, 8, 8, 1, geo.UInt16, lab)
	fewBands := filepath.Join(dir, "few.tif")
	writeRasterT(t, fewBands, 8, 8, 4, geo.Int16, make([]float32, 8*8*4))
	modelPath := filepath.Join(dir, "m.pnec")
	if _, stderr, err := runCaptured(t, append([]string{"train", "--scene", scene, "--labels", labels, "--out", modelPath, "--epochs", "1", "--quiet"}, tinyFlags...)...); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	cases := []struct {
		name string
		args []string
		msg  string
	}{
		{"missing scene", []string{"train", "--scene", filepath.Join(dir, "nope.tif"), "--labels", labels, "--out", modelPath}, "nope.tif"},
		{"labels size", []string{"train", "--scene", scene, "--labels", small, "--out", modelPath}, "small.tif: 8 x 4 pixels"},
		{"bad ablation", []string{"train", "--scene", scene, "--labels", labels, "--out", modelPath, "--ablation", "none"}, "--ablation none"},
		{"even window", []string{"train", "--scene", scene, "--labels", labels, "--out", modelPath, "--window", "4"}, "recovery window 4"},
		{"one input level", []string{"train", "--scene", scene, "--labels", labels, "--out", modelPath, "--input-levels", "1"}, "--input-levels 1"},
		{"bad class name", []string{"train", "--scene", scene, "--labels", labels, "--out", modelPath, "--class-name", "x"}, "--class-name x"},
		{"class value 65535", append([]string{"train", "--quiet", "--scene", scene, "--labels", bigLabel, "--out", filepath.Join(dir, "big.pnec"), "--epochs", "1"}, tinyFlags...),
			"biglabel.tif: pixel (row 1, col 1) holds 65535; class values are whole numbers 0..65534"},
		{"class name value 65535", []string{"train", "--scene", scene, "--labels", labels, "--out", modelPath, "--class-name", "65535=x"}, "--class-name 65535=x"},
		{"band count", []string{"evaluate", "--model", modelPath, "--scene", fewBands, "--labels", labels}, "few.tif: 4 bands, the model takes 6"},
		{"missing model", []string{"evaluate", "--model", filepath.Join(dir, "none.pnec"), "--scene", scene, "--labels", labels}, "none.pnec"},
		{"evaluate labels size", []string{"evaluate", "--model", modelPath, "--scene", scene, "--labels", small}, "small.tif: 8 x 4 pixels"},
		{"zero runs", []string{"experiment", "--scene", scene, "--labels", labels, "--runs", "0"}, "--runs 0"},
		// Refused from the memory estimate before any weight is allocated
		// (once it tried to allocate 360 GB).
		{"absurd hidden", []string{"train", "--scene", scene, "--labels", labels, "--out", modelPath, "--hidden", "100000"}, "--hidden 100000: training needs at least"},
		{"absurd hidden experiment", []string{"experiment", "--scene", scene, "--labels", labels, "--hidden", "100000", "--runs", "1"}, "--hidden 100000: training needs at least"},
	}
	// The model path is checked before training, not when saving after it.
	t.Run("out in a missing directory", func(t *testing.T) {
		out := filepath.Join(dir, "none", "m.pnec")
		_, _, err := runCaptured(t, append([]string{"train", "--scene", scene, "--labels", labels, "--out", out, "--quiet"}, tinyFlags...)...)
		if !errors.Is(err, processor.ErrBadOutput) || !strings.Contains(err.Error(), out) {
			t.Errorf("got %v, want ErrBadOutput naming %s before training", err, out)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCaptured(t, tc.args...)
			if err == nil {
				t.Fatal("got nil error")
			}
			if !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q, want one line containing %q", err, tc.msg)
			}
		})
	}
}

// checkModelItem reads the STAC Item beside modelPath: its mlm:name, the
// model asset's checksum and size, and the training scene link.
func checkModelItem(t *testing.T, modelPath, scene string) {
	t.Helper()
	b, err := os.ReadFile(modelPath + ".json")
	if err != nil {
		t.Fatalf("model STAC item: %v", err)
	}
	var item struct {
		Properties map[string]any
		Links      []map[string]string
		Assets     map[string]map[string]any
	}
	if err := json.Unmarshal(b, &item); err != nil {
		t.Fatal(err)
	}
	sum, size, err := stac.FileChecksum(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	a := item.Assets["model"]
	if item.Properties["mlm:name"] != "pnec-m" || a["file:checksum"] != sum || a["file:size"] != float64(size) || a["href"] != "m.pnec" {
		t.Errorf("model item: name %v, asset %v; want pnec-m (a valid mlm:name) and the file's checksum %s, size %d", item.Properties["mlm:name"], a, sum, size)
	}
	var linked bool
	for _, l := range item.Links {
		linked = linked || (l["rel"] == "derived_from" && l["href"] == filepath.Base(scene))
	}
	if !linked {
		t.Errorf("model item links %v: want derived_from %s", item.Links, filepath.Base(scene))
	}
}

// TestTrainLargeSceneOnTiles: a scene larger than its training tile trains
// tile by tile: refused below its estimate with a --max-memory that then
// works, and the summary says how it trained; --whole-scene with --tile is
// refused.
func TestTrainLargeSceneOnTiles(t *testing.T) {
	dir := t.TempDir()
	scene, labels := writeTinyScene(t, dir, 40, 200, 6)
	out := filepath.Join(dir, "m.pnec")
	base := []string{"train", "--scene", scene, "--labels", labels, "--out", out, "--epochs", "4", "--hidden", "32", "--backend", "go", "--tile", "64"}
	_, _, err := runCaptured(t, append(base, "--max-memory", "1M")...)
	if err == nil || !strings.Contains(err.Error(), "training needs at least") {
		t.Fatalf("--max-memory 1M: error %v, want the estimate", err)
	}
	i := strings.Index(err.Error(), "give --max-memory ")
	if i < 0 {
		t.Fatalf("refusal %q names no budget", err)
	}
	budget := strings.Fields(err.Error()[i+len("give --max-memory "):])[0]
	stdout, _, err := runCaptured(t, append(base, "--max-memory", budget, "-q")...)
	if err != nil {
		t.Fatalf("--max-memory %s (the refusal's): %v", budget, err)
	}
	stdout, _, err = runCaptured(t, append(base, "--max-memory", budget)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "trained on: tiles of 64 px") {
		t.Errorf("summary %q does not say it trained on 64 px tiles", stdout)
	}
	if _, _, err := runCaptured(t, append(base, "--whole-scene")...); err == nil || !strings.Contains(err.Error(), "--tile and --whole-scene") {
		t.Errorf("--tile with --whole-scene: error %v", err)
	}
	stdout, _, err = runCaptured(t, append(base, "--read-by-windows")...)
	if err != nil {
		t.Fatalf("--read-by-windows: %v", err)
	}
	if !strings.Contains(stdout, "trained on: tiles of 64 px, one a step, the scene read by windows") {
		t.Errorf("summary %q does not say the scene was read by windows", stdout)
	}
	if _, _, err := runCaptured(t, "train", "--scene", scene, "--labels", labels, "--out", out, "--whole-scene", "--read-by-windows"); err == nil || !strings.Contains(err.Error(), "--read-by-windows and --whole-scene") {
		t.Errorf("--read-by-windows with --whole-scene: error %v", err)
	}
}
