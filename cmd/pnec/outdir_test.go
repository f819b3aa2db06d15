package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
)

// TestOutputIsDirectoryRefused: a directory where any output goes (a
// product's sidecar, style, probabilities or Float32 reliability file, a
// batch product's style, the model's Item of train and model-item, the
// output payload) is refused before any work with one line naming it.
// Before, it was found only when the finished file was renamed onto it
// ("rename ...: file exists"), after all the work, leaving the rest behind.
func TestOutputIsDirectoryRefused(t *testing.T) {
	pnecBinary(t)
	modelPath := fixture.Model(t)
	for _, tc := range []struct {
		name string
		// setup returns the arguments, the directory in the way and the
		// outputs that must not appear.
		setup func(t *testing.T, d string) (args []string, dir string, absent []string)
	}{
		{"classify style", func(t *testing.T, d string) ([]string, string, []string) {
			out := filepath.Join(d, "out.tif")
			return []string{"classify", "-q", "--model", modelPath, "--scene", goodScene(t, d), "--out", out}, filepath.Join(d, "out.qml"), []string{out}
		}},
		{"classify probabilities", func(t *testing.T, d string) ([]string, string, []string) {
			out := filepath.Join(d, "out.tif")
			return []string{"classify", "-q", "--model", modelPath, "--scene", goodScene(t, d), "--out", out, "--probabilities", "recovered"},
				filepath.Join(d, "out.probabilities.tif"), []string{out}
		}},
		{"classify float32 reliability", func(t *testing.T, d string) ([]string, string, []string) {
			out := filepath.Join(d, "out.tif")
			return []string{"classify", "-q", "--model", modelPath, "--scene", goodScene(t, d), "--out", out, "--reliability", "float32"},
				filepath.Join(d, "out.reliability.tif"), []string{out}
		}},
		{"classify sidecar", func(t *testing.T, d string) ([]string, string, []string) {
			out := filepath.Join(d, "out.tif")
			return []string{"classify", "-q", "--model", modelPath, "--scene", goodScene(t, d), "--out", out}, out + ".aux.xml", []string{out}
		}},
		{"batch style", func(t *testing.T, d string) ([]string, string, []string) {
			in, out := filepath.Join(d, "in"), filepath.Join(d, "out")
			os.MkdirAll(in, 0o755)
			goodScene(t, in)
			return []string{"batch", "-q", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(d, "r.jsonl"), in},
				filepath.Join(out, "good.qml"), []string{filepath.Join(out, "good.tif"), filepath.Join(out, "good.json")}
		}},
		{"classify thumbnail", func(t *testing.T, d string) ([]string, string, []string) {
			out := filepath.Join(d, "out.tif")
			return []string{"classify", "-q", "--model", modelPath, "--scene", goodScene(t, d), "--out", out}, filepath.Join(d, "out.thumbnail.png"), []string{out}
		}},
		{"batch thumbnail", func(t *testing.T, d string) ([]string, string, []string) {
			in, out := filepath.Join(d, "in"), filepath.Join(d, "out")
			os.MkdirAll(in, 0o755)
			goodScene(t, in)
			return []string{"batch", "-q", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(d, "r.jsonl"), in},
				filepath.Join(out, "good.thumbnail.png"), []string{filepath.Join(out, "good.tif"), filepath.Join(out, "good.json")}
		}},
		{"batch catalog", func(t *testing.T, d string) ([]string, string, []string) {
			in, out := filepath.Join(d, "in"), filepath.Join(d, "out")
			os.MkdirAll(in, 0o755)
			goodScene(t, in)
			return []string{"batch", "-q", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(d, "r.jsonl"), in},
				filepath.Join(out, "catalog.json"), []string{filepath.Join(out, "good.tif"), filepath.Join(out, "good.json")}
		}},
		{"batch report page", func(t *testing.T, d string) ([]string, string, []string) {
			in, out := filepath.Join(d, "in"), filepath.Join(d, "out")
			os.MkdirAll(in, 0o755)
			goodScene(t, in)
			return []string{"batch", "-q", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(d, "r.jsonl"), in},
				filepath.Join(out, "index.html"), []string{filepath.Join(out, "good.tif"), filepath.Join(out, "good.json")}
		}},
		{"batch payload-out", func(t *testing.T, d string) ([]string, string, []string) {
			in, out := filepath.Join(d, "in"), filepath.Join(d, "out")
			os.MkdirAll(in, 0o755)
			goodScene(t, in)
			payload := filepath.Join(d, "payload.json")
			os.WriteFile(payload, []byte(`{"type":"FeatureCollection","features":[],"process":[{"tasks":{}}]}`), 0o644)
			return []string{"batch", "-q", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(d, "r.jsonl"),
					"--payload", payload, "--payload-out", filepath.Join(d, "answer.json"), in},
				filepath.Join(d, "answer.json"), []string{filepath.Join(out, "good.tif")}
		}},
		{"model-item out", func(t *testing.T, d string) ([]string, string, []string) {
			return []string{"model-item", "-q", "--model", modelPath, "--out", filepath.Join(d, "item")}, filepath.Join(d, "item"), nil
		}},
		{"train model item", func(t *testing.T, d string) ([]string, string, []string) {
			s, l := writeTinyScene(t, d, 8, 8, 6)
			out := filepath.Join(d, "m.pnec")
			return append([]string{"train", "-q", "--scene", s, "--labels", l, "--out", out, "--epochs", "2"}, tinyFlags...),
				out + ".json", []string{out}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			args, dir, absent := tc.setup(t, d)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			r := runPnec(t, 2*time.Minute, args...)
			t.Logf("exit %d in %s: %s", r.code, r.elapsed.Round(time.Millisecond), strings.TrimSpace(r.stderr))
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], dir) || !strings.Contains(lines[0], "is a directory") {
				t.Errorf("exit %d, stderr %q: want exit 1 and one line saying %s is a directory", r.code, r.stderr, dir)
			}
			for _, p := range absent {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was written: the refusal must come before any work", p)
				}
			}
		})
	}
}
