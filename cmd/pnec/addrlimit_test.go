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
	for _, args := range [][]string{
		{"--version"},
		{"classify", "--model", modelPath, "--scene", scene, "--out", product, "--backend", "go"},
	} {
		script := `ulimit -v "$1" && shift && exec "$@"`
		cmd := exec.Command("bash", append([]string{"-c", script, "bash", strconv.Itoa(addressSpaceLimitKB), bin}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("pnec %s under ulimit -v %d: %v\n%s", strings.Join(args, " "), addressSpaceLimitKB, err, tail(string(out), 2000))
		}
	}
	if _, err := os.Stat(product); err != nil {
		t.Errorf("no product under the limit: %v", err)
	}
}
