package model

// NOTE: contract file written first so that other packages can compile
// against it; the model implementation replaces the stub bodies (and may
// move them to other files), keeping these names and meanings.

import (
	"context"
	"errors"
)

var errStub = errors.New("model: not implemented yet")

// Stride is the network's output stride: its logits live on a grid of
// ceil(rows/Stride) x ceil(cols/Stride) cells.
const Stride = 4

// Class is one land-cover class of a model.
type Class struct {
	Value int // value in the label rasters and the product's class band (1..)
	Name  string
	Color [3]uint8
}

// Scene is a scene (or tile) in memory: Data is pixel-interleaved
// [Rows][Cols][Bands] raw values as read (the model normalises them itself),
// Valid[r*Cols+c] false for nodata pixels.
type Scene struct {
	Rows, Cols, Bands int
	Data              []float32
	Valid             []bool
	WavelengthsNM     []float64 // optional, per band
}

// RecoveryParams are the AvgPool recovery settings: P_rec = (1-Eta) P + Eta AvgPool_Window(P).
type RecoveryParams struct {
	Window int     // odd window side in pixels (default 9)
	Eta    float64 // strength in 0..1 (default 1.0)
}

// Prediction is the network's output for a scene: calibrated probabilities
// upsampled to full resolution (before recovery) and the fused uncertainty
// G~ upsampled the same way.
type Prediction struct {
	Rows, Cols, Classes int
	Prob                []float32 // [Rows][Cols][Classes], P_up = softmax(bilinear_up(Z_cal))
	Uncertainty         []float32 // [Rows][Cols], G~ in 0..1
}

// Model is a trained PNEC-Mamba classifier with everything needed to apply it.
type Model struct{}

// Load reads a model file written by Save.
func Load(path string) (*Model, error) { return nil, errStub }

// Save writes the model atomically to path.
func (m *Model) Save(path string) error { return errStub }

// Bands is the number of input bands the model takes.
func (m *Model) Bands() int { return 0 }

// Classes lists the model's classes in dense index order (index k of Prediction.Prob is Classes()[k]).
func (m *Model) Classes() []Class { return nil }

// Checksum identifies the model file's content (hex SHA-256); products cite it.
func (m *Model) Checksum() string { return "" }

// Recovery returns the recovery parameters stored with the model.
func (m *Model) Recovery() RecoveryParams { return RecoveryParams{Window: 9, Eta: 1} }

// EstimatePredictBytes is the peak memory, in bytes, that Predict needs for a rows x cols scene.
func (m *Model) EstimatePredictBytes(rows, cols int) int64 { return 0 }

// Predictor runs a model on one backend; compiled executables are reused for scenes of the same shape.
type Predictor struct{}

// NewPredictor prepares m on backend ("" = default: XLA when a PJRT plugin is installed, else "go").
func NewPredictor(m *Model, backend string) (*Predictor, error) { return nil, errStub }

// Backend names the backend in use.
func (p *Predictor) Backend() string { return "" }

// Predict runs the network on s.
func (p *Predictor) Predict(ctx context.Context, s Scene) (Prediction, error) {
	return Prediction{}, errStub
}

// Close releases the backend.
func (p *Predictor) Close() error { return nil }
