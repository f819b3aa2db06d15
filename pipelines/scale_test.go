package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/stac"
)

// upToDatePayload writes a payload of n Items, scene-00000 ... each with
// its own scene file (hard links of one fixture scene, so that they share
// a size and a modification time), and an output folder where every scene
// already has its product: scene-00000's is made by a real run, the others
// are its files under their keys (the Item's JSON with the key replaced),
// which the up-to-date check takes as theirs. It returns the payload, the
// model and the output folder. Making n products by classifying would take
// n x 0.1 s; the clones make a rerun of n up-to-date scenes, the run whose
// time is all per-scene overhead.
func upToDatePayload(tb testing.TB, n int) (*stac.Payload, string, string) {
	tb.Helper()
	modelPath := tinyModel(tb)
	dir := tb.TempDir()
	data := filepath.Join(dir, "data")
	first := fixture.Scene(tb, filepath.Join(data, "scene-00000.tif"), 7)
	feats := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("scene-%05d", i)
		if i > 0 {
			if err := os.Link(first, filepath.Join(data, id+".tif")); err != nil {
				tb.Fatal(err)
			}
		}
		feats[i] = `{"type":"Feature","stac_version":"1.0.0","id":"` + id + `","geometry":null,
			"properties":{"datetime":"2024-06-01T10:30:00Z"},"links":[],
			"assets":{"hsi":{"href":"data/` + id + `.tif","type":"image/tiff; application=geotiff","roles":["data"]}}}`
	}
	read := func(name string, feats []string) *stac.Payload {
		path := writeFile(tb, filepath.Join(dir, name), `{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`],
			"process":[{"tasks":{"pnec":{}},"collection_matchers":[{"type":"catch_all","collection_name":"landcover"}]}]}`)
		f, err := os.Open(path)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		p, err := stac.ReadPayload(f, path)
		if err != nil {
			tb.Fatal(err)
		}
		return p
	}
	out := filepath.Join(dir, "out")
	sum, _, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: out, Jobs: 1, Report: io.Discard, Version: "test"}, read("one.json", feats[:1]))
	if err != nil || sum.Done != 1 {
		tb.Fatalf("first product: %+v, %v", sum, err)
	}
	files, err := filepath.Glob(filepath.Join(out, "scene-00000.*"))
	if err != nil || len(files) < 3 {
		tb.Fatalf("product files of scene-00000: %v, %v", files, err)
	}
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("scene-%05d", i)
		for _, f := range files {
			to := filepath.Join(out, strings.Replace(filepath.Base(f), "scene-00000", id, 1))
			if !strings.HasSuffix(f, ".json") {
				if err := os.Link(f, to); err != nil {
					tb.Fatal(err)
				}
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			writeFile(tb, to, strings.ReplaceAll(string(b), "scene-00000", id))
		}
	}
	return read("payload.json", feats), modelPath, out
}

// runUpToDate reruns the payload of upToDatePayload and fails unless every
// scene was up to date.
func runUpToDate(tb testing.TB, p *stac.Payload, modelPath, out string, jobs int) {
	tb.Helper()
	sum, o, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: out, Jobs: jobs, Report: io.Discard, Version: "test"}, p)
	if err != nil {
		tb.Fatal(err)
	}
	if n := len(p.Features); sum.Skipped != n || len(o["features"].([]any)) != n {
		b, _ := json.Marshal(sum)
		tb.Fatalf("got %s and %d output Items, want %d scenes up to date", b, len(o["features"].([]any)), n)
	}
}

// TestPayloadListsOutputOnce: a payload run reads its output folder a fixed
// number of times, not once per scene. Each scene listed the whole folder
// for its stale temporaries, twice (at its start and in the sweep at the
// run's end), which made a payload of n scenes O(n^2): a rerun of 1,000
// up-to-date scenes spent 69% of its CPU there (on the way to a
// 10,000-scene payload). Counted, not timed: 80 listings for 40 scenes before the fix.
func TestPayloadListsOutputOnce(t *testing.T) {
	p, modelPath, out := upToDatePayload(t, 40)
	// A stale temporary of one scene, as a killed run leaves it: still
	// removed, by the one listing.
	stale := writeFile(t, filepath.Join(out, ".scene-00007.tif.pnec-123.stage.tif"), "partial")
	before := tempfiles.Lists()
	runUpToDate(t, p, modelPath, out, 2)
	if got := tempfiles.Lists() - before; got > 2 {
		t.Errorf("the run listed its output folder %d times for 40 scenes, want at most 2 (once for the scenes, once for the sweep at its end)", got)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary %s: %v, want removed", stale, err)
	}
}

// BenchmarkPayload10k reruns a STAC task payload of 10,000 scenes, every
// one up to date (upToDatePayload): the payload's per-scene work (inputs,
// the checks before work, lock, stale temporaries, up-to-date check,
// output Item) without classifying. One op is the whole run of 10,000.
//
// Measured (AMD EPYC, 2 cores shared with other work, so wall times are
// loose): 36.7, 38.7 and 40.4 s/op with the folder listed once per run
// (1.29 GB and 15.7 M allocations per op); 19.0 and 19.1 s/op (1.02 GB,
// 12.5 M allocations) once samefile's keyer also resolved each folder once
// in the checks before work. Before, listed once per scene, a rerun of
// 1,000 such scenes by pnec batch took 40.8 s wall against 4.6 s after
// (median of 5 paired runs, ratio 0.106), growing as n^2: 10,000 was not
// run.
func BenchmarkPayload10k(b *testing.B) {
	p, modelPath, out := upToDatePayload(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		runUpToDate(b, p, modelPath, out, 0)
	}
}

// BenchmarkChecksBeforeWork10k: the checks a batch of 10,000 new scenes
// makes before any work (inputSet and checkNotInputs: every output of every
// scene, not yet written, against the inputs and the run's files), one op.
//
// Measured (AMD EPYC, 2 cores shared with other work): a payload of 10,000
// scenes run as shard 0/10000 (these checks for all, one scene classified)
// took 16.3 s wall before samefile's keyer resolved each folder once, 4.7 s
// after, and 9.6 s at 2ebb491 (medians of 5 paired runs, pnec batch). This
// benchmark, 5 paired runs: 11.6-15.6 s/op (898 MB, 10.5 M allocations)
// before, 3.0-3.9 s/op (247 MB, 2.0 M allocations) after.
func BenchmarkChecksBeforeWork10k(b *testing.B) {
	dir := b.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		b.Fatal(err)
	}
	inputs := make([]Input, 10000)
	for i := range inputs {
		key := fmt.Sprintf("scene-%05d", i)
		inputs[i] = Input{Name: writeFile(b, filepath.Join(in, key+".tif"), "scene"), Key: key}
	}
	cfg := Config{ModelPath: filepath.Join(dir, "m.pnec"), OutDir: filepath.Join(dir, "out")}
	b.ReportAllocs()
	for b.Loop() {
		if err := cfg.checkNotInputs(inputs, cfg.inputSet(inputs)); err != nil {
			b.Fatal(err)
		}
	}
}
