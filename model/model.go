package model

import (
	"fmt"
	"math"
	"runtime"
	"slices"
)

// Model is a trained PNEC-Mamba classifier with everything needed to apply
// it: weights, prototype bank, normalisation statistics, classes and the
// training record. It is immutable once trained or loaded.
type Model struct {
	meta     modelMeta
	params   paramSet
	protos   []float32 // [K][D] prototype bank, L2-normalised rows
	checksum string
}

// Bands is the number of input bands the model takes.
func (m *Model) Bands() int { return m.meta.Bands }

// Classes lists the model's classes in dense index order (index k of Prediction.Prob is Classes()[k]).
func (m *Model) Classes() []Class { return slices.Clone(m.meta.Classes) }

// Checksum identifies the model file's content (hex SHA-256 of the file
// body); products cite it. It is set by Train, Save and Load.
func (m *Model) Checksum() string { return m.checksum }

// Recovery returns the recovery parameters stored with the model.
func (m *Model) Recovery() RecoveryParams { return m.meta.Config.Recovery }

// TrainIndices are the row-major pixel indices of the training split, ascending.
func (m *Model) TrainIndices() []int { return slices.Clone(m.meta.TrainIndices) }

// Config returns the hyperparameters the model was trained with.
func (m *Model) Config() Config { return m.meta.Config }

// Backend names the backend the model was trained on.
func (m *Model) Backend() string { return m.meta.Backend }

// WavelengthsNM are the band centres recorded at training (nil when unknown).
func (m *Model) WavelengthsNM() []float64 { return slices.Clone(m.meta.WavelengthsNM) }

// Version is the software version the model file was written by.
func (m *Model) Version() string { return m.meta.Version }

// TrainSeconds is the wall time training took.
func (m *Model) TrainSeconds() float64 { return m.meta.TrainSeconds }

// TrainSceneSize is the rows and columns of the scene the model was trained on
// (TrainIndices index that grid).
func (m *Model) TrainSceneSize() (rows, cols int) { return m.meta.SceneRows, m.meta.SceneCols }

// EstimatePredictBytes is the peak memory, in bytes, that Predict needs for
// a rows x cols scene on the Go backend: the normalised cell means, the
// stride-4 activations (about 60 D-wide maps live at once in the two Mamba
// branches, the SSD blocks and the heads) and the full-resolution outputs
// with their upsampling intermediates. The caller's scene is not counted.
func (m *Model) EstimatePredictBytes(rows, cols int) int64 {
	cells := int64(padTo(rows)/Stride) * int64(padTo(cols)/Stride)
	d, b, k := int64(m.meta.Config.Hidden), int64(m.meta.Bands), int64(len(m.meta.Classes))
	full := int64(rows) * int64(cols)
	est := 4*(cells*b+cells*d*60+full*(3*k+2)) + 64<<20
	if m.meta.Config.Encoder == EncoderPaper {
		if fullResAvailable(m.meta.Config.Hidden) {
			// The full-resolution stage on pnec's kernels (fullRes) holds, per
			// worker, six rows of the stretched input, of the embedding and
			// of its activation, and the Winograd transforms of a chunk of
			// cells; then F0 on the grid, which the graph takes as input.
			workers := int64(runtime.GOMAXPROCS(0))
			perWorker := 4*6*int64(cols)*(b+3*d) + 2*4*36*frChunkCells*d
			est += workers*perWorker + 2*4*cells*d
		} else {
			// The paper's encoder in the graph works at full resolution: the
			// stretched input and, in the 1x1 and 3x3 convolutions, about 90
			// D-wide maps per pixel in this estimate's units (processor
			// scales it by its calibrated NetworkFactor). Measured with pnec
			// classify of a 512x512x50 scene, D = 128: planned 722 MiB /
			// actual 759 MiB at --max-memory 1G, 1331 / 1223 MiB at 2G
			// (without this term a paper model peaked at 2.4 GB under a 1 GB
			// budget).
			est += 4 * full * (2*b + 90*d)
		}
	}
	return est
}

// sceneCheck verifies that s fits the model.
func (m *Model) sceneCheck(s Scene) error {
	if err := checkScene(s); err != nil {
		return err
	}
	if s.Bands != m.meta.Bands {
		return fmt.Errorf("scene has %d bands, model %d: %w", s.Bands, m.meta.Bands, ErrBandCount)
	}
	return nil
}

// palette gives class colours when none are supplied (value-1 indexes it).
var palette = [][3]uint8{
	{230, 25, 75}, {60, 180, 75}, {255, 225, 25}, {0, 130, 200}, {245, 130, 48},
	{145, 30, 180}, {70, 240, 240}, {240, 50, 230}, {210, 245, 60}, {250, 190, 212},
	{0, 128, 128}, {220, 190, 255}, {170, 110, 40}, {255, 250, 200}, {128, 0, 0},
	{170, 255, 195}, {128, 128, 0}, {255, 215, 180}, {0, 0, 128}, {128, 128, 128},
}

// PaletteColor is the built-in colour of class value v.
func PaletteColor(v int) [3]uint8 {
	if v < 1 {
		return [3]uint8{0, 0, 0}
	}
	return palette[(v-1)%len(palette)]
}

// normStat is the stored per-group mean and variance of one GroupNorm call
// (Key is normKey's name), used by Predict in inference mode.
type normStat struct {
	Key  string    `json:"layer"`
	Mean []float32 `json:"mean"`
	Var  []float32 `json:"var"`
}

// FixedNorm reports whether the model stores GroupNorm statistics, so that
// Predict normalises every scene and tile identically (inference mode).
// Models saved before the statistics existed normalise each input with its
// own statistics, and tiles of a scene then see slightly different networks.
func (m *Model) FixedNorm() bool { return len(m.meta.GroupNormStats) > 0 }

// checkNormStats verifies stored GroupNorm statistics (none is valid).
func (m *Model) checkNormStats() error {
	seen := map[string]bool{}
	for _, st := range m.meta.GroupNormStats {
		if seen[st.Key] {
			return fmt.Errorf("group norm statistics for %q twice", st.Key)
		}
		seen[st.Key] = true
		if len(st.Mean) != m.meta.Config.Groups || len(st.Var) != m.meta.Config.Groups {
			return fmt.Errorf("group norm statistics for %q have %d/%d values, want %d groups", st.Key, len(st.Mean), len(st.Var), m.meta.Config.Groups)
		}
		for g := range st.Mean {
			if v := float64(st.Var[g]); math.IsNaN(float64(st.Mean[g])) || math.IsInf(float64(st.Mean[g]), 0) || !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("group norm statistics for %q group %d: mean %g, variance %g", st.Key, g, st.Mean[g], st.Var[g])
			}
		}
	}
	return nil
}
