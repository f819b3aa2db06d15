package model

// The exported types of the package; the implementation lives in
// model.go (Model), predict.go (Predictor), train.go (Train), file.go (Save/Load).

import (
	"errors"
	"github.com/pnec/pnec/tiling"
	"time"
)

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

// RecoveryParams are the AvgPool recovery settings a model stores:
// P_rec = (1-Eta) P + Eta AvgPool_Window(P), applied by tiling.Recover on
// stitched probabilities.
type RecoveryParams = tiling.Recovery

// Prediction is the network's output for a scene: calibrated probabilities
// upsampled to full resolution (before recovery) and the fused uncertainty
// G~ upsampled the same way.
type Prediction struct {
	Rows, Cols, Classes int
	Prob                []float32 // [Rows][Cols][Classes], P_up = softmax(bilinear_up(Z_cal))
	Uncertainty         []float32 // [Rows][Cols], G~ in 0..1
}

// ErrBandCount is returned (wrapped) when a scene's band count differs from the model's.
var ErrBandCount = errors.New("band count does not match the model")

// Ablation selects a variant of the network for the paper's ablation study.
type Ablation string

const (
	AblationFull Ablation = "full"  // the whole model
	AblationBase Ablation = "base"  // no evidence calibration at all (Z_cal = Z_raw, no prototype evidence heads)
	AblationNoEC Ablation = "no-ec" // without evidence calibration (prototypes and losses kept, s = 0 always)
	// AblationNoRC is the paper's "w/o RC": reliability-aware calibration
	// removed, the gate fixed at G = 1 (the evidence is applied in full
	// everywhere, whatever the uncertainty).
	AblationNoRC Ablation = "no-rc"
	// AblationNoRecovery is the whole network with the AvgPool recovery
	// skipped at evaluation ("w/o recovery").
	AblationNoRecovery Ablation = "no-recovery"
)

// Encoders of the network (Config.Encoder).
const (
	// EncoderPaper is the paper's encoder: 1x1 conv + GroupNorm + SiLU at
	// full resolution, then 3x3 conv, MaxPool 2, GELU and AvgPool 2 (stride
	// 4, floor grid).
	EncoderPaper = "paper"
	// EncoderCell averages the normalised input over 4x4 cells first
	// (partial cells over their valid pixels), then runs 1x1 conv + GroupNorm
	// + SiLU and 3x3 conv + GroupNorm + SiLU on the stride-4 grid: all of its
	// work is at stride 4.
	EncoderCell = "cell"
)

// Config holds the network and training hyperparameters; DefaultConfig gives the paper's values.
type Config struct {
	Hidden         int     // D, feature channels (128; 256 is the paper's choice above 200 bands)
	DState         int     // Mamba state size (16)
	DConv          int     // causal depthwise conv width in the Mamba block (4)
	Expand         int     // Mamba inner expansion (2)
	HeadDim        int     // channels per SSD head (scalar decay per head) (64)
	Chunk          int     // SSD chunk length in tokens (64)
	Groups         int     // GroupNorm groups (4)
	DiffWindow     int     // channel-axis average pool window of the differential branch (5)
	TauInit        float64 // initial cosine scale tau (10)
	Momentum       float64 // prototype bank momentum m (0.9)
	GateFloor      float64 // rho (0.5)
	Alpha, Beta    float64 // evidence scales (1, 1)
	LambdaBranch   float64 // weight of the branch CE losses (0.1)
	LambdaProto    float64 // weight of the prototype CE loss (0.1)
	LambdaCon      float64 // weight of the consistency loss (0.02)
	ECWarmupEpochs int     // epochs with evidence calibration off (10)
	LearningRate   float64 // Adam learning rate (3e-4)
	Epochs         int     // full-image steps (200)
	Recovery       RecoveryParams
	Ablation       Ablation // full|base|no-ec|no-rc|no-recovery
	// Encoder is EncoderPaper or EncoderCell; model files without it
	// were written with the cell encoder.
	Encoder string
	// InputLevels, when not 0, quantises the stretched input to that many
	// evenly spaced values in [0,1], truncating: 256 is MambaHSI's (and
	// the PyTorch reference's) cast of 255 x to 8 bits and back. 0, the
	// default and what model files without it mean, keeps the stretched
	// values as they are.
	InputLevels int `json:",omitempty"`
}

// DefaultEncoder is the encoder of DefaultConfig (docs/model.md says why).
const DefaultEncoder = EncoderCell

// DefaultConfig returns the paper's hyperparameters.
func DefaultConfig() Config {
	return Config{
		Hidden: 128, DState: 16, DConv: 4, Expand: 2, HeadDim: 64, Chunk: 64, Groups: 4, DiffWindow: 5,
		TauInit: 10, Momentum: 0.9, GateFloor: 0.5, Alpha: 1, Beta: 1,
		LambdaBranch: 0.1, LambdaProto: 0.1, LambdaCon: 0.02,
		ECWarmupEpochs: 10, LearningRate: 3e-4, Epochs: 200,
		Recovery: RecoveryParams{Window: 9, Eta: 1},
		Ablation: AblationFull,
		Encoder:  DefaultEncoder,
	}
}

// Default split and run seeds of the paper's protocol.
const (
	DefaultTrainPerClass = 15
	DefaultSplitSeed     = 12345
	DefaultSeed          = 202501
)

// TrainOptions configures Train. Zero values take the defaults above.
type TrainOptions struct {
	Config        Config
	TrainPerClass int   // training pixels per class picked with SplitSeed (15)
	SplitSeed     int64 // (12345)
	Seed          int64 // run seed: initialisation and every other random source (202501)
	// TrainMask, when non-nil, is a fixed split: the class value at each
	// training pixel (row-major, Rows*Cols), 0 elsewhere. It overrides TrainPerClass/SplitSeed.
	TrainMask  []int32
	ClassNames map[int]string   // optional, by class value
	Colors     map[int][3]uint8 // optional, by class value; a built-in palette fills the rest
	Backend    string           // "" = default (see NewPredictor)
	Progress   func(EpochStats) // optional, called after every epoch
	// Provenance is recorded in the model file for its STAC Item (optional).
	Provenance Provenance
}

// EpochStats reports training progress.
type EpochStats struct {
	Epoch, Epochs int // Epoch counts from 1
	Loss          float64
	TrainAccuracy float64 // on the training pixels, 0..1
	Elapsed, ETA  time.Duration
}

// Version is the software version recorded in model files; the lead may set it from main.
var Version = "dev"
