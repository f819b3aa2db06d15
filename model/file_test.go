package model

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/pnec/pnec/spectral"
)

// TestModelFileDamage: a flipped byte or a truncated file is ErrModelFile,
// and a saved file carries its checksum and metadata.
func TestModelFileDamage(t *testing.T) {
	s, labels := synthScene(9, 10, 4, 2, 2)
	m, err := Train(context.Background(), s, labels, TrainOptions{Config: tinyConfig(2), TrainPerClass: 3, Backend: "go",
		ClassNames: map[int]string{1: "water"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.pnec")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.Classes(); len(got) != 2 || got[0].Name != "water" || got[1].Name != "class 2" || got[1].Color != PaletteColor(2) {
		t.Errorf("classes after load %+v, want water and class 2 with the palette colour", got)
	}
	if m2.Bands() != 4 || len(m2.TrainIndices()) != 6 || m2.Config() != m.Config() {
		t.Errorf("bands %d, %d training pixels, config %+v: metadata lost", m2.Bands(), len(m2.TrainIndices()), m2.Config())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !m2.HasDriftStats() || m2.meta.Drift.Reliability != m.meta.Drift.Reliability || len(m2.meta.Drift.BandMean) != 4 {
		t.Errorf("drift statistics after load %+v, want those of training %+v", m2.meta.Drift, m.meta.Drift)
	}
	older := func(magic string) []byte { return append([]byte(magic), data[len(fileMagic):]...) }
	for name, bad := range map[string][]byte{
		"format 1":  older(fileMagicV1),
		"format 2":  older(fileMagicV2),
		"format 3":  older(fileMagicV3),
		"flipped":   append(append([]byte{}, data[:len(data)/2]...), append([]byte{data[len(data)/2] ^ 1}, data[len(data)/2+1:]...)...),
		"truncated": data[:len(data)-40],
		"empty":     {},
	} {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if !errors.Is(err, ErrModelFile) {
			t.Errorf("%s file: error %v, want ErrModelFile", name, err)
		}
		if strings.HasPrefix(name, "format") && (err == nil || !strings.Contains(err.Error(), "train the model again")) {
			t.Errorf("%s file: error %v, want one that says to train again", name, err)
		}
	}
}

// TestModelFileBandRecord: the training scene's band set and radiometry
// survive Save and Load, and a record that does not fit the bands is refused.
func TestModelFileBandRecord(t *testing.T) {
	s, labels := synthScene(9, 10, 4, 2, 2)
	s.WavelengthsNM = []float64{450, 550, 650, 850}
	rec := BandRecord{
		FWHMNM: []float64{10, 10, 12, 15}, WavelengthUnits: "Nanometers",
		SceneBands: 6, BandsUsed: []int{0, 1, 3, 5}, BadBands: []int{2, 4},
		Radiometry: spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 10000},
	}
	m, err := Train(context.Background(), s, labels, TrainOptions{Config: tinyConfig(2), TrainPerClass: 3, Backend: "go", Bands: rec})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.pnec")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.BandRecord(); !reflect.DeepEqual(got, rec) {
		t.Errorf("got band record %+v, want %+v", got, rec)
	}
	bs := m2.BandSet()
	if !bs.HasCentres() || bs.CentresNM[3] != 850 || bs.FWHMNM[3] != 15 || bs.BadCount() != 0 {
		t.Errorf("got band set %+v, want the 4 model bands with centres and widths", bs)
	}
	if o := m2.MatchOptions(true); !o.Resample || o.Source == nil || o.Source.Bands != 6 || !reflect.DeepEqual(o.Source.Used, rec.BandsUsed) {
		t.Errorf("got match options %+v, want resampling with the 6-band training scene", o)
	}
	bad := rec
	bad.BandsUsed = []int{0, 1, 3, 6}
	if _, err := Train(context.Background(), s, labels, TrainOptions{Config: tinyConfig(2), TrainPerClass: 3, Backend: "go", Bands: bad}); err == nil {
		t.Error("a band used outside the training scene's 6 bands was accepted")
	}
}

// tinyModelFile is the file of a 2-class model of 4 bands with random
// weights (initParams), made without GoMLX so that fuzzing starts at once;
// it records a band set and radiometry (4 of a 6-band training scene's
// bands, 2 bad) so that hostile headers and the fuzzer reach them.
func tinyModelFile(t testing.TB) []byte {
	t.Helper()
	cfg := tinyConfig(2)
	// What training chooses for the default's fused decision.
	cfg.Decision.TemperatureRad, cfg.Recovery.Window = 0.02, 3
	const bands = 4
	classes := []Class{{Value: 1, Name: "water", Color: PaletteColor(1)}, {Value: 2, Name: "class 2", Color: PaletteColor(2)}}
	d, err := makeDims(cfg, bands, len(classes))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	m := &Model{meta: modelMeta{
		Config: cfg, Bands: bands, Classes: classes,
		StretchLo: []float32{0, 0, 0, 0}, StretchHi: []float32{1, 1, 1, 1},
		SceneRows: 9, SceneCols: 10, TrainSplit: "seed", TrainIndices: []int{3, 17, 40},
		SpectralClasses: []int{0, 1}, spectralSpectra: []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8},
		WavelengthsNM: []float64{450, 550, 650, 850}, FWHMNM: []float64{10, 10, 12, 15}, WavelengthUnits: "Nanometers",
		SceneBands: 6, BandsUsed: []int{0, 1, 3, 5}, BadBands: []int{2, 4},
		Quantity: spectral.QuantityReflectance, QuantityScale: 10000,
	}, params: initParams(d, cfg, rng), protos: make([]float32, len(classes)*cfg.Hidden)}
	for i := range m.protos {
		m.protos[i] = float32(rng.NormFloat64())
	}
	data, _, err := m.fileBytes()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// splitModelFile cuts a model file into its JSON header (as a map) and the
// weights after it (the checksum dropped).
func splitModelFile(t testing.TB, data []byte) (map[string]any, []byte) {
	t.Helper()
	body := data[:len(data)-sha256.Size]
	n := binary.LittleEndian.Uint64(body[len(fileMagic):])
	hdr := body[len(fileMagic)+8 : len(fileMagic)+8+int(n)]
	var meta map[string]any
	if err := json.Unmarshal(hdr, &meta); err != nil {
		t.Fatal(err)
	}
	return meta, body[len(fileMagic)+8+int(n):]
}

// joinModelFile is a model file of header and weights with a valid checksum.
func joinModelFile(t testing.TB, meta map[string]any, weights []byte) []byte {
	t.Helper()
	hdr, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(fileMagic)
	binary.Write(&b, binary.LittleEndian, uint64(len(hdr)))
	b.Write(hdr)
	b.Write(weights)
	sum := sha256.Sum256(b.Bytes())
	return append(b.Bytes(), sum[:]...)
}

// decodeNoPanic is decodeModel with a panic turned into an error, so that a
// table test reports each case.
func decodeNoPanic(data []byte) (m *Model, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return decodeModel(data)
}

// TestModelFileHostileHeader: a file whose checksum is valid but whose
// header claims impossible or inconsistent sizes is refused as
// ErrModelFile, without a panic and without allocating what the header
// claims; a model whose weights hold NaN or Inf is refused as ErrNotFinite.
func TestModelFileHostileHeader(t *testing.T) {
	good := tinyModelFile(t)
	if _, err := decodeModel(good); err != nil {
		t.Fatalf("the unmodified file: %v", err)
	}
	set := func(path string, v any) func(map[string]any, []byte) []byte {
		return func(meta map[string]any, w []byte) []byte {
			keys := strings.Split(path, ".")
			obj := meta
			for _, k := range keys[:len(keys)-1] {
				obj = obj[k].(map[string]any)
			}
			obj[keys[len(keys)-1]] = v
			return w
		}
	}
	firstParam := func(shape []any) func(map[string]any, []byte) []byte {
		return func(meta map[string]any, w []byte) []byte {
			meta["params"].([]any)[0].(map[string]any)["shape"] = shape
			return w
		}
	}
	fill := func(bits uint32) func(map[string]any, []byte) []byte {
		return func(_ map[string]any, w []byte) []byte {
			w = bytes.Clone(w)
			for i := 0; i+4 <= len(w); i += 4 {
				binary.LittleEndian.PutUint32(w[i:], bits)
			}
			return w
		}
	}
	for _, tc := range []struct {
		name   string
		modify func(map[string]any, []byte) []byte
		want   error
	}{
		{"prototype_rows -1", set("prototype_rows", -1), ErrModelFile},
		{"prototype_rows huge", set("prototype_rows", 1<<40), ErrModelFile},
		{"bands -1", set("bands", -1), ErrModelFile},
		{"bands huge", set("bands", 1<<40), ErrModelFile},
		{"hidden -1", set("config.Hidden", -1), ErrModelFile},
		{"hidden huge", set("config.Hidden", 1<<40), ErrModelFile},
		{"expand huge", set("config.Expand", 1<<50), ErrModelFile},
		{"negative shape", firstParam([]any{-4, -16}), ErrModelFile},
		{"huge shape", firstParam([]any{1 << 40, 1 << 40}), ErrModelFile},
		{"shape of the right size, wrong layout", firstParam([]any{16, 4}), ErrModelFile},
		{"no classes", set("classes", []any{}), ErrModelFile},
		{"no params", set("params", []any{}), ErrModelFile},
		{"train index outside the scene", set("train_indices", []any{0, 1 << 40}), ErrModelFile},
		{"training scene rows -1", set("train_scene_rows", -1), ErrModelFile},
		{"unknown encoder", set("config.Encoder", "transformer"), ErrModelFile},
		{"fewer wavelengths than bands", set("wavelengths_nm", []any{450, 550}), ErrModelFile},
		{"wavelength 0", set("wavelengths_nm", []any{450, 0, 650, 850}), ErrModelFile},
		{"wavelength negative", set("wavelengths_nm", []any{450, -550, 650, 850}), ErrModelFile},
		{"more widths than bands", set("fwhm_nm", []any{10, 10, 12, 15, 20}), ErrModelFile},
		{"width 0", set("fwhm_nm", []any{10, 0, 12, 15}), ErrModelFile},
		{"widths without centres", func(meta map[string]any, w []byte) []byte { delete(meta, "wavelengths_nm"); return w }, ErrModelFile},
		{"training scene bands -1", set("train_scene_bands", -1), ErrModelFile},
		{"training scene bands huge", set("train_scene_bands", 1<<40), ErrModelFile},
		{"training scene fewer bands than the model", set("train_scene_bands", 3), ErrModelFile},
		{"bands used, one short", set("bands_used", []any{0, 1, 3}), ErrModelFile},
		{"band used outside the training scene", set("bands_used", []any{0, 1, 3, 6}), ErrModelFile},
		{"band used negative", set("bands_used", []any{-1, 1, 3, 5}), ErrModelFile},
		{"bands used out of order", set("bands_used", []any{0, 3, 1, 5}), ErrModelFile},
		{"bands used twice", set("bands_used", []any{0, 1, 1, 5}), ErrModelFile},
		{"training scene bands without bands used", func(meta map[string]any, w []byte) []byte { delete(meta, "bands_used"); return w }, ErrModelFile},
		{"bad band outside the training scene", set("bad_bands", []any{2, 1 << 40}), ErrModelFile},
		{"bad band negative", set("bad_bands", []any{-3}), ErrModelFile},
		{"bad bands out of order", set("bad_bands", []any{4, 2}), ErrModelFile},
		{"unknown radiometric quantity", set("radiometric_quantity", "brightness"), ErrModelFile},
		{"negative radiometric scale", set("radiometric_scale", -10000), ErrModelFile},
		{"weights shorter than the header says", func(_ map[string]any, w []byte) []byte { return w[:len(w)-8] }, ErrModelFile},
		{"weights longer than the header says", func(_ map[string]any, w []byte) []byte { return append(bytes.Clone(w), 0, 0, 0, 0) }, ErrModelFile},
		{"all weights NaN", fill(0x7fc00000), ErrNotFinite},
		{"all weights +Inf", fill(0x7f800000), ErrNotFinite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta, w := splitModelFile(t, good)
			w = tc.modify(meta, w)
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decodeNoPanic(joinModelFile(t, meta, w))
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrModelFile) {
				t.Fatalf("error %v, want %v (and ErrModelFile)", err, tc.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("decoding allocated %d MiB for a %d byte file", grew>>20, len(good))
			}
			t.Logf("%v", err)
		})
	}
}

// FuzzReadModel decodes arbitrary file bodies (the checksum is appended, so
// the fuzzer reaches the header and the weights): no input may panic or
// allocate beyond the file's own size, and what decodes must encode and
// decode again to the same model.
func FuzzReadModel(f *testing.F) {
	good := tinyModelFile(f)
	f.Add(good[:len(good)-sha256.Size])
	meta, w := splitModelFile(f, good)
	for _, kv := range []struct {
		key string
		v   any
	}{{"prototype_rows", -1}, {"bands", -1}, {"bands", 1 << 40}, {"train_scene_rows", -1},
		{"wavelengths_nm", []any{450, 550}}, {"fwhm_nm", []any{10, 0, 12, 15}}, {"train_scene_bands", 3},
		{"bands_used", []any{0, 1, 3, 6}}, {"bad_bands", []any{2, 1 << 40}}, {"radiometric_scale", -1}} {
		m := map[string]any{}
		for k, v := range meta {
			m[k] = v
		}
		m[kv.key] = kv.v
		b := joinModelFile(f, m, w)
		f.Add(b[:len(b)-sha256.Size])
	}
	f.Add([]byte(fileMagic))
	f.Add([]byte(fileMagicV1 + "junk"))
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha256.Sum256(body)
		m, err := decodeModel(append(bytes.Clone(body), sum[:]...))
		if err != nil {
			if !errors.Is(err, ErrModelFile) {
				t.Fatalf("error %v is not ErrModelFile", err)
			}
			return
		}
		if m.Bands() < 1 || len(m.Classes()) < 2 || len(m.protos) != len(m.Classes())*m.Config().Hidden {
			t.Fatalf("decoded an inconsistent model: %d bands, %d classes, %d prototype values", m.Bands(), len(m.Classes()), len(m.protos))
		}
		again, _, err := m.fileBytes()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := decodeModel(again)
		if err != nil {
			t.Fatalf("a decoded model does not decode after encoding: %v", err)
		}
		if m2.Bands() != m.Bands() || len(m2.params) != len(m.params) {
			t.Fatalf("round trip changed the model")
		}
	})
}

// TestModelFileControlCharacters: a model file whose
// strings hold terminal control sequences (an ANSI escape and a newline in
// radiometric_units, a carriage return in a class name, a bidirectional
// override in the software version) is refused with one line that quotes
// the value; they reached the terminal raw through every command's
// messages.
func TestModelFileControlCharacters(t *testing.T) {
	good := tinyModelFile(t)
	for _, tc := range []struct {
		name, field string
		modify      func(map[string]any)
	}{
		{"ANSI escape in units", "radiometric_units", func(m map[string]any) { m["radiometric_units"] = "W\x1b[2J\x1b[31mfake\nline" }},
		{"carriage return in a class name", "classes[0]", func(m map[string]any) {
			m["classes"].([]any)[0].(map[string]any)["name"] = "water\rgrass"
		}},
		{"bidi override in the version", "software_version", func(m map[string]any) { m["software_version"] = "v1\u202eevil" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta, w := splitModelFile(t, good)
			tc.modify(meta)
			_, err := decodeNoPanic(joinModelFile(t, meta, w))
			if !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), tc.field) || strings.ContainsAny(err.Error(), "\x1b\r\n\u202e") {
				t.Fatalf("got %q, want ErrModelFile naming %s, with the value escaped", err, tc.field)
			}
			t.Log(err)
		})
	}
	meta, w := splitModelFile(t, good)
	meta["radiometric_units"] = "µW cm⁻² sr⁻¹ nm⁻¹"
	if _, err := decodeNoPanic(joinModelFile(t, meta, w)); err != nil {
		t.Errorf("printable non-ASCII units refused: %v", err)
	}
}
