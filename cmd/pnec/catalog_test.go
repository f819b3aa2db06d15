package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
)

// TestBatchCatalogPolicy: a STAC Item whose asset leads out of its folder
// (an absolute path, a file:// URL, a symbolic link inside the folder) is
// refused by default with a line that names the href and the way to allow
// it; --allow-outside-catalog classifies it.
func TestBatchCatalogPolicy(t *testing.T) {
	pnecBinary(t)
	modelPath, err := fixture.ModelPath()
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	secret := goodScene(t, elsewhere)
	for _, tc := range []struct {
		name string
		href func(cat string) string
		why  string
	}{
		{"absolute path", func(string) string { return secret }, "(an absolute path)"},
		{"file URL", func(string) string { return "file://" + secret }, "(a file:// URL)"},
		{"symbolic link", func(cat string) string {
			os.Symlink(secret, filepath.Join(cat, "scene.tif"))
			return "scene.tif"
		}, "(through a symbolic link, to " + secret + ")"},
	} {
		for _, allow := range []bool{false, true} {
			name := tc.name
			if allow {
				name += "/allowed"
			}
			t.Run(name, func(t *testing.T) {
				cat := t.TempDir()
				item := filepath.Join(cat, "item.json")
				os.WriteFile(item, []byte(`{"type":"Feature","stac_version":"1.0.0","id":"flight","geometry":null,"properties":{"datetime":null},"links":[],"assets":{"hsi":{"href":"`+tc.href(cat)+`","roles":["data"]}}}`), 0o644)
				out := filepath.Join(t.TempDir(), "out")
				args := []string{"batch", "--quiet", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(t.TempDir(), "r.jsonl")}
				if allow {
					args = append(args, "--allow-outside-catalog")
				}
				r := runPnec(t, 2*time.Minute, append(args, item)...)
				t.Logf("exit %d in %s: %s", r.code, r.elapsed.Round(time.Millisecond), strings.TrimSpace(r.stderr))
				_, statErr := os.Stat(filepath.Join(out, "flight.tif"))
				if allow {
					if r.code != 0 || statErr != nil {
						t.Errorf("exit %d, product %v: want it classified", r.code, statErr)
					}
					return
				}
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tc.why) || !strings.Contains(lines[0], "--allow-outside-catalog") {
					t.Errorf("exit %d, stderr %q: want exit 1, one line saying %q and naming --allow-outside-catalog", r.code, r.stderr, tc.why)
				}
				if statErr == nil {
					t.Error("the scene outside the catalog was classified")
				}
			})
		}
	}
}
