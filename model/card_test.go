package model

import (
	"context"
	"path/filepath"
	"testing"
)

// TestProvenanceRoundTrip: the training provenance and the card's
// figures survive Save and Load; a model trained without provenance
// reads back with none.
func TestProvenanceRoundTrip(t *testing.T) {
	s, labels := synthScene(9, 10, 4, 2, 2)
	prov := Provenance{Scene: "/data/scene.tif", Labels: "/data/gt.tif"}
	for _, tc := range []struct {
		name string
		prov Provenance
	}{{"with", prov}, {"without", Provenance{}}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Train(context.Background(), s, labels, TrainOptions{Config: tinyConfig(2), TrainPerClass: 3, Backend: "go", Provenance: tc.prov})
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
			if got := m2.Provenance(); got != tc.prov {
				t.Errorf("got provenance %+v, want %+v", got, tc.prov)
			}
			lo, hi := m2.Stretch()
			if len(lo) != 4 || len(hi) != 4 || m2.TrainAccuracy() != m.TrainAccuracy() || m2.ParameterCount() != m.ParameterCount() || m2.ParameterCount() < 100 {
				t.Errorf("stretch %v..%v, accuracy %v (%v), %d parameters (%d): card figures lost",
					lo, hi, m2.TrainAccuracy(), m.TrainAccuracy(), m2.ParameterCount(), m.ParameterCount())
			}
		})
	}
}
