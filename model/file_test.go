package model

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
	for name, bad := range map[string][]byte{
		"flipped":   append(append([]byte{}, data[:len(data)/2]...), append([]byte{data[len(data)/2] ^ 1}, data[len(data)/2+1:]...)...),
		"truncated": data[:len(data)-40],
		"empty":     {},
	} {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); !errors.Is(err, ErrModelFile) {
			t.Errorf("%s file: error %v, want ErrModelFile", name, err)
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
