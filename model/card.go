package model

import "slices"

// Provenance is where a model came from, as pnec train knew it: recorded
// in the model file so that the model's STAC Item (pnec model-item) can
// link the training data and date the model.
type Provenance struct {
	// Scene, Labels and TrainMask are the training inputs as given (GDAL
	// dataset names or paths; TrainMask "" for a seeded split). No time is
	// recorded: the same inputs and seeds give the same file (checksum).
	Scene, Labels, TrainMask string
}

// provenanceMeta is Provenance in the model file's header (omitted when
// empty, so files without it read as before).
type provenanceMeta struct {
	TrainScene    string `json:"train_scene,omitempty"`
	TrainLabels   string `json:"train_labels,omitempty"`
	TrainMaskFile string `json:"train_mask,omitempty"`
}

func (m *modelMeta) setProvenance(p Provenance) {
	m.TrainScene, m.TrainLabels, m.TrainMaskFile = p.Scene, p.Labels, p.TrainMask
}

// Provenance is the training provenance the model file records (zero
// fields for files written before it was recorded).
func (m *Model) Provenance() Provenance {
	return Provenance{Scene: m.meta.TrainScene, Labels: m.meta.TrainLabels, TrainMask: m.meta.TrainMaskFile}
}

// TrainAccuracy is the accuracy on the training pixels after the last
// epoch, 0..1 (not a test accuracy: see pnec evaluate).
func (m *Model) TrainAccuracy() float64 { return m.meta.TrainAccuracy }

// FinalLoss is the training loss after the last epoch.
func (m *Model) FinalLoss() float64 { return m.meta.FinalLoss }

// Stretch is the per-band normalisation the model applies to raw input
// values: (v - lo) / (hi - lo), clipped to 0..1; lo and hi are the 2nd
// and 98th percentiles of the training scene's valid pixels.
func (m *Model) Stretch() (lo, hi []float32) {
	return slices.Clone(m.meta.StretchLo), slices.Clone(m.meta.StretchHi)
}

// ParameterCount is the number of the network's weights plus the
// prototype bank's values.
func (m *Model) ParameterCount() int64 {
	n := int64(len(m.protos))
	for _, p := range m.params {
		n += int64(len(p.Data))
	}
	return n
}
