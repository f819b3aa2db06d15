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
	modelPath := fixture.Model(t)
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

// TestBatchCatalogPolicyMask: --mask asset:ROLE takes the Item's mask
// asset under the catalog policy too: an absolute path outside the folder
// is refused with one line (it was read and the scene classified, exit 0).
func TestBatchCatalogPolicyMask(t *testing.T) {
	pnecBinary(t)
	modelPath := fixture.Model(t)
	cat := t.TempDir()
	scene := goodScene(t, cat)
	mask := filepath.Join(t.TempDir(), "aoi.tif") // a raster mask outside the folder: non-zero everywhere
	b, _ := os.ReadFile(scene)
	os.WriteFile(mask, b, 0o644)
	item := filepath.Join(cat, "item.json")
	os.WriteFile(item, []byte(`{"type":"Feature","stac_version":"1.0.0","id":"flight","geometry":null,"properties":{"datetime":"2024-06-01T00:00:00Z"},"links":[],"assets":{"hsi":{"href":"good.tif","roles":["data"]},"aoi":{"href":"`+mask+`","roles":["aoi"]}}}`), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	r := runPnec(t, 2*time.Minute, "batch", "--quiet", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(t.TempDir(), "r.jsonl"), "--mask", "asset:aoi", item)
	t.Logf("exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], `mask asset "aoi"`) || !strings.Contains(lines[0], "(an absolute path)") || !strings.Contains(lines[0], "--allow-outside-catalog") {
		t.Errorf("exit %d, stderr %q: want exit 1 and one line refusing the mask asset, naming --allow-outside-catalog", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "flight.tif")); err == nil {
		t.Error("the scene was classified within a mask outside the catalog")
	}
}
