package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
)

// TestClassifyProbabilitiesCLI runs pnec classify with --probabilities and
// --top-k and reads the probabilities file with rasterio, an independent
// reader; bad combinations of the flags fail with one line naming them.
func TestClassifyProbabilitiesCLI(t *testing.T) {
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	scene := goodScene(t, dir)
	out := filepath.Join(dir, "map.tif")
	r := runPnec(t, 2*time.Minute, "classify", "--quiet", "--model", modelPath, "--probabilities", "recovered", "--top-k", "2", scene, out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Quiet means nothing on stderr: GDAL printed an error per block of
	// the probabilities stage when its threads read it.
	if r.stderr != "" {
		t.Errorf("stderr of a quiet run: %q", r.stderr)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import rasterio").Run(); err != nil {
		t.Log("no rasterio (apt-get install python3-rasterio): the file is not read independently")
	} else {
		script := `import sys, rasterio
p = rasterio.open(sys.argv[1]); c = rasterio.open(sys.argv[2])
a = p.read(1, masked=True); b = c.read(1, masked=True)
assert p.descriptions == ("class_1", "probability_1", "class_2", "probability_2"), p.descriptions
assert p.nodatavals == (255.0,) * 4, p.nodatavals
assert p.units[1] == "percent", p.units
assert (a.mask == b.mask).all() and (a == b).all(), "class_1 is not the class band"
pr = p.read(2, masked=True)
assert pr.min() >= 0 and pr.max() <= 100, (pr.min(), pr.max())
print("ok", p.count, int(pr.mean()))`
		o, err := exec.Command("/usr/bin/python3", "-c", script, strings.TrimSuffix(out, ".tif")+".probabilities.tif", out).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(o), "ok 4") {
			t.Errorf("rasterio: %v\n%s", err, o)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--top-k", "2"}, "--top-k needs --probabilities"},
		{[]string{"--probabilities", "smooth"}, "--probabilities smooth: want recovered or network"},
		{[]string{"--probabilities", "network", "--top-k", "9"}, "--top-k 9"},
	} {
		args := append([]string{"classify", "--quiet", "--model", modelPath}, tc.args...)
		r := runPnec(t, time.Minute, append(args, scene, filepath.Join(dir, "bad.tif"))...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
