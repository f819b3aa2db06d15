// Package pipelinetest makes small georeferenced scenes and a tiny trained
// model for tests of batch processing (this package's users: pipelines and
// cmd/pnec tests). Everything is deterministic: the same seed gives the same
// scene and, trained on the pure-Go backend, the same model.
package pipelinetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
)

// Scene sizes of the fixture: small enough that a batch of several scenes
// runs in seconds on the Go backend.
const (
	Rows, Cols, Bands, Classes = 32, 40, 8, 3
	NoData                     = -9999.0
)

// GeoRef is the fixture scenes' placement: 10 m pixels in UTM zone 31N.
var GeoRef = geo.GeoRef{GeoTransform: [6]float64{500000, 10, 0, 4800000, 0, -10}, EPSG: 32631}

// classOf is the fixture's class layout: three blocks with a diagonal edge.
func classOf(r, c int) int {
	switch {
	case c < 14:
		return 1
	case r+c/2 < 30:
		return 2
	default:
		return 3
	}
}

// SceneData returns a fixture scene's pixels ([Rows][Cols][Bands]) and class labels; seed varies the noise.
func SceneData(seed uint64) ([]float32, []int32) {
	rng := rand.New(rand.NewPCG(seed, 7))
	data := make([]float32, Rows*Cols*Bands)
	labels := make([]int32, Rows*Cols)
	for r := 0; r < Rows; r++ {
		for c := 0; c < Cols; c++ {
			k := classOf(r, c)
			labels[r*Cols+c] = int32(k)
			for b := 0; b < Bands; b++ {
				v := 1000 + 600*math.Sin(float64(k)*1.7+float64(b)*0.9) + 40*rng.NormFloat64()
				data[(r*Cols+c)*Bands+b] = float32(v)
			}
		}
	}
	return data, labels
}

// WriteScene writes a fixture scene as a Float32 GeoTIFF (nodata -9999) at path.
func WriteScene(path string, seed uint64) error {
	data, _ := SceneData(seed)
	return WriteRaster(path, Rows, Cols, Bands, data)
}

// WriteRaster writes pixel-interleaved data as a Float32 GeoTIFF with the fixture's georeference.
func WriteRaster(path string, rows, cols, bands int, data []float32) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	nd := NoData
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{Cols: cols, Rows: rows, Bands: bands, DataType: geo.Float32, GeoRef: GeoRef, NoData: &nd})
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.WriteWindow(geo.Window{Cols: cols, Rows: rows}, data); err != nil {
		return err
	}
	return w.Commit()
}

var (
	once     sync.Once
	modelDir string
	modelErr error
)

// ModelPath trains (once per process) a tiny model on the fixture scene with
// the Go backend and returns the path of its file, in a directory removed by
// Cleanup.
func ModelPath() (string, error) {
	once.Do(func() {
		modelDir, modelErr = os.MkdirTemp("", "pnec-pipelinetest-")
		if modelErr != nil {
			return
		}
		data, labels := SceneData(1)
		cfg := model.DefaultConfig()
		cfg.Hidden, cfg.HeadDim, cfg.DState, cfg.Chunk = 8, 4, 4, 16
		cfg.Epochs, cfg.ECWarmupEpochs, cfg.LearningRate = 30, 5, 3e-3
		valid := make([]bool, Rows*Cols)
		for i := range valid {
			valid[i] = true
		}
		m, err := model.Train(context.Background(), model.Scene{Rows: Rows, Cols: Cols, Bands: Bands, Data: data, Valid: valid}, labels,
			model.TrainOptions{Config: cfg, TrainPerClass: 20, Backend: "go",
				ClassNames: map[int]string{1: "water", 2: "forest", 3: "crop"}})
		if err != nil {
			modelErr = fmt.Errorf("train fixture model: %w", err)
			return
		}
		modelErr = m.Save(filepath.Join(modelDir, "tiny.pnec"))
	})
	return filepath.Join(modelDir, "tiny.pnec"), modelErr
}

// Cleanup removes the trained model's directory (call from TestMain).
func Cleanup() {
	if modelDir != "" {
		os.RemoveAll(modelDir)
	}
}
