package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
)

// validPercent is the valid share of the class band (the first band
// gdalinfo -stats lists) of a product by an independent reader; -1 when
// gdalinfo cannot say.
func validPercent(t *testing.T, path string) float64 {
	t.Helper()
	out, err := exec.Command("gdalinfo", "-stats", path).CombinedOutput()
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "STATISTICS_VALID_PERCENT="); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// TestWriteFailureIsNotIgnored runs classify under a sweep of address-space
// limits (prlimit --as) with 16384 px COG tiles, so that GDAL runs out of
// memory at various points of the write, on its worker threads among
// others ("PredictorEncodeTile: Out of memory" there left a product of
// no-data tiles and exit status 0). Whatever the limit, a run either exits 0
// with a product that has data, or fails and publishes nothing (a failed run
// that exits 1 leaves no temporary either; below about 2.5 GB the Go runtime
// and in a narrow band GDAL's C++ code abort, which no program can clean
// up after).
func TestWriteFailureIsNotIgnored(t *testing.T) {
	pnecBinary(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	if _, err := exec.LookPath("gdalinfo"); err != nil {
		t.Skip("gdalinfo is not installed: the product cannot be checked independently")
	}
	modelPath := fixture.ModelFile(t)
	scene := goodScene(t, t.TempDir())
	gdalFailed := 0
	// Ascending, up to the first success after GDAL failed (larger limits
	// only succeed too, slowly).
	for gb := 2.0; gb <= 8; gb += 0.5 {
		dir := t.TempDir()
		out := filepath.Join(dir, "p.tif")
		limit := strconv.FormatInt(int64(gb*1e9), 10)
		r := runProgram(t, time.Minute, prlimit, "--as="+limit, pnecBinary(t),
			"classify", "--quiet", "--model", modelPath, "--scene", scene, "--out", out, "--co", "BLOCKSIZE=16384", "--max-memory", "64G")
		msg := strings.TrimSpace(r.stderr)
		if i := strings.LastIndex(msg, "\npnec: "); i >= 0 {
			msg = msg[i+1:]
		}
		t.Logf("--as %.1f GB: exit %d in %s: %.300s", gb, r.code, r.elapsed.Round(time.Millisecond), msg)
		if strings.Contains(r.stderr, "GDAL failed while the product was written") {
			gdalFailed++
		}
		_, statErr := os.Stat(out)
		switch {
		case r.hung:
			// Under some limits GDAL or OpenBLAS cannot start a thread and
			// waits for it (seen once here, while other work ran): the
			// run is killed, which must not have published anything.
			t.Logf("--as %.1f GB: still running after a minute, killed", gb)
			if statErr == nil {
				t.Errorf("--as %.1f GB: a run killed while it hung published a product", gb)
			}
		case r.code == 0 && statErr != nil:
			t.Errorf("--as %.1f GB: exit 0 without a product", gb)
		case r.code == 0:
			if v := validPercent(t, out); v <= 0 {
				t.Errorf("--as %.1f GB: exit 0 with a product whose class band has %.1f%% valid pixels (want > 0)", gb, v)
			}
			if gdalFailed > 0 {
				gb = 99 // done
			}
		case statErr == nil:
			t.Errorf("--as %.1f GB: exit %d, and a product was published anyway", gb, r.code)
		case r.code == 1:
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
				t.Errorf("--as %.1f GB: failed run left %v", gb, left)
			}
		}
	}
	if gdalFailed == 0 {
		t.Skip("no limit of the sweep made GDAL fail while writing on this machine: the path is not exercised")
	}
	t.Logf("%d runs failed on a GDAL failure while writing", gdalFailed)
}

// runProgram is runPnec for another program (prlimit running pnec, say);
// a run still going at limit is killed and comes back with hung set.
func runProgram(t *testing.T, limit time.Duration, prog string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	r := runResult{stdout: so.String(), stderr: se.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		r.hung = true // killed at the limit (code -1)
		r.code = -1
		return r
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %s: %v", prog, strings.Join(args, " "), err)
	}
	return r
}
