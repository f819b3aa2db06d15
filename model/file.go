package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"

	"github.com/pnec/pnec/internal/regular"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/internal/tempfiles"
)

// fileMagic starts every model file; the number is the format version.
// Version 4 adds the drift statistics in the network's own terms (feature
// distances to the prototype bank, the gate's uncertainty and the
// probability margin per class). Version 3 adds the network input mode and the training augmentation to
// the configuration and the training scene's drift statistics;
// version 2 is the network aligned with the reference implementation (no
// Mamba projection biases, tau itself, the differential branch's residual
// on f0, the encoder choice); version 1 files hold other weights.
const fileMagic = "PNECMDL4"

// Magics of earlier formats, refused with a message to train again.
const (
	fileMagicV1 = "PNECMDL1"
	fileMagicV2 = "PNECMDL2"
	fileMagicV3 = "PNECMDL3"
)

// ErrModelFile is returned (wrapped) for files that are not valid model files.
var ErrModelFile = errors.New("not a valid pnec model file")

// ErrNotFinite is returned (wrapped, with ErrModelFile) for a model file
// whose weights hold NaN or Inf: a diverged training, whose every output
// would be the same class.
var ErrNotFinite = errors.New("NaN or Inf among the weights (the training diverged: train the model again)")

type paramMeta struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// modelMeta is the JSON header of a model file: everything but the numbers.
type modelMeta struct {
	Format        string    `json:"format"`
	Version       string    `json:"software_version"`
	Backend       string    `json:"trained_backend"`
	Config        Config    `json:"config"`
	Bands         int       `json:"bands"`
	WavelengthsNM []float64 `json:"wavelengths_nm,omitempty"`
	// The band set and radiometry of the training scene (BandRecord); each
	// field is absent in files of earlier versions and where unknown.
	FWHMNM           []float64 `json:"fwhm_nm,omitempty"`
	WavelengthUnits  string    `json:"wavelength_units,omitempty"`
	SceneBands       int       `json:"train_scene_bands,omitempty"`
	BandsUsed        []int     `json:"bands_used,omitempty"`
	BadBands         []int     `json:"bad_bands,omitempty"`
	BandSelection    string    `json:"band_selection,omitempty"` // absent in earlier files: no selection
	Quantity         string    `json:"radiometric_quantity,omitempty"`
	QuantityScale    float64   `json:"radiometric_scale,omitempty"`
	RadiometricUnits string    `json:"radiometric_units,omitempty"`
	Classes          []Class   `json:"classes"`
	StretchLo        []float32 `json:"stretch_p2"`
	StretchHi        []float32 `json:"stretch_p98"`
	SceneRows        int       `json:"train_scene_rows"`
	SceneCols        int       `json:"train_scene_cols"`
	TrainSplit       string    `json:"train_split"` // "seed" or "mask"
	TrainPerClass    int       `json:"train_per_class,omitempty"`
	SplitSeed        int64     `json:"split_seed"`
	Seed             int64     `json:"seed"`
	TrainIndices     []int     `json:"train_indices"`
	// TrainTile is the side, pixels, of the grid's tiles the model trained
	// on (windowed training, train_window.go); absent (0) when it trained
	// on the whole scene.
	TrainTile     int         `json:"train_tile,omitempty"`
	FinalLoss     float64     `json:"final_loss"`
	TrainAccuracy float64     `json:"train_accuracy"`
	TrainSeconds  float64     `json:"train_seconds"`
	Params        []paramMeta `json:"params"`
	PrototypeRows int         `json:"prototype_rows"`
	// SpectralClasses is the dense class of each training pixel whose raw
	// spectrum is stored after the prototype bank (spectralSpectra,
	// [len][Bands]) for the spectral reliability; absent in older files.
	SpectralClasses []int     `json:"spectral_reference_classes,omitempty"`
	spectralSpectra []float32 // not JSON: binary after the prototype bank
	// GroupNormStats are the GroupNorm statistics of the inference mode
	// (see groupNormStats); absent in older files, which predict with
	// per-image statistics.
	GroupNormStats []normStat `json:"groupnorm_stats,omitempty"`
	// Provenance of the training (card.go); absent in older files.
	provenanceMeta
	// Drift holds the training scene's statistics that products measure
	// their scene's drift against (absent for a model without training
	// spectra).
	Drift *drift.Stats `json:"drift,omitempty"`
}

// encode writes the file body (without the trailing checksum).
func (m *Model) encode(w io.Writer) error {
	meta := m.meta
	meta.Format = fileMagic
	meta.Params = meta.Params[:0:0]
	for _, p := range m.params {
		meta.Params = append(meta.Params, paramMeta{p.Name, p.Shape})
	}
	meta.PrototypeRows = len(m.meta.Classes)
	hdr, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("encode model header: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString(fileMagic)
	_ = binary.Write(&buf, binary.LittleEndian, uint64(len(hdr)))
	buf.Write(hdr)
	for _, p := range m.params {
		writeFloats(&buf, p.Data)
	}
	writeFloats(&buf, m.protos)
	writeFloats(&buf, m.meta.spectralSpectra)
	_, err = w.Write(buf.Bytes())
	return err
}

func writeFloats(buf *bytes.Buffer, v []float32) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	buf.Write(b)
}

// bytes returns the whole file content and its checksum.
func (m *Model) fileBytes() ([]byte, string, error) {
	var buf bytes.Buffer
	if err := m.encode(&buf); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes(), hex.EncodeToString(sum[:]), nil
}

// Save writes the model atomically to path (temporary file beside it, then rename).
func (m *Model) Save(path string) error {
	data, sum, err := m.fileBytes()
	if err != nil {
		return fmt.Errorf("save model %s: %w", path, err)
	}
	if err := tempfiles.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("save model %s: %w", path, err)
	}
	m.checksum = sum
	return nil
}

// Load reads a model file written by Save and verifies its checksum.
func Load(path string) (*Model, error) {
	data, err := regular.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	m, err := decodeModel(data)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return m, nil
}

// LoadWithoutDrift reads a model file as Load does but leaves its drift
// statistics out unread (HasDriftStats is false until CalibrateDrift): for
// an experiment that measures them again on the training scene, from files
// whose statistics an earlier build of the same format measured otherwise.
func LoadWithoutDrift(path string) (*Model, error) {
	data, err := regular.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	m, err := decodeModelDrift(data, false)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return m, nil
}

func decodeModel(data []byte) (*Model, error) { return decodeModelDrift(data, true) }

// decodeModelDrift decodes a model file; withDrift false leaves its drift
// statistics out.
func decodeModelDrift(data []byte, withDrift bool) (*Model, error) {
	if len(data) >= len(fileMagicV1) && string(data[:len(fileMagicV1)]) == fileMagicV1 {
		return nil, fmt.Errorf("%w: model file format 1, written by an earlier pnec whose network differs; train the model again with this version", ErrModelFile)
	}
	if len(data) >= len(fileMagicV2) && string(data[:len(fileMagicV2)]) == fileMagicV2 {
		return nil, fmt.Errorf("%w: model file format 2, written by an earlier pnec without the drift statistics and input settings products now need; train the model again with this version", ErrModelFile)
	}
	if len(data) >= len(fileMagicV3) && string(data[:len(fileMagicV3)]) == fileMagicV3 {
		return nil, fmt.Errorf("%w: model file format 3, written by an earlier pnec whose drift statistics lack the network's own terms the drift verdict now measures; train the model again with this version", ErrModelFile)
	}
	if len(data) < len(fileMagic)+8+sha256.Size || string(data[:len(fileMagic)]) != fileMagic {
		return nil, fmt.Errorf("%w: bad magic or too short", ErrModelFile)
	}
	body, tail := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	sum := sha256.Sum256(body)
	if !bytes.Equal(sum[:], tail) {
		return nil, fmt.Errorf("%w: checksum mismatch (file damaged)", ErrModelFile)
	}
	n := binary.LittleEndian.Uint64(body[len(fileMagic):])
	rest := body[len(fileMagic)+8:]
	if n > uint64(len(rest)) {
		return nil, fmt.Errorf("%w: header length %d beyond end", ErrModelFile, n)
	}
	var meta modelMeta
	if err := json.Unmarshal(rest[:n], &meta); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrModelFile, err)
	}
	if !withDrift {
		meta.Drift = nil
	}
	rest = rest[n:]
	if meta.Config.Encoder == "" {
		meta.Config.Encoder = EncoderCell
	}
	// Every size the header gives is checked against the bytes that follow
	// it before anything is allocated: a header can claim any shape.
	if err := checkHeaderStrings(reflect.ValueOf(meta), "header"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModelFile, err)
	}
	if err := meta.validate(len(rest)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModelFile, err)
	}
	m := &Model{meta: meta, checksum: hex.EncodeToString(sum[:])}
	read := func(what string, count int) ([]float32, error) {
		if count < 0 || count > len(rest)/4 {
			return nil, fmt.Errorf("%w: weights truncated", ErrModelFile)
		}
		v := make([]float32, count)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
			if math.IsNaN(float64(v[i])) || math.IsInf(float64(v[i]), 0) {
				return nil, fmt.Errorf("%w: %s value %d is %g: %w", ErrModelFile, what, i, v[i], ErrNotFinite)
			}
		}
		rest = rest[4*count:]
		return v, nil
	}
	for _, pm := range meta.Params {
		v, err := read("weight "+pm.Name, numel(pm.Shape))
		if err != nil {
			return nil, err
		}
		m.params = append(m.params, param{Name: pm.Name, Shape: pm.Shape, Data: v})
	}
	protos, err := read("prototype bank", meta.PrototypeRows*meta.Config.Hidden)
	if err != nil {
		return nil, err
	}
	m.protos = protos
	if m.meta.spectralSpectra, err = read("training spectra", len(meta.SpectralClasses)*meta.Bands); err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrModelFile, len(rest))
	}
	if err := m.checkSpectra(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModelFile, err)
	}
	if err := m.checkNormStats(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModelFile, err)
	}
	if err := m.checkDrift(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModelFile, err)
	}
	return m, nil
}
