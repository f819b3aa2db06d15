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
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

// TestRunQualityMasks: a batch with an area of interest and a quality mask
// classifies the pixels inside the area that the quality mask does not
// flag; the Item records the quality mask (pnec:source and lineage), the
// same quality mask again is up to date, a changed or dropped one redoes
// the scene, and a product that would replace the quality mask is refused
// before any work.
func TestRunQualityMasks(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "in", "a.tif"), 8)
	left := func(r, c int) bool { return c < 20 }
	top := func(r, c int) bool { return r < 10 }
	aoi := writeMask(t, filepath.Join(dir, "masks", "left.tif"), left)
	clouds := writeMask(t, filepath.Join(dir, "masks", "clouds.tif"), top)
	out := filepath.Join(dir, "out")
	run := func(qms ...processor.QualityMask) (map[string]SceneReport, error) {
		var rep bytes.Buffer
		_, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: []string{scene}, Jobs: 1, Mask: aoi,
			Options: processor.Options{QualityMasks: qms}, Report: &rep, Version: "test"})
		if rep.Len() == 0 {
			return nil, err // refused before any scene
		}
		return readReport(t, rep.Bytes()), err
	}
	if _, err := run(processor.QualityMask{Path: clouds}); err != nil {
		t.Fatal(err)
	}
	cls := productClasses(t, filepath.Join(out, "a.tif"))
	for r := 0; r < fixture.Rows; r++ {
		for c := 0; c < fixture.Cols; c++ {
			want := left(r, c) && !top(r, c)
			if got := cls[r*fixture.Cols+c] != 0; got != want {
				t.Fatalf("pixel (%d,%d): classified %v, want %v (inside the area of interest, not flagged)", r, c, got, want)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	validateItem(t, b)
	var item struct{ Properties map[string]any }
	if err := json.Unmarshal(b, &item); err != nil {
		t.Fatal(err)
	}
	if src := item.Properties[stac.PropSource].(map[string]any); !strings.Contains(src["quality_masks"].(string), "masks/clouds.tif") {
		t.Errorf("got pnec:source %v, want the quality mask recorded", src)
	}
	if lin := item.Properties["processing:lineage"].(string); !strings.Contains(lin, "quality masks "+clouds) || !strings.Contains(lin, "area of interest") {
		t.Errorf("lineage %q does not name the quality mask and the area of interest", lin)
	}
	if r, _ := run(processor.QualityMask{Path: clouds}); r["a.tif"].Status != StatusSkipped {
		t.Errorf("same quality mask: %s, want skipped", r["a.tif"].Status)
	}
	if r, _ := run(processor.QualityMask{Path: clouds, Bands: []int{0}}); r["a.tif"].Status != StatusDone {
		t.Errorf("quality mask with other bands: %s, want done", r["a.tif"].Status)
	}
	// A changed quality mask file (another time, same name) redoes it too.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(clouds, later, later); err != nil {
		t.Fatal(err)
	}
	if r, _ := run(processor.QualityMask{Path: clouds, Bands: []int{0}}); r["a.tif"].Status != StatusDone {
		t.Errorf("quality mask file changed: %s, want done", r["a.tif"].Status)
	}
	if r, _ := run(); r["a.tif"].Status != StatusDone {
		t.Errorf("no quality mask: %s, want done", r["a.tif"].Status)
	}
	cls = productClasses(t, filepath.Join(out, "a.tif"))
	if cls[fixture.Cols+1] == 0 {
		t.Errorf("without the quality mask, pixel (1,1) is not classified")
	}

	// A product that would be the quality mask.
	over := filepath.Join(out, "a.tif")
	before, _ := os.ReadFile(over)
	if _, err := run(processor.QualityMask{Path: over}); !errors.Is(err, processor.ErrOutputIsInput) {
		t.Errorf("a product over the quality mask: got %v, want ErrOutputIsInput", err)
	}
	if after, _ := os.ReadFile(over); !bytes.Equal(before, after) {
		t.Errorf("the quality mask %s changed", over)
	}
}
