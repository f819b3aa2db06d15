package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
)

// TestRunOnDrift: a scene like the training scene and one with its bands
// reversed (drift fail). warn publishes both and reports the verdicts (the
// Items carry them, valid against the schemas); skip withholds the drifted
// scene (status refused, no product, no Item, not a failure); fail withholds
// it and counts it as failed with FailedError.Drift.
func TestRunOnDrift(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	fixture.Scene(t, filepath.Join(in, "like.tif"), 4)
	data, _ := fixture.SceneData(6)
	for i := 0; i < len(data); i += fixture.Bands {
		for b := 0; b < fixture.Bands/2; b++ {
			data[i+b], data[i+fixture.Bands-1-b] = data[i+fixture.Bands-1-b], data[i+b]
		}
	}
	if err := fixture.WriteRaster(filepath.Join(in, "reversed.tif"), fixture.Rows, fixture.Cols, fixture.Bands, data); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		on          OnDrift
		wantRevStat string
		wantFailed  int
	}{
		{OnDriftWarn, StatusDone, 0},
		{OnDriftSkip, StatusRefused, 0},
		{OnDriftFail, StatusFailed, 1},
	} {
		t.Run(string(tc.on), func(t *testing.T) {
			out := filepath.Join(dir, "out-"+string(tc.on))
			var rep bytes.Buffer
			sum, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: []string{in}, Report: &rep, OnDrift: tc.on, Jobs: 1})
			var fe *FailedError
			if tc.wantFailed > 0 {
				if !errors.As(err, &fe) || fe.Failed != 1 || fe.Drift != 1 {
					t.Fatalf("error %v, want one scene failed for its drift", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			r := readReport(t, rep.Bytes())
			like, revd := r["like.tif"], r["reversed.tif"]
			if like.Status != StatusDone || like.Drift != "ok" {
				t.Errorf("like: %+v, want done with drift ok", like)
			}
			if revd.Status != tc.wantRevStat || revd.Drift != "fail" || len(revd.DriftReasons) == 0 || revd.DriftRefused != (tc.on != OnDriftWarn) {
				t.Errorf("reversed: %+v, want %s with drift fail and its reasons", revd, tc.wantRevStat)
			}
			if sum.DriftFail != 1 || sum.Refused != map[OnDrift]int{OnDriftSkip: 1}[tc.on] || sum.Failed != tc.wantFailed {
				t.Errorf("summary %+v", sum)
			}
			_, errTif := os.Stat(filepath.Join(out, "reversed.tif"))
			_, errItem := os.Stat(filepath.Join(out, "reversed.json"))
			if published := errTif == nil && errItem == nil; published != (tc.on == OnDriftWarn) {
				t.Errorf("reversed published: product %v, Item %v", errTif, errItem)
			}
			keys := []string{"like"}
			if tc.on == OnDriftWarn {
				keys = append(keys, "reversed")
			}
			checkOutDir(t, out, keys)
			b, err := os.ReadFile(filepath.Join(out, "like.json"))
			if err != nil {
				t.Fatal(err)
			}
			var item struct {
				Properties map[string]any `json:"properties"`
			}
			if err := json.Unmarshal(b, &item); err != nil {
				t.Fatal(err)
			}
			d, _ := item.Properties["pnec:drift"].(map[string]any)
			if item.Properties["pnec:drift_verdict"] != "ok" || d == nil || d["far_share"] == nil || d["reliability_ratio"] == nil {
				t.Errorf("Item properties pnec:drift_verdict %v, pnec:drift %v: want ok with the figures", item.Properties["pnec:drift_verdict"], d)
			}
		})
	}
	if _, err := ParseOnDrift("ignore"); err == nil {
		t.Error("ParseOnDrift(ignore): want an error")
	}
}
