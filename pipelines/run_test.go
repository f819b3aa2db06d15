package pipelines

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/stacschema"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/stac"
)

func TestMain(m *testing.M) { os.Exit(fixture.RunTests(m)) }

// tinyModel is the fixture's tiny trained model (fixture.Model).
func tinyModel(t testing.TB) string { return fixture.Model(t) }

// batchInputs writes scenes a, b, c, a STAC Item for d, and two bad scenes.
func batchInputs(t *testing.T) (string, []string) {
	dir := t.TempDir()
	for i, n := range []string{"a", "b", "c"} {
		fixture.Scene(t, filepath.Join(dir, "in", n+".tif"), uint64(2+i))
	}
	os.MkdirAll(filepath.Join(dir, "stac", "data"), 0o755)
	fixture.Scene(t, filepath.Join(dir, "stac", "data", "d.tif"), 5)
	writeFile(t, filepath.Join(dir, "stac", "d.json"), itemJSON("scene-d", `"hsi":{"href":"data/d.tif","roles":["data"]}`))
	writeFile(t, filepath.Join(dir, "bad", "garbage.tif"), "this is not a GeoTIFF at all")
	four := make([]float32, fixture.Rows*fixture.Cols*4)
	if err := fixture.WriteRaster(filepath.Join(dir, "bad", "fourbands.tif"), fixture.Rows, fixture.Cols, 4, four); err != nil {
		t.Fatal(err)
	}
	return dir, []string{filepath.Join(dir, "in"), filepath.Join(dir, "stac", "d.json"), filepath.Join(dir, "bad", "*.tif")}
}

func readReport(t *testing.T, b []byte) map[string]SceneReport {
	t.Helper()
	out := map[string]SceneReport{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r SceneReport
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("report line %q: %v", line, err)
		}
		out[filepath.Base(r.Input)] = r
	}
	return out
}

// checkOutDir: every product is a COG with a valid Item; no temporaries or locks remain.
func checkOutDir(t *testing.T, out string, keys []string) {
	t.Helper()
	for _, k := range keys {
		b, err := os.ReadFile(filepath.Join(out, k+".json"))
		if err != nil {
			t.Errorf("item of %s: %v", k, err)
			continue
		}
		validateItem(t, b)
		if gi, err := exec.LookPath("gdalinfo"); err == nil {
			o, err := exec.Command(gi, filepath.Join(out, k+".tif")).CombinedOutput()
			if err != nil || !strings.Contains(string(o), "LAYOUT=COG") {
				t.Errorf("gdalinfo %s.tif: %v, want LAYOUT=COG in:\n%s", k, err, o)
			}
		}
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if strings.Contains(e.Name(), "tmp") || strings.Contains(e.Name(), "lock") {
			t.Errorf("left behind in the output directory: %s", e.Name())
		}
	}
}

func TestRunEndToEnd(t *testing.T) {
	modelPath := tinyModel(t)
	dir, args := batchInputs(t)
	out := filepath.Join(dir, "out")
	coll := filepath.Join(out, "collection.json")
	var events []progress.Event // serialised by Run
	run := func(force bool) (Summary, map[string]SceneReport, error) {
		var rep bytes.Buffer
		events = nil
		sum, err := Run(context.Background(), Config{
			ModelPath: modelPath, OutDir: out, Inputs: args, Jobs: 2, Force: force,
			Collection: coll, Report: &rep, Version: "test",
			Progress: func(ev progress.Event) { events = append(events, ev) },
			Now:      func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) },
		})
		return sum, readReport(t, rep.Bytes()), err
	}

	sum, rep, err := run(false)
	var fe *FailedError
	if !errors.As(err, &fe) || !errors.Is(err, ErrScenesFailed) || fe.Failed != 2 {
		t.Fatalf("first run error %v, want 2 failed scenes", err)
	}
	if sum.Done != 4 || sum.Failed != 2 || sum.Scenes != 6 {
		t.Fatalf("first run %+v, want 4 done, 2 failed of 6", sum)
	}
	for _, n := range []string{"a.tif", "b.tif", "c.tif", "d.tif"} {
		r := rep[n]
		if r.Status != StatusDone || r.Times == nil || r.Times.Total <= 0 || r.Pixels != fixture.Rows*fixture.Cols || r.Backend == "" {
			t.Errorf("report of %s: %+v, want done with times, %d pixels and a backend", n, r, fixture.Rows*fixture.Cols)
		}
	}
	checkBatchEvents(t, events, 6)
	for n, want := range map[string]string{"garbage.tif": "garbage.tif", "fourbands.tif": "band"} {
		r := rep[n]
		if r.Status != StatusFailed || !strings.Contains(r.Reason, want) || strings.Contains(r.Reason, "\n") {
			t.Errorf("report of %s: %+v, want failed with a one-line reason mentioning %q", n, r, want)
		}
		if _, err := os.Stat(filepath.Join(out, strings.TrimSuffix(n, ".tif")+".tif")); err == nil {
			t.Errorf("a product exists for failed scene %s", n)
		}
	}
	keys := []string{"a", "b", "c", "scene-d"}
	checkOutDir(t, out, keys)
	cb, err := os.ReadFile(coll)
	if err != nil {
		t.Fatal(err)
	}
	if err := stacschema.Store(t).Validate(cb, "https://schemas.stacspec.org/v1.0.0/collection-spec/json-schema/collection.json"); err != nil {
		t.Errorf("collection: %v", err)
	}
	if n := strings.Count(string(cb), `"rel": "item"`); n != 4 {
		t.Errorf("collection has %d item links, want 4", n)
	}
	// The item of d carries the source item's datetime and links to it.
	var item struct {
		Properties map[string]any
		Links      []map[string]string
	}
	b, _ := os.ReadFile(filepath.Join(out, "scene-d.json"))
	json.Unmarshal(b, &item)
	if item.Properties["datetime"] != "2024-06-01T10:30:00Z" {
		t.Errorf("scene-d datetime %v, want the source item's 2024-06-01T10:30:00Z", item.Properties["datetime"])
	}
	rels := map[string]string{}
	for _, l := range item.Links {
		rels[l["rel"]] += " " + l["href"]
	}
	// derived_from: the source Item and the model's Item, which the run
	// wrote into the output directory (none beside the model file); no
	// self link without a base URL.
	if rels["derived_from"] != " "+filepath.Join(dir, "stac", "d.json")+" tiny.pnec.json" || rels["self"] != "" || rels["root"] == "" || rels["collection"] != rels["root"] {
		t.Errorf("scene-d links %v, want root/collection, derived_from the source item and the model's, no self", item.Links)
	}
	mb, err := os.ReadFile(filepath.Join(out, "tiny.pnec.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := stacschema.Store(t).Validate(mb, stac.MLMSchema); err != nil {
		t.Errorf("the model's item: %v", err)
	}
	mtimes := map[string]time.Time{}
	for _, k := range keys {
		st, _ := os.Stat(filepath.Join(out, k+".tif"))
		mtimes[k] = st.ModTime()
	}

	// Rerun: everything up to date is skipped, the bad scenes fail again.
	sum, _, _ = run(false)
	if sum.Done != 0 || sum.Skipped != 4 || sum.Failed != 2 {
		t.Errorf("second run %+v, want 4 skipped, 2 failed", sum)
	}
	// A changed input is redone, the others are not.
	future := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, "in", "b.tif"), future, future)
	sum, rep, _ = run(false)
	if sum.Done != 1 || sum.Skipped != 3 || rep["b.tif"].Status != StatusDone {
		t.Errorf("run after touching b: %+v, want b redone and 3 skipped", sum)
	}
	for _, k := range []string{"a", "c", "scene-d"} {
		if st, _ := os.Stat(filepath.Join(out, k+".tif")); !st.ModTime().Equal(mtimes[k]) {
			t.Errorf("%s.tif was rewritten, want it left alone", k)
		}
	}
	// --force redoes everything.
	sum, _, _ = run(true)
	if sum.Done != 4 || sum.Skipped != 0 {
		t.Errorf("forced run %+v, want 4 done", sum)
	}
	checkOutDir(t, out, keys)
}

// TestRunShards: shards 0/2 and 1/2 together do each scene exactly once.
func TestRunShards(t *testing.T) {
	modelPath := tinyModel(t)
	dir, args := batchInputs(t)
	args = args[:2] // the good scenes
	out := filepath.Join(dir, "out")
	var done []string
	for i := 0; i < 2; i++ {
		var rep bytes.Buffer
		sum, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Inputs: args, Shard: Shard{i, 2}, Report: &rep})
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if sum.Skipped != 0 {
			t.Errorf("shard %d skipped %d scenes, want 0 (the shards are disjoint)", i, sum.Skipped)
		}
		for k, r := range readReport(t, rep.Bytes()) {
			if r.Status == StatusDone {
				done = append(done, k)
			}
		}
	}
	sort.Strings(done)
	if got := strings.Join(done, " "); got != "a.tif b.tif c.tif d.tif" {
		t.Errorf("shards did %q, want each of a b c d once", got)
	}
}

// TestRunSetupErrors: problems that stop a run before any scene give one clear error.
func TestRunSetupErrors(t *testing.T) {
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "s.tif"), 1)
	ro := filepath.Join(dir, "ro")
	os.MkdirAll(ro, 0o555)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing model", Config{ModelPath: filepath.Join(dir, "none.pnec"), OutDir: filepath.Join(dir, "o1"), Inputs: []string{scene}}, "none.pnec"},
		{"bad shard", Config{ModelPath: "m", OutDir: dir, Inputs: []string{scene}, Shard: Shard{3, 2}}, "shard 3/2"},
		{"no out dir", Config{ModelPath: "m", Inputs: []string{scene}}, "no output directory"},
		{"out dir is a file", Config{ModelPath: "m", OutDir: scene, Inputs: []string{scene}}, "output directory " + scene},
		// Refused before any scene is done (the products replaced the scenes).
		{"out dir holds the scenes", Config{ModelPath: "m", OutDir: dir, Inputs: []string{scene}}, "the product " + scene + " is the scene " + scene},
		{"report is the scene", Config{ModelPath: "m", OutDir: filepath.Join(dir, "o2"), Inputs: []string{scene}, ReportPath: scene}, "the run report " + scene + " is the scene"},
		{"an Item is the collection", Config{ModelPath: "m", OutDir: filepath.Join(dir, "o6"), Inputs: []string{scene}, Collection: filepath.Join(dir, "o6", "s.json")},
			"the product's STAC Item " + filepath.Join(dir, "o6", "s.json") + " is the STAC Collection"},
		// Found after every scene was classified before.
		{"collection in a missing directory", Config{ModelPath: "m", OutDir: filepath.Join(dir, "o3"), Inputs: []string{scene},
			Collection: filepath.Join(dir, "none", "c.json")}, "collection " + filepath.Join(dir, "none", "c.json") + ": directory"},
		{"collection not JSON", Config{ModelPath: "m", OutDir: filepath.Join(dir, "o4"), Inputs: []string{scene},
			Collection: writeFile(t, filepath.Join(dir, "c.json"), "{broken")}, "bad JSON"},
		{"collection not a Collection", Config{ModelPath: "m", OutDir: filepath.Join(dir, "o5"), Inputs: []string{scene},
			Collection: writeFile(t, filepath.Join(dir, "cat.json"), `{"type":"Catalog"}`)}, "type Catalog, want Collection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(tc.want, " is the ") && !errors.Is(err, processor.ErrOutputIsInput) {
				t.Errorf("got %v, want ErrOutputIsInput", err)
			}
		})
	}
	if os.Geteuid() != 0 { // root writes anywhere
		_, err := Run(context.Background(), Config{ModelPath: "m", OutDir: ro, Inputs: []string{scene}})
		if err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("read-only output directory: got %v, want 'not writable'", err)
		}
	}
}

// TestRunSTACOverHTTP: a remote STAC Item whose asset GDAL reads through
// /vsicurl/ (HTTP range requests), and a /vsizip/ scene, are classified.
func TestRunSTACOverHTTP(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	fixture.Scene(t, filepath.Join(dir, "www", "data", "remote.tif"), 7)
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, "www"))))
	defer srv.Close()
	// An absolute URL href; relative ones are resolved against the Item's URL (TestExpandHTTP).
	writeFile(t, filepath.Join(dir, "www", "items", "remote.json"),
		itemJSON("remote-1", `"cube":{"href":"`+srv.URL+`/data/remote.tif","roles":["data"]}`))

	fixture.Scene(t, filepath.Join(dir, "zipped", "z.tif"), 8)
	zipPath := filepath.Join(dir, "scenes.zip")
	if err := zipFile(zipPath, filepath.Join(dir, "zipped", "z.tif"), "z.tif"); err != nil {
		t.Fatal(err)
	}
	var rep bytes.Buffer
	sum, err := Run(context.Background(), Config{
		ModelPath: modelPath, OutDir: filepath.Join(dir, "out"), Report: &rep,
		Inputs: []string{srv.URL + "/items/remote.json", "/vsizip/" + zipPath + "/z.tif"},
	})
	if err != nil || sum.Done != 2 {
		t.Fatalf("Run: %+v, %v, want 2 done\n%s", sum, err, rep.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "remote-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	validateItem(t, b)
	if !strings.Contains(string(b), srv.URL+"/items/remote.json") {
		t.Errorf("item does not link to its remote source item %s/items/remote.json", srv.URL)
	}
	checkOutDir(t, filepath.Join(dir, "out"), []string{"remote-1", "z"})
}

func zipFile(zipPath, src, name string) error {
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	w, err := zw.Create(name)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return zw.Close()
}

// TestRunHealsCollection: an Item that is up to date but missing from the
// collection (a kill between writing the Item and updating the collection)
// is added by the next run.
func TestRunHealsCollection(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "in", "h.tif"), 11)
	out := filepath.Join(dir, "out")
	coll := filepath.Join(out, "collection.json")
	cfg := Config{ModelPath: modelPath, OutDir: out, Inputs: []string{scene}, Collection: coll}
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	os.Remove(coll) // as if the run had been killed before the collection update
	sum, err := Run(context.Background(), cfg)
	if err != nil || sum.Skipped != 1 {
		t.Fatalf("rerun: %+v %v, want 1 skipped", sum, err)
	}
	b, err := os.ReadFile(coll)
	if err != nil || !strings.Contains(string(b), `"href": "h.json"`) {
		t.Errorf("collection after the rerun: %v\n%s\nwant an item link to h.json", err, b)
	}
}

// TestRunPortableTree: with the Collection at the top of a tree holding the
// inputs (a plain scene and a STAC Item), the products and the Items, every
// href, link and record is relative; the whole tree
// moved elsewhere still resolves, validates, and a rerun there finds every
// product up to date.
func TestRunPortableTree(t *testing.T) {
	modelPath := tinyModel(t)
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	fixture.Scene(t, filepath.Join(root, "in", "a.tif"), 2)
	fixture.Scene(t, filepath.Join(root, "stac", "data", "d.tif"), 5)
	writeFile(t, filepath.Join(root, "stac", "d.json"), itemJSON("scene-d", `"hsi":{"href":"data/d.tif","roles":["data"]}`))
	cfg := func(r string) Config {
		return Config{ModelPath: modelPath, OutDir: filepath.Join(r, "out"), Collection: filepath.Join(r, "collection.json"),
			Inputs: []string{filepath.Join(r, "in", "a.tif"), filepath.Join(r, "stac", "d.json")}, Jobs: 1, Version: "test", License: "CC-BY-4.0"}
	}
	sum, err := Run(context.Background(), cfg(root))
	if err != nil || sum.Done != 2 {
		t.Fatalf("first run: %+v, %v", sum, err)
	}
	moved := filepath.Join(base, "elsewhere")
	if err := os.Rename(root, moved); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "scene-d"} {
		itemPath := filepath.Join(moved, "out", key+".json")
		b, err := os.ReadFile(itemPath)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), base) {
			t.Errorf("%s names the tree's old absolute location:\n%s", key, b)
		}
		validateItem(t, b)
		var it struct {
			Links  []struct{ Rel, Href string }
			Assets map[string]struct{ Href string }
		}
		json.Unmarshal(b, &it)
		var hrefs []string
		for _, l := range it.Links {
			hrefs = append(hrefs, l.Href)
		}
		for _, a := range it.Assets {
			hrefs = append(hrefs, a.Href)
		}
		for _, h := range hrefs {
			if filepath.IsAbs(h) {
				t.Errorf("%s: absolute href %s", key, h)
			} else if _, err := os.Stat(filepath.Join(filepath.Dir(itemPath), h)); err != nil {
				t.Errorf("%s: href %s does not resolve after the move: %v", key, h, err)
			}
		}
	}
	sum, err = Run(context.Background(), cfg(moved))
	if err != nil || sum.Skipped != 2 || sum.Done != 0 {
		t.Errorf("rerun in the moved tree: %+v, %v; want both up to date", sum, err)
	}
}

// checkBatchEvents checks a run's progress events: one per scene finished,
// counting to scenes, with its status; between them, the tiles of scenes
// being classified, with the classification's line.
func checkBatchEvents(t *testing.T, events []progress.Event, scenes int) {
	t.Helper()
	finished, tiles := 0, 0
	for _, ev := range events {
		if ev.Stage != "batch" || ev.Unit != "scenes" || ev.Total != int64(scenes) || ev.Subject == "" {
			t.Fatalf("event %+v, want a batch event of %d scenes naming one", ev, scenes)
		}
		switch {
		case ev.Parts == 0:
			finished++
			if ev.Done != int64(finished) || (ev.Message != string(StatusDone) && ev.Message != string(StatusFailed)) {
				t.Errorf("scene event %+v, want %d scenes done and the scene's status", ev, finished)
			}
		case ev.Part < 1 || ev.Part > ev.Parts || !strings.HasPrefix(ev.Message, fmt.Sprintf("tile %d/%d, ", ev.Part, ev.Parts)):
			t.Errorf("tile event %+v, want tile Part of Parts and the classification's line", ev)
		default:
			tiles++
		}
	}
	if finished != scenes || tiles == 0 {
		t.Errorf("%d scene events and %d tile events, want %d and some", finished, tiles, scenes)
	}
}
