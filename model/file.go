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
	"os"

	"github.com/pnec/pnec/internal/tempfiles"
)

// fileMagic starts every model file; the number is the format version.
// Version 3 adds the network input mode and the training augmentation to
// the configuration and the training scene's drift statistics (issue 21);
// version 2 is the network aligned with the reference implementation (no
// Mamba projection biases, tau itself, the differential branch's residual
// on f0, the encoder choice); version 1 files hold other weights.
const fileMagic = "PNECMDL3"

// Magics of earlier formats, refused with a message to train again.
const (
	fileMagicV1 = "PNECMDL1"
	fileMagicV2 = "PNECMDL2"
)

// ErrModelFile is returned (wrapped) for files that are not valid model files.
var ErrModelFile = errors.New("not a valid pnec model file")

type paramMeta struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// modelMeta is the JSON header of a model file: everything but the numbers.
type modelMeta struct {
	Format        string      `json:"format"`
	Version       string      `json:"software_version"`
	Backend       string      `json:"trained_backend"`
	Config        Config      `json:"config"`
	Bands         int         `json:"bands"`
	WavelengthsNM []float64   `json:"wavelengths_nm,omitempty"`
	Classes       []Class     `json:"classes"`
	StretchLo     []float32   `json:"stretch_p2"`
	StretchHi     []float32   `json:"stretch_p98"`
	SceneRows     int         `json:"train_scene_rows"`
	SceneCols     int         `json:"train_scene_cols"`
	TrainSplit    string      `json:"train_split"` // "seed" or "mask"
	TrainPerClass int         `json:"train_per_class,omitempty"`
	SplitSeed     int64       `json:"split_seed"`
	Seed          int64       `json:"seed"`
	TrainIndices  []int       `json:"train_indices"`
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
	// Drift holds the training scene's statistics that products measure
	// their scene's drift against (absent for a model without training
	// spectra).
	Drift *driftStats `json:"drift,omitempty"`
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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	m, err := decodeModel(data)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return m, nil
}

func decodeModel(data []byte) (*Model, error) {
	if len(data) >= len(fileMagicV1) && string(data[:len(fileMagicV1)]) == fileMagicV1 {
		return nil, fmt.Errorf("%w: model file format 1, written by an earlier pnec whose network differs; train the model again with this version", ErrModelFile)
	}
	if len(data) >= len(fileMagicV2) && string(data[:len(fileMagicV2)]) == fileMagicV2 {
		return nil, fmt.Errorf("%w: model file format 2, written by an earlier pnec without the drift statistics and input settings products now need; train the model again with this version", ErrModelFile)
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
		return nil, fmt.Errorf("%w: header: %v", ErrModelFile, err)
	}
	rest = rest[n:]
	if meta.Config.Encoder == "" {
		meta.Config.Encoder = EncoderCell
	}
	m := &Model{meta: meta, checksum: hex.EncodeToString(sum[:])}
	read := func(count int) ([]float32, error) {
		if 4*count > len(rest) {
			return nil, fmt.Errorf("%w: weights truncated", ErrModelFile)
		}
		v := make([]float32, count)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
		}
		rest = rest[4*count:]
		return v, nil
	}
	for _, pm := range meta.Params {
		v, err := read(numel(pm.Shape))
		if err != nil {
			return nil, err
		}
		m.params = append(m.params, param{Name: pm.Name, Shape: pm.Shape, Data: v})
	}
	protos, err := read(meta.PrototypeRows * meta.Config.Hidden)
	if err != nil {
		return nil, err
	}
	m.protos = protos
	if m.meta.spectralSpectra, err = read(len(meta.SpectralClasses) * meta.Bands); err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrModelFile, len(rest))
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModelFile, err)
	}
	if err := m.checkSpectra(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModelFile, err)
	}
	if err := m.checkNormStats(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModelFile, err)
	}
	if err := m.checkDrift(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModelFile, err)
	}
	return m, nil
}

// check verifies that the stored weights match the network the header describes.
func (m *Model) check() error {
	d, err := makeDims(m.meta.Config, m.meta.Bands, len(m.meta.Classes))
	if err != nil {
		return err
	}
	want := initParams(d, m.meta.Config, nil)
	if len(want) != len(m.params) {
		return fmt.Errorf("%d weight tensors, want %d", len(m.params), len(want))
	}
	for i, p := range want {
		if p.Name != m.params[i].Name || numel(p.Shape) != numel(m.params[i].Shape) {
			return fmt.Errorf("weight %d is %s %v, want %s %v", i, m.params[i].Name, m.params[i].Shape, p.Name, p.Shape)
		}
	}
	if len(m.meta.StretchLo) != m.meta.Bands || len(m.meta.StretchHi) != m.meta.Bands {
		return fmt.Errorf("normalisation statistics for %d/%d bands, want %d", len(m.meta.StretchLo), len(m.meta.StretchHi), m.meta.Bands)
	}
	return nil
}
