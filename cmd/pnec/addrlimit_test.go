package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// addressSpaceLimitKB is the address-space limit (ulimit -v, in KiB) a site
// may set: the model's heap guard once mapped 1 GiB at process start, so
// every command, pnec --version included, died with a Go out-of-memory dump
// under 2.8 GiB or less.
const addressSpaceLimitKB = 2000000

// TestRunsUnderAddressSpaceLimit runs pnec --version and a small classify
// under ulimit -v 2000000 (bash's ulimit in a child shell) and checks that
// both succeed and the product is written.
func TestRunsUnderAddressSpaceLimit(t *testing.T) {
	bin := pnecBinary(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for ulimit -v")
	}
	modelPath, scene, dir := classifyFixture(t)
	product := filepath.Join(dir, "product.tif")
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--version"}},
		{nil, []string{"classify", "--model", modelPath, "--scene", scene, "--out", product, "--backend", "go"}},
		// As many threads as a 16-core node runs: glibc's malloc arenas (64
		// MiB of address space each, up to 8 per core) once made this fail
		// with or without the heap guard; geo caps them under a limit.
		{[]string{"GOMAXPROCS=16", "GDAL_NUM_THREADS=16"}, []string{"classify", "--model", modelPath, "--scene", scene, "--out", product, "--backend", "go"}},
	} {
		script := `ulimit -v "$1" && shift && exec "$@"`
		cmd := exec.Command("bash", append([]string{"-c", script, "bash", strconv.Itoa(addressSpaceLimitKB), bin}, tc.args...)...)
		cmd.Env = append(os.Environ(), tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s pnec %s under ulimit -v %d: %v\n%s", strings.Join(tc.env, " "), strings.Join(tc.args, " "), addressSpaceLimitKB, err, tail(string(out), 2000))
		}
	}
	if _, err := os.Stat(product); err != nil {
		t.Errorf("no product under the limit: %v", err)
	}
}
