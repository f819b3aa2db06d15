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

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/stac"
)

// writeMask writes a raster mask on the fixture grid: inside where in(r, c).
func writeMask(t *testing.T, path string, in func(r, c int) bool) string {
	t.Helper()
	v := make([]float32, fixture.Rows*fixture.Cols)
	for r := 0; r < fixture.Rows; r++ {
		for c := 0; c < fixture.Cols; c++ {
			if in(r, c) {
				v[r*fixture.Cols+c] = 1
			}
		}
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := fixture.WriteFloat32(path, fixture.Rows, fixture.Cols, 1, v, fixture.GeoRef, -1); err != nil {
		t.Fatal(err)
	}
	return path
}

// productClasses reads a product's class band (0 = no data).
func productClasses(t *testing.T, path string) []float32 {
	t.Helper()
	s, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.ReadWindow(context.Background(), geo.Window{Cols: fixture.Cols, Rows: fixture.Rows})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, fixture.Rows*fixture.Cols)
	for i := range out {
		out[i] = b.Data[2*i]
	}
	return out
}

// TestRunMasks: a batch classifies each scene within its mask: one mask
// for all, one per scene by a {key} pattern, or the STAC Item's asset of a
// role; outside is no-data, the Item records the mask, a changed mask
// redoes the scene, and a scene without its mask fails with ErrNoMask.
func TestRunMasks(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	for _, k := range []string{"a", "b"} {
		fixture.Scene(t, filepath.Join(dir, "in", k+".tif"), 8)
	}
	left := func(r, c int) bool { return c < 20 }
	top := func(r, c int) bool { return r < 10 }
	writeMask(t, filepath.Join(dir, "masks", "all.tif"), left)
	writeMask(t, filepath.Join(dir, "masks", "a.tif"), left)
	writeMask(t, filepath.Join(dir, "masks", "b.tif"), top)
	// A STAC Item with its scene and an area-of-interest asset.
	os.MkdirAll(filepath.Join(dir, "stac", "data"), 0o755)
	fixture.WriteScene(filepath.Join(dir, "stac", "data", "s.tif"), 9)
	writeMask(t, filepath.Join(dir, "stac", "data", "s_aoi.tif"), top)
	writeFile(t, filepath.Join(dir, "stac", "s.json"), itemJSON("scene-s", `"hsi":{"href":"data/s.tif","roles":["data"]},"aoi":{"href":"data/s_aoi.tif","roles":["aoi"]}`))
	run := func(out, mask string, inputs ...string) (map[string]SceneReport, error) {
		var rep bytes.Buffer
		_, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: inputs, Jobs: 1, Mask: mask, Report: &rep, Version: "test"})
		return readReport(t, rep.Bytes()), err
	}
	check := func(product string, in func(r, c int) bool) {
		t.Helper()
		cls := productClasses(t, product)
		for r := 0; r < fixture.Rows; r++ {
			for c := 0; c < fixture.Cols; c++ {
				if got := cls[r*fixture.Cols+c] != 0; got != in(r, c) {
					t.Fatalf("%s pixel (%d,%d): classified %v, want %v", filepath.Base(product), r, c, got, in(r, c))
				}
			}
		}
	}
	ins := []string{filepath.Join(dir, "in", "a.tif"), filepath.Join(dir, "in", "b.tif")}

	out := filepath.Join(dir, "out1")
	if _, err := run(out, filepath.Join(dir, "masks", "all.tif"), ins...); err != nil {
		t.Fatal(err)
	}
	check(filepath.Join(out, "a.tif"), left)
	check(filepath.Join(out, "b.tif"), left)
	b, _ := os.ReadFile(filepath.Join(out, "a.json"))
	validateItem(t, b)
	var item struct{ Properties map[string]any }
	json.Unmarshal(b, &item)
	if src := item.Properties[stac.PropSource].(map[string]any); !strings.HasSuffix(src["mask"].(string), "masks/all.tif") || src["mask_size_bytes"] == nil {
		t.Errorf("got pnec:source %v, want the mask recorded", src)
	}
	if lin := item.Properties["processing:lineage"].(string); !strings.Contains(lin, "area of interest") {
		t.Errorf("lineage %q does not name the mask", lin)
	}
	// The same mask again: up to date; another mask: redone.
	if r, _ := run(out, filepath.Join(dir, "masks", "all.tif"), ins...); r["a.tif"].Status != StatusSkipped {
		t.Errorf("same mask: %s, want skipped", r["a.tif"].Status)
	}
	if r, _ := run(out, filepath.Join(dir, "masks", "{key}.tif"), ins...); r["a.tif"].Status != StatusDone || r["b.tif"].Status != StatusDone {
		t.Errorf("other masks: %s %s, want both done", r["a.tif"].Status, r["b.tif"].Status)
	}
	check(filepath.Join(out, "a.tif"), left)
	check(filepath.Join(out, "b.tif"), top)

	out = filepath.Join(dir, "out3")
	r, err := run(out, "asset:aoi", filepath.Join(dir, "stac", "s.json"), ins[0])
	if !errors.Is(err, ErrNoMask) {
		t.Errorf("a file input with asset:ROLE: got %v, want ErrNoMask", err)
	}
	if r["s.tif"].Status != StatusDone || r["a.tif"].Status != StatusFailed || !strings.Contains(r["a.tif"].Reason, `role "aoi"`) {
		t.Errorf("got %+v and %+v, want the STAC scene done and the file failed for its missing mask", r["s.tif"], r["a.tif"])
	}
	check(filepath.Join(out, "scene-s.tif"), top)
}
