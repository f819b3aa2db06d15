package stac

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/stacschema"
)

// TestModelItemValidates: the model's Item validates against STAC core
// 1.0.0 and the official MLM 1.5.2, file 2.1.0, raster, processing and
// (with wavelengths) eo schemas, and says what the issue asks: name,
// architecture, tasks, input bands with wavelengths, shape and scaling,
// output classes, the model asset with role, artifact type, checksum and
// size, the training data as links, the training accuracy.
func TestModelItemValidates(t *testing.T) {
	dir := t.TempDir()
	modelPath := fixture.WavelengthModel(t, dir)
	scene := fixture.Scene(t, filepath.Join(dir, "train.tif"), 1)
	info := fixture.SceneInfo(t, scene)
	m := fixture.LoadModelFile(t, modelPath)
	itemPath := ModelItemPath(modelPath)
	for _, tc := range []struct {
		name    string
		base    string
		info    *geo.Info
		wantEO  bool
		wantGeo bool
	}{
		{"beside the model", "", &info, true, true},
		{"base URL, no training scene", "https://models.example.org/pnec", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteModelItem(ModelItemParams{Model: m, ModelPath: modelPath, ItemPath: itemPath, BaseURL: tc.base, TrainInfo: tc.info,
				Datetime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Now: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(itemPath)
			if err != nil {
				t.Fatal(err)
			}
			s := stacschema.Store(t)
			var doc struct {
				Geometry   any              `json:"geometry"`
				Extensions []string         `json:"stac_extensions"`
				Properties map[string]any   `json:"properties"`
				Links      []map[string]any `json:"links"`
				Assets     map[string]map[string]any
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			for _, u := range append([]string{"https://schemas.stacspec.org/v1.0.0/item-spec/json-schema/item.json"}, doc.Extensions...) {
				if err := s.Validate(b, u); err != nil {
					t.Errorf("model item does not validate against %s: %v", u, err)
				}
			}
			exts := strings.Join(doc.Extensions, " ")
			for _, u := range []string{MLMSchema, FileSchema, RasterSchema, ProcessingSchema} {
				if !strings.Contains(exts, u) {
					t.Errorf("stac_extensions %v lacks %s", doc.Extensions, u)
				}
			}
			if strings.Contains(exts, EOSchema) != tc.wantEO || (doc.Geometry != nil) != tc.wantGeo {
				t.Errorf("eo declared %v geometry %v, want %v %v", strings.Contains(exts, EOSchema), doc.Geometry, tc.wantEO, tc.wantGeo)
			}
			p := doc.Properties
			if p["mlm:name"] != "landcover" || p["mlm:architecture"] != MLMArchitecture || p[PropModelChecksum] != m.Checksum() {
				t.Errorf("got name %v architecture %v checksum %v", p["mlm:name"], p["mlm:architecture"], p[PropModelChecksum])
			}
			if acc, ok := p["pnec:train_accuracy"].(float64); !ok || acc <= 0 || acc > 1 {
				t.Errorf("got pnec:train_accuracy %v, want the training accuracy", p["pnec:train_accuracy"])
			}
			in := p["mlm:input"].([]any)[0].(map[string]any)
			if bands := in["bands"].([]any); len(bands) != fixture.Bands || len(in["value_scaling"].([]any)) != fixture.Bands {
				t.Errorf("got input %v, want %d bands with a scaling each", in, fixture.Bands)
			}
			out := p["mlm:output"].([]any)[0].(map[string]any)
			if cls := out["classification:classes"].([]any); len(cls) != 3 || cls[0].(map[string]any)["name"] != "water" {
				t.Errorf("got output classes %v, want water, forest, crop", cls)
			}
			a := doc.Assets[modelAssetKey]
			sum, size, _ := FileChecksum(modelPath)
			if a["href"] != "landcover.pnec" || a["mlm:artifact_type"] != MLMArtifactType || a["file:checksum"] != sum || a["file:size"] != float64(size) {
				t.Errorf("got model asset %v, want href landcover.pnec, artifact type, checksum %s and size %d", a, sum, size)
			}
			if eo, ok := a["eo:bands"].([]any); ok && eo[1].(map[string]any)["center_wavelength"] != 0.5 {
				t.Errorf("got eo:bands %v, want band 2 at 0.5 µm", eo)
			}
			rels := map[string][]string{}
			for _, l := range doc.Links {
				rels[l["rel"].(string)] = append(rels[l["rel"].(string)], l["href"].(string))
			}
			if got := rels["derived_from"]; len(got) != 2 || got[0] != "train.tif" || got[1] != "train_gt.tif" {
				t.Errorf("got derived_from %v, want the training scene and labels", got)
			}
			wantSelf := ""
			if tc.base != "" {
				wantSelf = tc.base + "/landcover.pnec.json"
			}
			if got := strings.Join(rels["self"], " "); got != wantSelf {
				t.Errorf("got self %q, want %q", got, wantSelf)
			}
		})
	}
}

// TestMLMSchemaCatchesBadItems: the shipped MLM and file schemas reject
// model Items with the faults a writer could make, so that
// TestModelItemValidates can fail.
func TestMLMSchemaCatchesBadItems(t *testing.T) {
	modelPath := fixture.Model(t)
	m := fixture.LoadModelFile(t, modelPath)
	item, err := BuildModelItem(ModelItemParams{Model: m, ModelPath: modelPath, ItemPath: ModelItemPath(modelPath), Datetime: time.Now(), Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(item)
	if err := stacschema.Store(t).Validate(good, MLMSchema); err != nil {
		t.Fatalf("the unchanged item: %v", err)
	}
	for _, tc := range []struct {
		name, schema string
		mutate       func(m map[string]any)
	}{
		{"no mlm:name", MLMSchema, func(m map[string]any) { delete(m["properties"].(map[string]any), "mlm:name") }},
		{"no artifact type", MLMSchema, func(m map[string]any) {
			delete(m["assets"].(map[string]any)[modelAssetKey].(map[string]any), "mlm:artifact_type")
		}},
		{"no model role", MLMSchema, func(m map[string]any) {
			m["assets"].(map[string]any)[modelAssetKey].(map[string]any)["roles"] = []any{"data"}
		}},
		{"bands without names", MLMSchema, func(m map[string]any) {
			for _, b := range m["assets"].(map[string]any)[modelAssetKey].(map[string]any)["raster:bands"].([]any) {
				delete(b.(map[string]any), "name")
			}
		}},
		{"bad checksum", FileSchema, func(m map[string]any) {
			m["assets"].(map[string]any)[modelAssetKey].(map[string]any)["file:checksum"] = "sha256:xyz"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			json.Unmarshal(good, &doc)
			tc.mutate(doc)
			b, _ := json.Marshal(doc)
			if err := stacschema.Store(t).Validate(b, tc.schema); !errors.Is(err, stacschema.ErrInvalid) {
				t.Errorf("got %v, want the item rejected by %s", err, tc.schema)
			}
		})
	}
}

// TestModelNameValidates: the mlm:name made from a model's file name
// passes MLM v1.5.2's pattern whatever the name: one starting with a digit,
// one or two characters, other characters, separators at the end (before,
// 2024_model.pnec gave "2024_model" and m.pnec "m", both invalid against the
// official schema); the Item of each validates against it. A name the user
// gives is taken when valid and refused when not.
func TestModelNameValidates(t *testing.T) {
	dir := t.TempDir()
	src := fixture.WavelengthModel(t, dir)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	m := fixture.LoadModelFile(t, src)
	s := stacschema.Store(t)
	write := func(t *testing.T, modelPath, name string) (string, error) {
		t.Helper()
		if err := os.WriteFile(modelPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		itemPath := ModelItemPath(modelPath)
		err := WriteModelItem(ModelItemParams{Model: m, ModelPath: modelPath, ItemPath: itemPath, Name: name, Datetime: time.Now(), Now: time.Now()})
		if err != nil {
			return "", err
		}
		doc, err := os.ReadFile(itemPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(doc, MLMSchema); err != nil {
			t.Errorf("%s: the Item does not validate against MLM: %v", filepath.Base(modelPath), err)
		}
		var item struct {
			Properties map[string]any `json:"properties"`
		}
		json.Unmarshal(doc, &item)
		got, _ := item.Properties["mlm:name"].(string)
		return got, nil
	}
	for file, want := range map[string]string{
		"salinas.pnec":      "salinas",
		"2024_model.pnec":   "pnec-2024_model",
		"m.pnec":            "pnec-m",
		"ab.pnec":           "pnec-ab",
		"my model v2.pnec":  "my model v2",
		"modèle.pnec":       "mod_le",
		"model_.pnec":       "model",
		"x!@#.pnec":         "pnec-x",
		"___.pnec":          "model",
		"Pavia-U.2024.pnec": "Pavia-U.2024",
		"_hidden.pnec":      "pnec-_hidden",
	} {
		t.Run(file, func(t *testing.T) {
			if got := ModelName(file); got != want {
				t.Errorf("ModelName(%q) = %q, want %q", file, got, want)
			}
			got, err := write(t, filepath.Join(dir, file), "")
			if err != nil || got != want {
				t.Errorf("Item mlm:name %q (%v), want %q", got, err, want)
			}
		})
	}
	if got, err := write(t, filepath.Join(dir, "2024.pnec"), "Salinas 2024 v2"); err != nil || got != "Salinas 2024 v2" {
		t.Errorf("given name: got %q, %v", got, err)
	}
	for _, bad := range []string{"2024", "ab", "model_", "modèle", "x\ty"} {
		if _, err := write(t, filepath.Join(dir, "x.pnec"), bad); err == nil || !strings.Contains(err.Error(), "mlm:name") {
			t.Errorf("given name %q: got %v, want it refused", bad, err)
		}
	}
}
