package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/stac"
)

// TestRunOutputCollisions: two outputs of one batch that are one file are
// refused before any work, with one line naming the file and both owners:
// a scene's product and another's probabilities (or Float32 reliability)
// file, and a product's Item and the model's Item. Before, the second
// product replaced the first's probabilities file (both "done", exit 0, the
// first's Item listing the old size) and the product Item of in/x.pnec.tif
// replaced the model's Item x.pnec.json, deriving from itself.
func TestRunOutputCollisions(t *testing.T) {
	src := tinyModel(t)
	for _, tc := range []struct {
		name   string
		scenes []string
		model  string // the model's file name
		opts   processor.Options
		want   string // the colliding file's name
	}{
		{name: "probabilities file", scenes: []string{"a.tif", "a.probabilities.tif"}, model: "m.pnec",
			opts: processor.Options{Probabilities: processor.ProbabilitiesRecovered}, want: "a.probabilities.tif"},
		{name: "probabilities file not asked for", scenes: []string{"a.tif", "a.probabilities.tif"}, model: "m.pnec", want: "a.probabilities.tif"},
		{name: "Float32 reliability file", scenes: []string{"a.tif", "a.reliability.tif"}, model: "m.pnec", want: "a.reliability.tif"},
		{name: "model Item", scenes: []string{"x.pnec.tif"}, model: "x.pnec", want: "x.pnec.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
			for i, s := range tc.scenes {
				fixture.Scene(t, filepath.Join(in, s), uint64(i+1))
			}
			b, _ := os.ReadFile(src)
			modelPath := writeFile(t, filepath.Join(dir, "models", tc.model), string(b))
			var rep bytes.Buffer
			sum, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: []string{in}, Options: tc.opts, Report: &rep})
			t.Log(err)
			if !errors.Is(err, ErrOutputCollision) || !strings.Contains(err.Error(), filepath.Join(out, tc.want)) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %+v, %v: want ErrOutputCollision naming %s in one line", sum, err, tc.want)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 || rep.Len() != 0 {
				t.Errorf("out holds %d files, report %q: want nothing done", len(ents), rep.String())
			}
		})
	}
}

// TestRunModelItemHref: the products' Items name the model's Item by a
// relative href or a URL, never by a local path outside the catalog
// (before, the Item pnec train writes beside the model, models/m.pnec.json,
// was named by its absolute path, also with a base URL that made every
// self link public): the Item is copied into the output directory, or named
// by its own self URL when it has one; a --model-item that is a local file
// outside the Items' root is refused before any work.
func TestRunModelItemHref(t *testing.T) {
	src := tinyModel(t)
	b, _ := os.ReadFile(src)
	for _, tc := range []struct {
		name      string
		baseURL   string // the beside Item's self URL ("" = none)
		modelItem string // Config.ModelItem; "outside" = a local file outside the root
		want      string // the derived_from href ("" = refused)
	}{
		{name: "beside Item without self link", want: "m.pnec.json"},
		{name: "beside Item published", baseURL: "https://models.example.org/pnec", want: "https://models.example.org/pnec/m.pnec.json"},
		{name: "model-item URL", modelItem: "https://models.example.org/m.json", want: "https://models.example.org/m.json"},
		{name: "model-item local outside", modelItem: "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			modelPath := writeFile(t, filepath.Join(dir, "models", "m.pnec"), string(b))
			m := fixture.LoadModelFile(t, modelPath)
			if err := stac.WriteModelItem(stac.ModelItemParams{Model: m, ModelPath: modelPath, ItemPath: stac.ModelItemPath(modelPath), BaseURL: tc.baseURL,
				Datetime: time.Now(), Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			fixture.Scene(t, filepath.Join(dir, "in", "s.tif"), 1)
			out := filepath.Join(dir, "out")
			cfg := Config{ModelPath: modelPath, OutDir: out, Inputs: []string{filepath.Join(dir, "in")}, STACBaseURL: "https://data.example.org/pnec/", ModelItem: tc.modelItem}
			if tc.modelItem == "outside" {
				cfg.ModelItem = stac.ModelItemPath(modelPath)
			}
			sum, err := Run(context.Background(), cfg)
			if tc.want == "" {
				if !errors.Is(err, ErrModelItemOutside) || !strings.HasPrefix(err.Error(), cfg.ModelItem+": ") || sum.Scenes != 0 {
					t.Fatalf("got %+v, %v: want the run refused naming the model Item", sum, err)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ib, err := os.ReadFile(filepath.Join(out, "s.json"))
			if err != nil {
				t.Fatal(err)
			}
			validateItem(t, ib)
			var item struct {
				Links []map[string]string `json:"links"`
			}
			json.Unmarshal(ib, &item)
			var got []string
			for _, l := range item.Links {
				if l["rel"] == "derived_from" {
					got = append(got, l["href"])
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("derived_from %q, want [%s]", got, tc.want)
			}
			if !strings.Contains(tc.want, "://") {
				// The copy is the model's Item, published under the base URL.
				mb, err := os.ReadFile(filepath.Join(out, tc.want))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(mb), `"https://data.example.org/pnec/m.pnec.json"`) {
					t.Errorf("the model Item copy has no self link under the base URL:\n%s", mb)
				}
			}
		})
	}
}

// TestRunStopNamesEveryScene: a batch stopped during its first scene
// reports every scene, those the stop kept from starting too (the summary
// said "2 scenes ... 2 stopped" of 4 before), and a stopped payload run
// publishes no output payload (it was written with the Items finished before
// the stop, as if the job were done).
func TestRunStopNamesEveryScene(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	var feats []string
	for i := 0; i < 4; i++ {
		scene := fixture.Scene(t, filepath.Join(dir, "in", fmt.Sprintf("s%d.tif", i)), uint64(i+1))
		feats = append(feats, fmt.Sprintf(`{"type":"Feature","stac_version":"1.0.0","id":"s%d","geometry":null,"properties":{"datetime":"2024-06-01T00:00:00Z"},"links":[],"assets":{"data":{"href":%q,"roles":["data"]}}}`, i, scene))
	}
	for _, payload := range []bool{false, true} {
		t.Run(fmt.Sprintf("payload=%v", payload), func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			var rep bytes.Buffer
			cfg := Config{ModelPath: modelPath, OutDir: filepath.Join(t.TempDir(), "out"), Jobs: 1, Report: &rep,
				Progress: func(ev progress.Event) {
					if ev.Parts > 0 {
						cancel(errors.New("stopped by SIGTERM"))
					}
				}}
			var sum Summary
			var out map[string]any
			var err error
			if payload {
				p, perr := stac.ReadPayload(strings.NewReader(`{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`],"process":[{"tasks":{}}]}`), "")
				if perr != nil {
					t.Fatal(perr)
				}
				sum, out, err = RunPayload(ctx, cfg, p)
			} else {
				cfg.Inputs = []string{filepath.Join(dir, "in")}
				sum, err = Run(ctx, cfg)
			}
			t.Logf("%v; %s", err, sum)
			lines := strings.Split(strings.TrimSpace(rep.String()), "\n")
			if !errors.Is(err, context.Canceled) || sum.Scenes != 4 || len(lines) != 4 || sum.Done+sum.Stopped != 4 || sum.NotStarted < 2 ||
				!strings.Contains(sum.String(), "not started") {
				t.Errorf("got %+v, %v and %d report lines, want all 4 scenes named, at least 2 not started:\n%s", sum, err, len(lines), rep.String())
			}
			if strings.Count(rep.String(), "not started: the run was stopped (stopped by SIGTERM)") != sum.NotStarted {
				t.Errorf("report does not name the scenes not started:\n%s", rep.String())
			}
			if payload && out != nil {
				t.Errorf("a stopped run published an output payload with %d features", len(out["features"].([]any)))
			}
		})
	}
}
