package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/stac"
)

// bigScene writes a rows x cols fixture scene by repeating the small one.
func bigScene(t *testing.T, path string, rows, cols int, seed uint64) {
	t.Helper()
	base, _ := fixture.SceneData(seed)
	nb := fixture.Bands
	d := make([]float32, rows*cols*nb)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			src := ((r%fixture.Rows)*fixture.Cols + c%fixture.Cols) * nb
			copy(d[(r*cols+c)*nb:(r*cols+c+1)*nb], base[src:src+nb])
		}
	}
	if err := fixture.WriteRaster(path, rows, cols, nb, d); err != nil {
		t.Fatal(err)
	}
}

// classChecksum is gdalinfo's checksum of band 1 (class) of a product.
func classChecksum(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("gdalinfo", "-checksum", path).CombinedOutput()
	if err != nil {
		t.Fatalf("gdalinfo -checksum %s: %v\n%s", path, err, out)
	}
	if !strings.Contains(string(out), "LAYOUT=COG") {
		t.Errorf("%s: gdalinfo does not report LAYOUT=COG", path)
	}
	m := regexp.MustCompile(`(?s)Band 1 .*?Checksum=(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no band 1 checksum in gdalinfo output of %s", path)
	}
	return m[1]
}

// reportStatuses reads a batch report file: input base name -> status.
func reportStatuses(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct{ Input, Status, Reason string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("report line %q: %v", sc.Text(), err)
		}
		out[filepath.Base(r.Input)] = r.Status
	}
	return out
}

// TestBatchKill9 kills a batch with SIGKILL in the middle of a scene (once
// while a scene is locked, once while a product's temporary file exists),
// checks that no partial product is ever at a final path, reruns it, and
// compares every product with an uninterrupted run's.
func TestBatchKill9(t *testing.T) {
	bin := pnecBinary(t)
	if _, err := exec.LookPath("gdalinfo"); err != nil {
		t.Skip("gdalinfo not installed: products cannot be checked independently")
	}
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	const scenes = 5
	for i := 0; i < scenes; i++ {
		bigScene(t, filepath.Join(dir, "in", fmt.Sprintf("s%d.tif", i)), 160, 192, uint64(20+i))
	}
	args := func(out, report string) []string {
		return []string{"batch", "--quiet", "--jobs", "1", "--backend", "go", "--model", modelPath,
			"--out-dir", out, "--report", report, filepath.Join(dir, "in")}
	}

	ref := filepath.Join(dir, "ref")
	if r := runPnec(t, 5*time.Minute, args(ref, filepath.Join(dir, "ref.jsonl"))...); r.code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s", r.code, r.stderr)
	}

	out := filepath.Join(dir, "out")
	// checkFinal: whatever is at a final path is complete: a COG, a
	// thumbnail PNG, the root Catalog, the report page.
	checkFinal := func(stage string) {
		products, _ := filepath.Glob(filepath.Join(out, "[^.]*.tif"))
		for _, p := range products {
			out, err := exec.Command("gdalinfo", p).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "LAYOUT=COG") {
				t.Errorf("%s: %s at its final path is not a complete COG: %v\n%s", stage, filepath.Base(p), err, out)
			}
		}
		checkCompleteCompanions(t, stage, out)
	}
	// Kill when the out directory holds a file matching the pattern and
	// at least minDone Items: first while the first scene is locked, then
	// while a later scene's COG temporary is being written.
	for i, kill := range []struct {
		pattern string
		minDone int
	}{{`\.pnec-lock$`, 0}, {`\.tmp\.tif$`, 2}} {
		re := regexp.MustCompile(kill.pattern)
		cmd := exec.Command(bin, args(out, filepath.Join(dir, fmt.Sprintf("kill%d.jsonl", i)))...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		killed := false
	poll:
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
			select {
			case <-done:
				break poll
			default:
			}
			ents, _ := os.ReadDir(out)
			items := 0
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
					items++
				}
			}
			for _, e := range ents {
				if items >= kill.minDone && re.MatchString(e.Name()) {
					cmd.Process.Signal(syscall.SIGKILL)
					killed = true
					<-done
					break poll
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		if !killed {
			t.Fatalf("kill %d: batch ended (or timed out) before a file matching %s appeared", i, kill.pattern)
		}
		checkFinal(fmt.Sprintf("after kill %d", i))
	}

	var stale []string
	ents0, _ := os.ReadDir(out)
	for _, e := range ents0 {
		if strings.Contains(e.Name(), "tmp") || strings.Contains(e.Name(), "stage") || strings.Contains(e.Name(), "lock") {
			stale = append(stale, e.Name())
		}
	}
	if len(stale) == 0 {
		t.Errorf("no temporary or lock files after kill -9 mid-write: the kills did not test the cleanup")
	}
	t.Logf("left by the kills: %v", stale)

	report := filepath.Join(dir, "final.jsonl")
	if r := runPnec(t, 5*time.Minute, args(out, report)...); r.code != 0 {
		t.Fatalf("rerun after kills: exit %d\n%s", r.code, r.stderr)
	}
	st := reportStatuses(t, report)
	var skipped int
	for _, s := range st {
		if s == "skipped" {
			skipped++
		}
	}
	if len(st) != scenes || skipped == 0 || skipped == scenes {
		t.Errorf("rerun statuses %v, want %d scenes, some skipped (finished before the kills) and some done", st, scenes)
	}
	ents, _ := os.ReadDir(out)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		if strings.Contains(e.Name(), "tmp") || strings.Contains(e.Name(), "lock") {
			t.Errorf("left behind after the rerun: %s", e.Name())
		}
	}
	sort.Strings(names)
	for i := 0; i < scenes; i++ {
		p := fmt.Sprintf("s%d.tif", i)
		got, want := classChecksum(t, filepath.Join(out, p)), classChecksum(t, filepath.Join(ref, p))
		if got != want {
			t.Errorf("%s: class band checksum %s after kills and rerun, want %s as in an uninterrupted run", p, got, want)
		}
	}
	t.Logf("output directory after the rerun: %v", names)
	checkCompleteCompanions(t, "after the rerun", out)
	checkWholeNight(t, out, scenes)
}

// checkCompleteCompanions: every thumbnail at its final path decodes as a
// PNG, the root Catalog parses as one, the report page is whole.
func checkCompleteCompanions(t *testing.T, stage, out string) {
	t.Helper()
	thumbs, _ := filepath.Glob(filepath.Join(out, "[^.]*.thumbnail.png"))
	for _, p := range thumbs {
		f, err := os.Open(p)
		if err != nil {
			t.Errorf("%s: %v", stage, err)
			continue
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %s is not a complete PNG: %v", stage, filepath.Base(p), err)
		}
		f.Close()
	}
	if b, err := os.ReadFile(filepath.Join(out, "catalog.json")); err == nil {
		var cat struct{ Type string }
		if err := json.Unmarshal(b, &cat); err != nil || cat.Type != "Catalog" {
			t.Errorf("%s: catalog.json is not a whole Catalog: %v", stage, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "index.html")); err == nil && !strings.HasSuffix(string(b), "</html>\n") {
		t.Errorf("%s: index.html is cut short", stage)
	}
}

// checkWholeNight: after the rerun the Catalog links every scene's Item,
// each Item's thumbnail is there, and the page lists every scene as done
// or skipped with its thumbnail.
func checkWholeNight(t *testing.T, out string, scenes int) {
	t.Helper()
	items := stac.RootItems(filepath.Join(out, "catalog.json"))
	page, _ := os.ReadFile(filepath.Join(out, "index.html"))
	for i := 0; i < scenes; i++ {
		k := fmt.Sprintf("s%d", i)
		if !items[k+".json"] {
			t.Errorf("catalog.json does not link %s.json: %v", k, items)
		}
		if _, err := os.Stat(filepath.Join(out, k+".thumbnail.png")); err != nil {
			t.Errorf("thumbnail of %s: %v", k, err)
		}
		row := regexp.MustCompile(`data-key="` + k + `" data-status="(done|skipped)"`)
		if !row.Match(page) || !strings.Contains(string(page), `src="`+k+`.thumbnail.png"`) {
			t.Errorf("index.html has no done or skipped row with a thumbnail for %s", k)
		}
	}
}

// TestBatchContinuesPastBadScenes: bad inputs fail with their reasons, the
// good scenes of the same batch are classified, the exit status is 1.
func TestBatchContinuesPastBadScenes(t *testing.T) {
	pnecBinary(t)
	modelPath := fixture.Model(t)
	dir := t.TempDir()
	var inputs []string
	for _, bi := range badInputs {
		if bi.okFor["batch"] || bi.knownGap["batch"] != "" {
			continue
		}
		d := filepath.Join(dir, strings.NewReplacer(" ", "_", ".", "_").Replace(bi.name))
		os.MkdirAll(d, 0o755)
		inputs = append(inputs, bi.make(t, d))
	}
	for i := 0; i < 2; i++ {
		p := fixture.Scene(t, filepath.Join(dir, "good", fmt.Sprintf("g%d.tif", i)), uint64(30+i))
		inputs = append(inputs, p)
	}
	out, report := filepath.Join(dir, "out"), filepath.Join(dir, "report.jsonl")
	r := runPnec(t, 5*time.Minute, append([]string{"batch", "--model", modelPath, "--out-dir", out, "--report", report}, inputs...)...)
	if r.code != 1 {
		t.Errorf("exit status %d, want 1", r.code)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if want := fmt.Sprintf("scenes failed"); !strings.HasPrefix(last, "pnec: batch: ") || !strings.Contains(last, want) {
		t.Errorf("last stderr line %q, want 'pnec: batch: N of M scenes failed ...'", last)
	}
	if !strings.Contains(r.stderr, "batch: ") || !strings.Contains(r.stderr, "2 done") {
		t.Errorf("stderr lacks the summary with 2 done:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "batch: report page "+filepath.Join(out, "index.html")) {
		t.Errorf("stderr does not name the report page:\n%s", r.stderr)
	}
	st := reportStatuses(t, report)
	failed := 0
	for k, s := range st {
		if s == "failed" {
			failed++
		} else if s != "done" || !strings.HasPrefix(k, "g") {
			t.Errorf("report: %s %s, want only the good scenes done", k, s)
		}
	}
	if failed != len(inputs)-2 || st["g0.tif"] != "done" || st["g1.tif"] != "done" {
		t.Errorf("report %v: want %d failed and g0, g1 done", st, len(inputs)-2)
	}
	for _, g := range []string{"g0.tif", "g1.tif"} {
		checkCOG(t, filepath.Join(out, g))
	}
}

// TestBatchShardsFromEnv: --shards N with JOB_COMPLETION_INDEX (the
// Kubernetes Indexed Job convention) splits the inputs without overlap.
func TestBatchShardsFromEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model: skipped with -short")
	}
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	for i := 0; i < 4; i++ {
		fixture.Scene(t, filepath.Join(dir, "in", fmt.Sprintf("k%d.tif", i)), uint64(40+i))
	}
	out := filepath.Join(dir, "out")
	seen := map[string]int{}
	for idx := 0; idx < 2; idx++ {
		t.Setenv("JOB_COMPLETION_INDEX", fmt.Sprint(idx))
		report := filepath.Join(dir, fmt.Sprintf("r%d.jsonl", idx))
		if err := run(context.Background(), []string{"pnec", "batch", "--quiet", "--model", modelPath, "--out-dir", out,
			"--shards", "2", "--report", report, filepath.Join(dir, "in")}); err != nil {
			t.Fatalf("shard %d: %v", idx, err)
		}
		for k, s := range reportStatuses(t, report) {
			if s != "done" {
				t.Errorf("shard %d: %s %s, want done", idx, k, s)
			}
			seen[k]++
		}
	}
	if len(seen) != 4 {
		t.Errorf("the two shards did %v, want all 4 scenes once", seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s done %d times", k, n)
		}
	}

	// A Slurm job array (--array=1-2): the shard comes from the array's
	// range without --shards, and the report and Items record it.
	os.Unsetenv("JOB_COMPLETION_INDEX")
	slurmOut := filepath.Join(dir, "slurm")
	seen = map[string]int{}
	for id := 1; id <= 2; id++ {
		for k, v := range map[string]string{"SLURM_ARRAY_TASK_ID": fmt.Sprint(id), "SLURM_ARRAY_TASK_MIN": "1",
			"SLURM_ARRAY_TASK_MAX": "2", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_JOB_ID": "4242"} {
			t.Setenv(k, v)
		}
		report := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", id))
		if err := run(context.Background(), []string{"pnec", "batch", "--quiet", "--model", modelPath, "--out-dir", slurmOut,
			"--report", report, filepath.Join(dir, "in")}); err != nil {
			t.Fatalf("slurm task %d: %v", id, err)
		}
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct {
				Input, Status, Item, Shard, Engine string
				JobID                              string `json:"job_id"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("report line %q: %v", line, err)
			}
			seen[r.Input]++
			want := fmt.Sprintf("%d/2", id-1)
			if r.Shard != want || r.Engine != "slurm" || r.JobID != fmt.Sprintf("4242_%d", id) {
				t.Errorf("task %d report: shard %q engine %q job %q, want %s slurm 4242_%d", id, r.Shard, r.Engine, r.JobID, want, id)
			}
			ib, err := os.ReadFile(r.Item)
			if err != nil {
				t.Fatal(err)
			}
			var item struct{ Properties map[string]any }
			if err := json.Unmarshal(ib, &item); err != nil {
				t.Fatal(err)
			}
			if item.Properties["pnec:shard"] != want || item.Properties["pnec:engine"] != "slurm" || item.Properties["pnec:job_id"] != fmt.Sprintf("4242_%d", id) {
				t.Errorf("task %d Item %s: shard %v engine %v job %v", id, r.Item, item.Properties["pnec:shard"], item.Properties["pnec:engine"], item.Properties["pnec:job_id"])
			}
		}
	}
	if len(seen) != 4 {
		t.Errorf("the two Slurm tasks did %v, want all 4 scenes once", seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s done %d times by the Slurm tasks", k, n)
		}
	}
	for _, k := range []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_JOB_ID"} {
		os.Unsetenv(k)
	}

	for _, tc := range []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"no index", "", []string{"--shards", "2"}, "JOB_COMPLETION_INDEX"},
		{"index out of range", "2", []string{"--shards", "2"}, "shard 2/2"},
		{"both flags", "0", []string{"--shards", "2", "--shard", "0/2"}, "not both"},
		{"bad shard", "", []string{"--shard", "1-2"}, "INDEX/COUNT"},
		{"shard 0/0", "", []string{"--shard", "0/0"}, `--shard: shard "0/0": want a count of at least 1`},
		{"bad datetime", "", []string{"--datetime", "June 2024"}, `--datetime "June 2024"`},
		{"interval backwards", "", []string{"--datetime", "2024-06-30/2024-06-01"}, `--datetime "2024-06-30/2024-06-01"`},
		{"base URL not http", "", []string{"--stac-base-url", "maps/nightly"}, `--stac-base-url "maps/nightly": want an http(s) URL`},
		{"bad license", "", []string{"--license", "all mine!"}, `--license "all mine!"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == "" {
				os.Unsetenv("JOB_COMPLETION_INDEX")
			} else {
				t.Setenv("JOB_COMPLETION_INDEX", tc.env)
			}
			args := append([]string{"pnec", "batch", "--model", modelPath, "--out-dir", out}, tc.args...)
			err := run(context.Background(), append(args, filepath.Join(dir, "in")))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestBatchMovesOnPastFIFO gives batch a FIFO among its inputs (as a raster
// and as a STAC document in a directory): each fails at once as "not a
// regular file" and the good scene after them is classified.
func TestBatchMovesOnPastFIFO(t *testing.T) {
	modelPath, scene, dir := classifyFixture(t)
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.tif", "b.json"} {
		if err := syscall.Mkfifo(filepath.Join(in, n), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	if err := os.Link(scene, filepath.Join(in, "z.tif")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	done := make(chan error, 1)
	var stderr string
	go func() {
		var err error
		_, stderr, err = runCaptured(t, "batch", "--model", modelPath, "--backend", "go", "--out-dir", out, in)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "2 of 3 scenes failed") {
			t.Errorf("batch: %v, want 2 of 3 scenes failed\n%s", err, stderr)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("batch still running after 2 minutes: blocked on a FIFO")
	}
	if _, err := os.Stat(filepath.Join(out, "z.tif")); err != nil {
		t.Errorf("the good scene after the FIFOs was not classified: %v", err)
	}
	if n := strings.Count(stderr, "not a regular file: a FIFO"); n < 2 {
		t.Errorf("stderr names %d FIFOs, want 2:\n%s", n, stderr)
	}
}

// TestBatchOnDriftExitStatus: a scene whose bands are reversed is drift
// fail. By default (--on-drift warn) the batch publishes it and exits 0,
// its report line saying fail; --on-drift fail withholds it and exits 4;
// a bad --on-drift value is one line and exit 1.
func TestBatchOnDriftExitStatus(t *testing.T) {
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	data, _ := fixture.SceneData(8)
	for i := 0; i < len(data); i += fixture.Bands {
		for b := 0; b < fixture.Bands/2; b++ {
			data[i+b], data[i+fixture.Bands-1-b] = data[i+fixture.Bands-1-b], data[i+b]
		}
	}
	scene := filepath.Join(dir, "reversed.tif")
	if err := fixture.WriteRaster(scene, fixture.Rows, fixture.Cols, fixture.Bands, data); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		on         string
		wantCode   int
		wantStatus string
	}{{"warn", 0, "done"}, {"fail", 4, "failed"}} {
		out := filepath.Join(dir, "out-"+tc.on)
		report := filepath.Join(dir, tc.on+".jsonl")
		r := runPnec(t, 2*time.Minute, "batch", "--model", modelPath, "--out-dir", out, "--on-drift", tc.on, "--report", report, "--datetime", "2024-06-01", "-q", scene)
		if r.code != tc.wantCode {
			t.Errorf("--on-drift %s: exit %d, want %d\n%s", tc.on, r.code, tc.wantCode, r.stderr)
		}
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var line struct {
			Status string `json:"status"`
			Drift  string `json:"drift"`
		}
		if err := json.Unmarshal(b, &line); err != nil || line.Status != tc.wantStatus || line.Drift != "fail" {
			t.Errorf("--on-drift %s: report %s, want status %s with drift fail", tc.on, b, tc.wantStatus)
		}
	}
	r := runPnec(t, time.Minute, "batch", "--model", modelPath, "--out-dir", filepath.Join(dir, "x"), "--on-drift", "ignore", "--datetime", "2024-06-01", scene)
	if r.code != 1 || !strings.Contains(r.stderr, "--on-drift ignore") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("--on-drift ignore: exit %d, stderr %q: want 1 and one line naming the flag", r.code, r.stderr)
	}
}
