package model

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
