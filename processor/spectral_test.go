package processor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
)

// TestClassifySpectralReliability: with a model that stores its training
// spectra, the product's reliability band is the spectral agreement of each
// pixel's spectrum with its final label (checked against a direct
// computation from the scene read back through GDAL), the metadata names
// it, and whole-image and tiled runs give the same reliability wherever they
// give the same label.
func TestClassifySpectralReliability(t *testing.T) {
	f := getFixture(t)
	ref, err := f.model.SpectralReference()
	if err != nil {
		t.Fatalf("sceneFixture model: %v", err)
	}
	dir := t.TempDir()
	wholePath, tiledPath := filepath.Join(dir, "whole.tif"), filepath.Join(dir, "tiled.tif")
	classify(t, f, Options{ReliabilityFloat32: true}, wholePath)
	res := classify(t, f, Options{ReliabilityFloat32: true, TileSize: 96}, tiledPath)
	if res.Tiles < 4 {
		t.Fatalf("tiled run has %d tiles, want at least 4", res.Tiles)
	}
	whole, tiled := readProductFloat(t, wholePath), readProductFloat(t, tiledPath)
	md, _ := gdalinfoJSON(t, wholePath)["metadata"].(map[string]any)
	if dflt, _ := md["PNEC"].(map[string]any); dflt["RELIABILITY"] != string(model.ReliabilitySpectral) {
		t.Errorf("product metadata RELIABILITY = %v, want %s", dflt["RELIABILITY"], model.ReliabilitySpectral)
	}

	sc, err := geo.Open(f.scene)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	blk, err := sc.ReadWindow(context.Background(), geo.Window{Cols: f.cols, Rows: f.rows})
	if err != nil {
		t.Fatal(err)
	}
	dense := map[int]int{}
	for k, c := range f.model.Classes() {
		dense[c.Value] = k
	}
	checked, same := 0, 0
	for i := range whole.class {
		if !f.valid[i] {
			continue
		}
		if i%37 == 0 {
			want := ref.Agreement(blk.Data[i*f.bands:(i+1)*f.bands], dense[whole.class[i]])
			if math.Abs(float64(whole.rel[i]-want)) > 1e-6 {
				t.Fatalf("pixel %d (class %d): reliability %v, direct spectral agreement %v", i, whole.class[i], whole.rel[i], want)
			}
			checked++
		}
		if whole.class[i] == tiled.class[i] {
			same++
			// Tiles blend identical distances with weights summing to one:
			// equal up to float32 rounding.
			if math.Abs(float64(whole.rel[i]-tiled.rel[i])) > 1e-5 {
				t.Fatalf("pixel %d (class %d in both): whole reliability %v, tiled %v", i, whole.class[i], whole.rel[i], tiled.rel[i])
			}
		}
	}
	if checked < 100 || same < len(whole.class)/2 {
		t.Fatalf("checked %d pixels directly and %d with the same label: too few", checked, same)
	}
}

// oldModelFile writes a copy of the model file at path without the training
// spectra, as files were written before they were stored: no header field,
// no values after the prototype bank, checksum recomputed.
func oldModelFile(t *testing.T, path, out string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const magic = 8
	n := binary.LittleEndian.Uint64(data[magic:])
	hdr := data[magic+8 : magic+8+int(n)]
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &meta); err != nil {
		t.Fatal(err)
	}
	var classes []int
	if err := json.Unmarshal(meta["spectral_reference_classes"], &classes); err != nil || len(classes) == 0 {
		t.Fatalf("model file has no spectral_reference_classes (%v)", err)
	}
	var bands int
	if err := json.Unmarshal(meta["bands"], &bands); err != nil {
		t.Fatal(err)
	}
	delete(meta, "spectral_reference_classes")
	newHdr, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	body := data[magic+8+int(n) : len(data)-sha256.Size-4*len(classes)*bands]
	var buf bytes.Buffer
	buf.Write(data[:magic])
	_ = binary.Write(&buf, binary.LittleEndian, uint64(len(newHdr)))
	buf.Write(newHdr)
	buf.Write(body)
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReliabilityFallback: a model file without training spectra loads,
// its products default to model.FallbackReliability, and asking for a
// spectral kind explicitly is ErrNoSpectralReference.
func TestReliabilityFallback(t *testing.T) {
	f := getFixture(t)
	old := filepath.Join(t.TempDir(), "old.pnec")
	oldModelFile(t, f.modelPath, old)
	m, err := model.Load(old)
	if err != nil {
		t.Fatalf("old model file: %v", err)
	}
	if _, err := m.SpectralReference(); !errors.Is(err, model.ErrNoSpectralReference) {
		t.Fatalf("old model file: SpectralReference error %v, want ErrNoSpectralReference", err)
	}
	kind, ref, err := m.ResolveReliability("", nil)
	if err != nil || kind != model.FallbackReliability || ref != nil {
		t.Errorf("default for an old model: got %q, %v, %v; want %s", kind, ref != nil, err, model.FallbackReliability)
	}
	for _, k := range model.SpectralReliabilityKinds {
		if _, _, err := m.ResolveReliability(k, nil); !errors.Is(err, model.ErrNoSpectralReference) {
			t.Errorf("%s for an old model: error %v, want ErrNoSpectralReference", k, err)
		}
	}
	kind, ref, err = f.model.ResolveReliability("", nil)
	if err != nil || kind != model.DefaultReliability || ref == nil {
		t.Errorf("default for a new model: got %q, reference %v, %v; want %s with a reference", kind, ref != nil, err, model.DefaultReliability)
	}
	// The product of the old model carries the fallback.
	out := filepath.Join(t.TempDir(), "old.tif")
	c, err := NewClassifier(m, Options{TileSize: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Run(context.Background(), Request{Scene: f.scene, Out: out}); err != nil {
		t.Fatal(err)
	}
	md, _ := gdalinfoJSON(t, out)["metadata"].(map[string]any)
	if dflt, _ := md["PNEC"].(map[string]any); dflt["RELIABILITY"] != string(model.FallbackReliability) {
		t.Errorf("old model's product metadata RELIABILITY = %v, want %s", dflt["RELIABILITY"], model.FallbackReliability)
	}
}
