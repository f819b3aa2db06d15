package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/stac"
)

// TestRunRefusesUnknownDatetime: a scene whose acquisition time nothing
// gives fails before it is classified, with stac.ErrNoDatetime and no product;
// with the user's interval it is done, its Item's datetime null between
// the interval's bounds.
func TestRunRefusesUnknownDatetime(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "timeless.tif")
	os.MkdirAll(filepath.Dir(in), 0o755)
	data, _ := fixture.SceneData(6)
	if err := fixture.WriteFloat32(in, fixture.Rows, fixture.Cols, fixture.Bands, data, fixture.GeoRef, fixture.NoData); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var rep bytes.Buffer
	_, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: []string{in}, Report: &rep, Version: "test"})
	var fe *FailedError
	if !errors.As(err, &fe) || !errors.Is(err, stac.ErrNoDatetime) {
		t.Fatalf("got %v, want a FailedError wrapping stac.ErrNoDatetime", err)
	}
	r := readReport(t, rep.Bytes())["timeless.tif"]
	if r.Status != StatusFailed || !strings.Contains(r.Reason, "no acquisition time") || r.Times != nil {
		t.Errorf("got %+v, want failed before classification for no acquisition time", r)
	}
	if _, err := os.Stat(filepath.Join(out, "timeless.tif")); err == nil {
		t.Error("a product was written for a scene that was refused")
	}
	rep.Reset()
	start, end := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 5, 31, 0, 0, 0, 0, time.UTC)
	if _, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: []string{in}, Report: &rep, Version: "test",
		Datetime: start, DatetimeEnd: end}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "timeless.json"))
	if err != nil {
		t.Fatal(err)
	}
	validateItem(t, b)
	var item struct{ Properties map[string]any }
	json.Unmarshal(b, &item)
	if p := item.Properties; p["datetime"] != nil || p["start_datetime"] != "2024-05-01T00:00:00Z" || p["end_datetime"] != "2024-05-31T00:00:00Z" {
		t.Errorf("got datetime %v %v..%v, want null within the given interval", p["datetime"], p["start_datetime"], p["end_datetime"])
	}
}

// TestRunBaseURL: with a base URL, the Items and the Collection have
// absolute self links under it (a relative self of an earlier run is
// replaced); the model's Item, written into the output directory, too.
func TestRunBaseURL(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	in := fixture.Scene(t, filepath.Join(dir, "in", "a.tif"), 7)
	out := filepath.Join(dir, "out")
	coll := filepath.Join(out, "collection.json")
	writeFile(t, coll, `{"type":"Collection","stac_version":"1.0.0","id":"c","description":"d","license":"proprietary",
		"extent":{"spatial":{"bbox":[[0,0,1,1]]},"temporal":{"interval":[[null,null]]}},
		"links":[{"rel":"self","href":"collection.json"},{"rel":"root","href":"collection.json"}]}`)
	const base = "https://maps.example.org/nightly"
	if _, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: []string{in}, Version: "test",
		Collection: coll, STACBaseURL: base}); err != nil {
		t.Fatal(err)
	}
	self := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Links []map[string]string }
		json.Unmarshal(b, &doc)
		var out []string
		for _, l := range doc.Links {
			if l["rel"] == "self" {
				out = append(out, l["href"])
			}
		}
		return out
	}
	for path, want := range map[string]string{
		filepath.Join(out, "a.json"): base + "/a.json",
		coll:                         base + "/collection.json",
	} {
		if got := self(path); len(got) != 1 || got[0] != want {
			t.Errorf("%s: got self %v, want %s", filepath.Base(path), got, want)
		}
	}
}
