package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/processor"
)

// TestCreationOptionsRefused: creation options GDAL's COG driver does not
// know or refuses, options it cannot write the product's bands with, and
// tiles whose compression cannot fit the memory budget are refused by
// classify and batch before any work, with one line naming the option,
// and nothing is written (COMPRESS=NOPE and NOPE=1 were accepted silently,
// COMPRESS=WEBP failed after classifying, BLOCKSIZE=16384 ran to 1.6 GB
// under --max-memory 512M and BLOCKSIZE=100000 to 24 GB, killed).
func TestCreationOptionsRefused(t *testing.T) {
	pnecBinary(t)
	modelPath := fixture.Model(t)
	scene := goodScene(t, t.TempDir())
	for _, tc := range []struct {
		co, want string
	}{
		{"COMPRESS=NOPE", "--co COMPRESS=NOPE: 'NOPE' is an unexpected value for COMPRESS"},
		{"NOPE=1", "--co NOPE=1: driver COG does not support creation option NOPE"},
		{"LEVEL=abc", "--co LEVEL=abc"},
		{"BLOCKSIZE=100", "--co BLOCKSIZE=100: want a multiple of 16"},
		{"COMPRESS=WEBP", "--co COMPRESS=WEBP: GDAL cannot write the product"},
		{"COMPRESS=JPEG", "--co COMPRESS=JPEG: GDAL cannot write the product"},
		{"BLOCKSIZE=16384", "BLOCKSIZE creation option"},
		{"BLOCKSIZE=100000", "BLOCKSIZE creation option"},
	} {
		for _, command := range []string{"classify", "batch"} {
			t.Run(tc.co+"/"+command, func(t *testing.T) {
				dir := t.TempDir()
				out := filepath.Join(dir, "out")
				os.Mkdir(out, 0o755)
				args := []string{command, "--quiet", "--model", modelPath, "--co", tc.co, "--max-memory", "512M"}
				if command == "classify" {
					args = append(args, "--scene", scene, "--out", filepath.Join(out, "p.tif"))
				} else {
					args = append(args, "--out-dir", out, "--report", filepath.Join(dir, "r.jsonl"), scene)
				}
				r := runPnec(t, 2*time.Minute, args...)
				t.Logf("exit %d in %s: %s", r.code, r.elapsed.Round(time.Millisecond), strings.TrimSpace(r.stderr))
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
					t.Errorf("exit %d, stderr %q: want exit 1 and one line saying %q", r.code, r.stderr, tc.want)
				}
				if r.elapsed > 10*time.Second {
					t.Errorf("took %s: the refusal must come before any work", r.elapsed.Round(time.Millisecond))
				}
				ents, _ := os.ReadDir(out)
				// pnec batch's report page says what was refused: a complete file.
				ents = slices.DeleteFunc(ents, func(e os.DirEntry) bool { return command == "batch" && e.Name() == "index.html" })
				if len(ents) > 0 {
					t.Errorf("output directory holds %d entries after the refusal", len(ents))
				}
			})
		}
	}
}

// TestBudgetHoldsWithBlockSize: the plan counts what compressing the COG's
// tiles holds, so a run with --co BLOCKSIZE=8192 given its planned peak as
// --max-memory stays within 10% of it (the planner did not count it: the
// run peaked at 473 MiB for a plan of 145 MiB).
func TestBudgetHoldsWithBlockSize(t *testing.T) {
	bin := pnecBinary(t)
	modelPath := fixture.Model(t)
	m := fixture.LoadModel(t)
	dir := t.TempDir()
	scene := goodScene(t, dir)
	info := fixture.SceneInfo(t, scene)
	opts := processor.Options{CreationOptions: []string{"BLOCKSIZE=8192"}, MaxMemoryBytes: 1 << 40}
	p, _, err := processor.PlanSceneInfo(info, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	budget := processor.PlannedBytes(p, info, m, opts)
	cmd := exec.Command(bin, "classify", "--quiet", "--backend", "go", "--model", modelPath, "--scene", scene,
		"--out", filepath.Join(dir, "p.tif"), "--co", "BLOCKSIZE=8192", "--max-memory", fmt.Sprint(budget))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("peak RSS %s for --max-memory %s, the plan (%.2f)", memory.FormatBytes(peak), memory.FormatBytes(budget), float64(peak)/float64(budget))
	if float64(peak) > 1.1*float64(budget) {
		t.Errorf("peak RSS %s, more than 10%% over the planned %s", memory.FormatBytes(peak), memory.FormatBytes(budget))
	}
}
