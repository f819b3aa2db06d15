package pipelines

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/processor"
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
				if err := fixture.WriteScene(filepath.Join(in, s), uint64(i+1)); err != nil {
					t.Fatal(err)
				}
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
