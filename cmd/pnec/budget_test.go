package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/processor"
)

// smallestPlanBytes is the smallest budget the planner accepts for scene
// through the model at modelPath: its plan on the model's grid with one
// tile in flight (the BudgetError of a budget below it names it).
func smallestPlanBytes(t *testing.T, modelPath, scene string, base processor.Options) int64 {
	t.Helper()
	m := fixture.LoadModelFile(t, modelPath)
	info := fixture.SceneInfo(t, scene)
	opts := base
	opts.MaxMemoryBytes = 1
	_, _, err := processor.PlanSceneInfo(info, m, opts)
	var be *processor.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("a 1-byte budget: %v, want a BudgetError", err)
	}
	return be.NeedBytes
}

// TestBudgetHolds runs the real binary on a wide scene (the shape whose
// canvas stripe the old planner missed) and a tall one with a small
// --max-memory and checks the kernel's peak RSS of the process against it:
// within 10% above.
func TestBudgetHolds(t *testing.T) {
	bin := pnecBinary(t)
	modelPath := fixture.Model(t)
	for _, tc := range []struct {
		name       string
		rows, cols int
		budget     string
		extra      []string          // more flags
		opts       processor.Options // what they ask for
	}{
		{"wide", 160, 8192, "260M", nil, processor.Options{}},
		{"tall", 3072, 256, "160M", nil, processor.Options{}},
		// The probabilities' rows in flight and stage cache are counted too.
		{"wide_probabilities", 160, 8192, "260M", []string{"--probabilities", "network"}, processor.Options{Probabilities: processor.ProbabilitiesNetwork}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			scene := bigFixtureScene(t, dir, tc.rows, tc.cols)
			budget, _ := memory.ParseBytes(tc.budget)
			// A recalibrated memory model may need more for the smallest
			// plan (64 px tiles): keep the budget above that, so the test
			// checks the budget holds rather than the calibration's level.
			if need := smallestPlanBytes(t, modelPath, scene, tc.opts); budget < need*5/4 {
				budget = need * 5 / 4
			}
			classifyWithinBudget(t, bin, modelPath, scene, dir, budget, "", tc.extra...)
		})
	}
}

// manySourceVRT writes a VRT mosaic of the fixture scene with one source
// per 8 x 8 pixel cell in every band (rows/8 * cols/8 sources a band): a
// scene whose open VRT holds more memory than its pixels need.
func manySourceVRT(t *testing.T, dir string, rows, cols int) string {
	t.Helper()
	return fixtureVRT(t, dir, "mosaic.vrt", rows, cols, func(b *strings.Builder, band int) {
		for y := 0; y < rows; y += 8 {
			for x := 0; x < cols; x += 8 {
				fmt.Fprintf(b, "    <SimpleSource><SourceFilename relativeToVRT=\"1\">fixture.tif</SourceFilename><SourceBand>%d</SourceBand>"+
					"<SrcRect xOff=\"%d\" yOff=\"%d\" xSize=\"8\" ySize=\"8\"/><DstRect xOff=\"%d\" yOff=\"%d\" xSize=\"8\" ySize=\"8\"/></SimpleSource>\n",
					band, (x/8)%(fixture.Cols/8)*8, (y/8)%(fixture.Rows/8)*8, x, y)
			}
		}
	})
}

// classifyWithinBudget runs the binary's classify of scene with
// --max-memory budget and checks the kernel's peak RSS of the process
// within 10% above it; note is logged beside the figures.
func classifyWithinBudget(t *testing.T, bin, modelPath, scene, dir string, budget int64, note string, extra ...string) {
	t.Helper()
	args := append([]string{"classify", "--backend", "go", "--model", modelPath, "--scene", scene,
		"--out", filepath.Join(dir, "p.tif"), "--max-memory", fmt.Sprint(budget)}, extra...)
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, tail(string(out), 2000))
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("peak RSS %s for --max-memory %s (%.2f)%s\n%s", memory.FormatBytes(peak), memory.FormatBytes(budget),
		float64(peak)/float64(budget), note, tail(string(out), 400))
	if float64(peak) > 1.1*float64(budget) {
		t.Errorf("peak RSS %s, more than 10%% over --max-memory %s", memory.FormatBytes(peak), memory.FormatBytes(budget))
	}
}

// TestBudgetHoldsManySourceVRT classifies a VRT mosaic of 6144 sources in
// each of 8 bands (GDAL holds about 170 MB for them once it is open, more
// than the pixels' plan) under the smallest budget the plan accepts, and
// checks the kernel's peak RSS within 10% of it: the plan once left the
// sources out and such mosaics peaked 5-8% over --max-memory (552 sources
// a band, 200 bands), a third over here.
func TestBudgetHoldsManySourceVRT(t *testing.T) {
	bin := pnecBinary(t)
	modelPath := fixture.Model(t)
	dir := t.TempDir()
	scene := manySourceVRT(t, dir, 512, 768)
	info := fixture.SceneInfo(t, scene)
	if want := 64 * 96 * fixture.Bands; info.VRTSources != want {
		t.Fatalf("Info.VRTSources = %d, want %d", info.VRTSources, want)
	}
	budget := smallestPlanBytes(t, modelPath, scene, processor.Options{}) * 5 / 4
	classifyWithinBudget(t, bin, modelPath, scene, dir, budget, ", of which VRT sources "+memory.FormatBytes(processor.VRTSourcesBytes(info)))
}

// TestBudgetTooSmallNamesSmallest: a budget that cannot hold one tile is
// refused before any work in one line naming the smallest that works; that
// budget runs (one tile in flight), and its map is the one an ample budget
// writes, byte for byte: the budget never changes the map.
func TestBudgetTooSmallNamesSmallest(t *testing.T) {
	bin := pnecBinary(t)
	modelPath := fixture.Model(t)
	dir := t.TempDir()
	scene := bigFixtureScene(t, dir, 1000, 1100)
	run := func(budget, out string) (string, error) {
		cmd := exec.Command(bin, "classify", "--backend", "go", "--model", modelPath, "--scene", scene,
			"--out", filepath.Join(dir, out), "--max-memory", budget)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	msg, err := run("64M", "small.tif")
	if err == nil {
		t.Fatalf("--max-memory 64M ran:\n%s", msg)
	}
	re := regexp.MustCompile(`give --max-memory (\S+) or more`)
	m := re.FindStringSubmatch(msg)
	if m == nil || strings.Count(strings.TrimSpace(msg), "\n") != 0 || !strings.Contains(msg, "384x384 tiles") {
		t.Fatalf("refusal %q: want one line naming the tiles and the smallest budget", msg)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*small*")); len(left) > 0 {
		t.Errorf("refused run left %v", left)
	}
	out, err := run(m[1], "smallest.tif")
	if err != nil {
		t.Fatalf("the named --max-memory %s: %v\n%s", m[1], err, tail(out, 2000))
	}
	if !strings.Contains(out, "tile in flight") && !strings.Contains(out, "tiles in flight") {
		t.Errorf("summary does not say the tiles in flight:\n%s", tail(out, 1000))
	}
	if out, err := run("32G", "ample.tif"); err != nil {
		t.Fatalf("--max-memory 32G: %v\n%s", err, tail(out, 2000))
	}
	a, b := classBand(t, filepath.Join(dir, "smallest.tif")), classBand(t, filepath.Join(dir, "ample.tif"))
	if !slices.Equal(a, b) {
		t.Errorf("--max-memory %s and 32G wrote different class bands", m[1])
	}
	t.Logf("refused: %s", strings.TrimSpace(msg))
}

// classBand reads a product's class band.
func classBand(t *testing.T, path string) []float32 {
	t.Helper()
	s, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := s.Info()
	b, err := s.ReadWindow(context.Background(), geo.Window{Cols: in.Cols, Rows: in.Rows})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, in.Rows*in.Cols)
	for i := range out {
		out[i] = b.Data[i*b.Bands]
	}
	return out
}
