package model

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/pnec/pnec/spectral"

	"github.com/pnec/pnec/model/internal/kernels"
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

// Recovery returns the recovery parameters stored with the model: those
// of its class band's decision.
func (m *Model) Recovery() RecoveryParams { return m.meta.Config.Recovery }

// NetworkRecovery is the recovery of the network's own decision: the
// model's where the network decides, the paper's window (with the model's
// strength) under a fused decision. The drift figures in the network's
// terms (its margins and uncertainty for these labels) judge the network's
// decision; the recalibration probe judges the class band's
// (ProbeRecalibration).
func (m *Model) NetworkRecovery() RecoveryParams {
	r := m.meta.Config.Recovery
	if m.Decision().Fused() {
		r.Window = PaperRecoveryWindow
	}
	return r
}

// TrainIndices are the row-major pixel indices of the training split, ascending.
func (m *Model) TrainIndices() []int { return slices.Clone(m.meta.TrainIndices) }

// Seed is the seed the model was trained with.
func (m *Model) Seed() int64 { return m.meta.Seed }

// Config returns the hyperparameters the model was trained with.
func (m *Model) Config() Config { return m.meta.Config }

// Backend names the backend the model was trained on.
func (m *Model) Backend() string { return m.meta.Backend }

// WavelengthsNM are the band centres recorded at training (nil when unknown).
func (m *Model) WavelengthsNM() []float64 { return slices.Clone(m.meta.WavelengthsNM) }

// BandRecord is the spectral and radiometric identity of the training
// scene the model recorded (zero values where the file says nothing).
func (m *Model) BandRecord() BandRecord {
	mt := m.meta
	return BandRecord{
		FWHMNM: slices.Clone(mt.FWHMNM), WavelengthUnits: mt.WavelengthUnits, SceneBands: mt.SceneBands,
		BandsUsed: slices.Clone(mt.BandsUsed), BadBands: slices.Clone(mt.BadBands),
		Radiometry: spectral.Radiometry{Quantity: mt.Quantity, Scale: mt.QuantityScale, Units: mt.RadiometricUnits},
		Selection:  mt.BandSelection,
	}
}

// BandSet is the model's input bands: their centres and widths (nil where
// the training scene gave none); none of them is bad.
func (m *Model) BandSet() spectral.BandSet {
	return spectral.BandSet{Bands: m.meta.Bands, CentresNM: slices.Clone(m.meta.WavelengthsNM), FWHMNM: slices.Clone(m.meta.FWHMNM)}
}

// MatchOptions are the options of spectral.Match for this model: its
// training scene when it used a subset of that scene's bands.
func (m *Model) MatchOptions(resample bool) spectral.Options {
	o := spectral.Options{Resample: resample}
	if len(m.meta.BandsUsed) > 0 {
		o.Source = &spectral.Source{Bands: m.meta.SceneBands, Used: slices.Clone(m.meta.BandsUsed)}
	}
	return o
}

// Radiometry is what the training scene's values measured.
func (m *Model) Radiometry() spectral.Radiometry { return m.BandRecord().Radiometry }

// BandPlan says how to make the model's input bands from a scene's bands
// (spectral.Match with the model's band set and training scene), and
// carries the radiometric conversion from the scene's values to the
// model's, if one is needed, as the plan's gain (spectral.ConvertRadiometry;
// its sentence joins the plan's warnings). With resample false a scene
// whose bands are not the model's is refused (*spectral.MismatchError);
// with resample true they are computed from the scene's (Gaussian
// response functions), unless a model band is not covered. A model
// trained on bands chosen for several sensors (BandRecord.Selection)
// resamples whatever resample says. The errors wrap spectral's sentinels
// and ErrBandCount and do not name the scene.
func (m *Model) BandPlan(scene spectral.BandSet, rad spectral.Radiometry, resample bool) (spectral.Plan, error) {
	resample = resample || m.meta.BandSelection != ""
	gain, note, err := spectral.ConvertRadiometry(m.Radiometry(), rad)
	if err != nil {
		return spectral.Plan{}, err
	}
	p, err := spectral.Match(m.BandSet(), scene, m.MatchOptions(resample))
	if err != nil {
		return spectral.Plan{}, err
	}
	if gain != 1 {
		p.Gain = float32(gain)
		p.Warnings = append(p.Warnings, note)
	}
	return p, nil
}

// Version is the software version the model file was written by.
func (m *Model) Version() string { return m.meta.Version }

// TrainSeconds is the wall time training took.
func (m *Model) TrainSeconds() float64 { return m.meta.TrainSeconds }

// TrainSceneSize is the rows and columns of the scene the model was trained on
// (TrainIndices index that grid).
func (m *Model) TrainSceneSize() (rows, cols int) { return m.meta.SceneRows, m.meta.SceneCols }

// inputSpec is how m turns raw spectra into the network's input.
func (m *Model) inputSpec() inputSpec {
	return newInputSpec(m.meta.Config.Input, m.meta.Config.InputLevels, m.meta.StretchLo, m.meta.StretchHi)
}

// EstimatePredictBytes is the peak memory, in bytes, that Predict needs for
// a rows x cols scene on the Go backend: the normalised cell means, the
// stride-4 activations (about 60 D-wide maps live at once in the two Mamba
// branches, the SSD blocks and the heads) and the full-resolution outputs
// with their upsampling intermediates. The caller's scene is not counted.
func (m *Model) EstimatePredictBytes(rows, cols int) int64 {
	return predictBytes(m.meta.Config, m.meta.Bands, len(m.meta.Classes), rows, cols)
}

func predictBytes(cfg Config, bands, classes, rows, cols int) int64 {
	cells := int64(padTo(rows)/Stride) * int64(padTo(cols)/Stride)
	d, b, k := int64(cfg.Hidden), int64(inputChannels(cfg.Input, bands)), int64(classes)
	full := int64(rows) * int64(cols)
	est := 4*(cells*b+cells*d*60+full*(3*k+2)) + 64<<20
	if cfg.Encoder == EncoderPaper {
		if fullResInput(cfg) {
			// The full-resolution stage on pnec's kernels (kernels.FullRes) holds, per
			// worker, six rows of the stretched input, of the embedding and
			// of its activation, and the Winograd transforms of a chunk of
			// cells; then F0 on the grid, which the graph takes as input.
			workers := int64(runtime.GOMAXPROCS(0))
			perWorker := 4*6*int64(cols)*(b+3*d) + 2*4*36*kernels.FullResChunkCells*d
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

// trainActivationFactor is how many times the inference maps of
// predictBytes a training step keeps: the forward pass's activations for
// the backward pass, and the backward pass's own.
const trainActivationFactor = 3

// trainBytes is a lower bound, in bytes, of the memory Train needs for a
// rows x cols scene with the dimensions d and cfg (defaults filled): the
// weights with their gradients and Adam's two moments (4 float32 copies),
// and the network's activations on the whole scene, kept for the backward
// pass (trainActivationFactor times the inference maps). Train refuses a
// run above TrainOptions.MaxMemoryBytes with it, before it allocates
// anything large.
func trainBytes(d dims, cfg Config, rows, cols int) int64 {
	var weights int64
	for _, p := range initParams(d, cfg, nil) {
		n := int64(1)
		for _, s := range p.Shape {
			n *= int64(s)
		}
		weights += n
	}
	return 4*4*weights + trainActivationFactor*predictBytes(cfg, d.Bands, d.K, rows, cols)
}

// MemoryError says that a training run would need more memory than it may
// use (TrainOptions.MaxMemoryBytes).
type MemoryError struct {
	NeedBytes, LimitBytes int64
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("training needs at least %.1f GB, more than the %.1f GB it may use", float64(e.NeedBytes)/1e9, float64(e.LimitBytes)/1e9)
}

// CheckBands returns a *BandCountError when a scene named scene with bands
// bands does not fit the model, else nil.
func (m *Model) CheckBands(scene string, bands int) error {
	if bands != m.meta.Bands {
		return &BandCountError{Scene: scene, Bands: bands, ModelBands: m.meta.Bands}
	}
	return nil
}

// sceneCheck verifies that s fits the model.
func (m *Model) sceneCheck(s Scene) error {
	if err := checkScene(s); err != nil {
		return err
	}
	if err := m.CheckBands("", s.Bands); err != nil {
		return err
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
