package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

// testPayload is a payload shaped like the stac-task convention's own
// examples (docs/source/payload.rst): a FeatureCollection of Items, and a
// process array whose first definition has workflow_options, tasks for
// several tasks (pnec's among them), upload_options with a path_template
// and collection_matchers, jsonpath first and catch_all last.
func testPayload(t *testing.T, dir, uploadTo string, extraFeature string) string {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	var feats []string
	for i, id := range []string{"scene-a-20240601", "scene-b-20240602"} {
		fixture.Scene(t, filepath.Join(dir, "data", id+".tif"), uint64(20+i))
		feats = append(feats, `{"type":"Feature","stac_version":"1.0.0","id":"`+id+`","collection":"hyperspectral-raw",
			"geometry":null,"properties":{"datetime":"2024-06-0`+string(rune('1'+i))+`T10:30:00Z"},
			"links":[{"rel":"self","href":"s3://vendor-bucket/`+id+`.json","type":"application/geo+json"}],
			"assets":{"hsi":{"href":"data/`+id+`.tif","type":"image/tiff; application=geotiff","roles":["data"]},
			"thumbnail":{"href":"s3://vendor-bucket/`+id+`.jpg","type":"image/jpeg","roles":["thumbnail"]}}}`)
	}
	if extraFeature != "" {
		feats = append(feats, extraFeature)
	}
	p := `{"type":"FeatureCollection","id":"pnec-test-payload","features":[` + strings.Join(feats, ",") + `],
	"process":[{"description":"land cover of new hyperspectral scenes",
		"workflow_options":{"probabilities":"network","top_k":1},
		"tasks":{"asset-fetcher":{"download_assets":true},"pnec":{"top_k":2,"reliability_score":"combined"}},
		"upload_options":{"path_template":"` + uploadTo + `/${collection}/${year}/${month}/${day}/${id}","public_assets":["classification"]},
		"collection_matchers":[{"type":"jsonpath","pattern":"$[?(@.id =~ 'scene-a.*')]","collection_name":"landcover-a"},
			{"type":"catch_all","collection_name":"landcover"}]}]}`
	path := filepath.Join(dir, "payload.json")
	writeFile(t, path, p)
	return path
}

// TestRunPayload runs a batch on a payload and checks the output payload:
// the input one with its features replaced by the product Items (valid,
// collections assigned by the matchers, files uploaded to the
// path_template with hrefs and self naming the copies); a rerun outputs
// the same Items from products up to date.
func TestRunPayload(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	up := filepath.Join(dir, "bucket")
	path := testPayload(t, dir, up, "")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := stac.ReadPayload(f, path)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	params, err := p.Parameters(stac.DefaultTaskName)
	if err != nil {
		t.Fatal(err)
	}
	if params["top_k"] != 2.0 || params["probabilities"] != "network" || params["download_assets"] != nil {
		t.Errorf("got parameters %v, want tasks.pnec over workflow_options and no other task's", params)
	}
	out := filepath.Join(dir, "work")
	run := func() (Summary, map[string]any) {
		t.Helper()
		var rep bytes.Buffer
		cfg := Config{ModelPath: modelPath, OutDir: out, Jobs: 1, Report: &rep, Version: "test"}
		cfg.Options.Probabilities, cfg.Options.TopK = "network", 2
		sum, o, err := RunPayload(context.Background(), cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		return sum, o
	}
	sum, o := run()
	if sum.Done != 2 || o["type"] != "FeatureCollection" || o["id"] != "pnec-test-payload" || o["process"] == nil {
		t.Fatalf("got %+v and payload %v, want 2 done and the payload kept", sum, o)
	}
	feats := o["features"].([]any)
	if len(feats) != 2 {
		t.Fatalf("got %d features, want 2", len(feats))
	}
	for _, f := range feats {
		item := f.(map[string]any)
		// STAC 1.0.0's schema allows "collection" only beside a collection
		// link; the convention's orchestrator adds that link when it
		// publishes the Item into the collection the matchers named, so
		// the Item is validated without the field.
		plain := map[string]any{}
		for k, v := range item {
			if k != "collection" {
				plain[k] = v
			}
		}
		b, _ := json.Marshal(plain)
		validateItem(t, b)
		id := item["id"].(string)
		want := map[string]string{"scene-a-20240601": "landcover-a", "scene-b-20240602": "landcover"}[id]
		if item["collection"] != want {
			t.Errorf("%s: collection %v, want %s", id, item["collection"], want)
		}
		day := "01"
		if strings.HasPrefix(id, "scene-b") {
			day = "02"
		}
		dest := filepath.Join(up, want, "2024", "06", day, id)
		for key, a := range item["assets"].(map[string]any) {
			href := a.(map[string]any)["href"].(string)
			if filepath.Dir(href) != dest {
				t.Errorf("%s asset %s: href %s, want under %s", id, key, href, dest)
			} else if _, err := os.Stat(href); err != nil {
				t.Errorf("%s asset %s: %v", id, key, err)
			}
		}
		links := map[string][]string{}
		for _, l := range item["links"].([]any) {
			lm := l.(map[string]any)
			links[lm["rel"].(string)] = append(links[lm["rel"].(string)], lm["href"].(string))
		}
		if self := links["self"]; len(self) != 1 || self[0] != filepath.Join(dest, id+".json") {
			t.Errorf("%s: self %v, want the uploaded Item", id, self)
		} else if _, err := os.Stat(self[0]); err != nil {
			t.Errorf("%s: uploaded Item: %v", id, err)
		}
		if d := strings.Join(links["derived_from"], " "); !strings.Contains(d, "s3://vendor-bucket/"+id+".json") {
			t.Errorf("%s: derived_from %v, want the input Item's self href", id, d)
		}
	}
	sum, o = run()
	if sum.Skipped != 2 || len(o["features"].([]any)) != 2 {
		t.Errorf("rerun: %+v, %d features; want both skipped and both Items output", sum, len(o["features"].([]any)))
	}
}

// TestRunPayloadFailures: a payload Item without a usable asset fails
// alone (the others are in the output payload, the error is Run's).
func TestRunPayloadFailures(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	bad := `{"type":"Feature","stac_version":"1.0.0","id":"no-data-asset","geometry":null,"properties":{"datetime":"2024-06-01T00:00:00Z"},"links":[],"assets":{"thumb":{"href":"t.png","roles":["thumbnail"]}}}`
	path := testPayload(t, dir, filepath.Join(dir, "up"), bad)
	f, _ := os.Open(path)
	p, err := stac.ReadPayload(f, path)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, o, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: filepath.Join(dir, "w"), Jobs: 1, Version: "test"}, p)
	if !errors.Is(err, ErrScenesFailed) || len(o["features"].([]any)) != 2 {
		t.Errorf("got %v and %d features, want the failure and the 2 good Items", err, len(o["features"].([]any)))
	}
}

// TestRunPayloadLongID: an Item id of 300 characters gives a product key
// short enough for every file named after it (cut, and ended by a hash of
// the whole id: deterministic, and two ids cut alike stay apart), and the
// scene is classified (it failed with "file name too long").
func TestRunPayloadLongID(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	long := strings.Repeat("flight-2024-06-01-", 17) // 306 characters
	var feats []string
	for i, id := range []string{long + "a", long + "b"} {
		scene := fixture.Scene(t, filepath.Join(dir, fmt.Sprintf("s%d.tif", i)), uint64(4+i))
		feats = append(feats, `{"type":"Feature","stac_version":"1.0.0","id":"`+id+`","geometry":null,"properties":{"datetime":"2024-06-01T00:00:00Z"},"links":[],"assets":{"data":{"href":"`+scene+`","roles":["data"]}}}`)
	}
	p, err := stac.ReadPayload(strings.NewReader(`{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`],"process":[{"tasks":{}}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var rep bytes.Buffer
	sum, o, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: out, Jobs: 1, Report: &rep,
		Options: processor.Options{Probabilities: processor.ProbabilitiesRecovered}}, p)
	if err != nil || sum.Done != 2 {
		t.Fatalf("got %+v, %v, want both done\n%s", sum, err, rep.String())
	}
	keys := map[string]bool{}
	for _, f := range o["features"].([]any) {
		id := f.(map[string]any)["id"].(string)
		if len(id) > maxKeyBytes || !strings.HasPrefix(id, long[:50]) {
			t.Errorf("key %q (%d bytes): want at most %d, starting like the id", id, len(id), maxKeyBytes)
		}
		keys[id] = true
	}
	if len(keys) != 2 {
		t.Errorf("keys %v: want two", keys)
	}
	in := []Input{{Name: "x", ItemID: long + "a"}}
	assignKeys(in)
	if _, ok := keys[in[0].Key]; !ok {
		t.Errorf("key %q of the same id differs from the run's %v: not deterministic", in[0].Key, keys)
	}
}

// TestPayloadTemplateChecked: a path_template is resolved for every
// payload Item before any work: an unknown variable, a property neither
// the Item nor a product Item has, ${collection} without a collection, a
// /vsimem/ or http:// destination are refused before any scene (they failed
// after classifying, or exited 0 with hrefs to files that vanish); a
// property only the source Item has is taken from it; a relative template
// is resolved against the working directory and gives absolute hrefs (they
// came out relative).
func TestPayloadTemplateChecked(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "s.tif"), 6)
	payload := func(tmpl, matchers string) *stac.Payload {
		doc := `{"type":"FeatureCollection","features":[{"type":"Feature","stac_version":"1.0.0","id":"s1","geometry":null,
			"properties":{"datetime":"2024-06-01T00:00:00Z","platform":"EnMAP"},"links":[],"assets":{"data":{"href":"` + scene + `","roles":["data"]}}}],
			"process":[{"upload_options":{"path_template":"` + tmpl + `"}` + matchers + `}]}`
		p, err := stac.ReadPayload(strings.NewReader(doc), "")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	catchAll := `,"collection_matchers":[{"type":"catch_all","collection_name":"landcover"}]`
	wd := t.TempDir()
	t.Chdir(wd)
	for _, tc := range []struct {
		name, tmpl, matchers string
		want                 string // refusal, or the uploaded Item's path
	}{
		{"unknown variable", dir + "/up/${colour}/${id}", catchAll, `${colour}: Item s1 has no property "colour"`},
		{"collection without one", dir + "/up/${collection}/${id}", "", "${collection}: Item s1 gets no collection"},
		{"vsimem", "/vsimem/up/${id}", catchAll, "is GDAL's memory, gone when pnec exits"},
		{"http", "https://example.org/up/${id}", catchAll, "https:// is not a place pnec uploads to"},
		{"source property", dir + "/up/${platform}/${year}/${id}", catchAll, dir + "/up/EnMAP/2024/s1/s1.json"},
		{"relative", "rel/${collection}/${id}", catchAll, wd + "/rel/landcover/s1/s1.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var rep bytes.Buffer
			sum, o, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: out, Jobs: 1, Report: &rep}, payload(tc.tmpl, tc.matchers))
			if !strings.HasPrefix(tc.want, "/") {
				t.Log(err)
				if !errors.Is(err, stac.ErrPayload) || !strings.Contains(err.Error(), tc.want) || sum.Scenes != 0 || rep.Len() != 0 {
					t.Fatalf("got %+v, %v: want stac.ErrPayload saying %q before any scene", sum, err, tc.want)
				}
				if ents, _ := os.ReadDir(out); len(ents) != 0 {
					t.Errorf("out holds %d files: want none", len(ents))
				}
				return
			}
			if err != nil || sum.Done != 1 {
				t.Fatalf("got %+v, %v", sum, err)
			}
			item := o["features"].([]any)[0].(map[string]any)
			var self string
			for _, l := range item["links"].([]any) {
				if lm := l.(map[string]any); lm["rel"] == "self" {
					self = lm["href"].(string)
				}
			}
			if self != tc.want {
				t.Errorf("self %q, want %s", self, tc.want)
			}
			for k, a := range item["assets"].(map[string]any) {
				href := a.(map[string]any)["href"].(string)
				if !filepath.IsAbs(href) || filepath.Dir(href) != filepath.Dir(tc.want) {
					t.Errorf("asset %s: href %s, want absolute beside %s", k, href, tc.want)
				}
			}
			if _, err := os.Stat(tc.want); err != nil {
				t.Error(err)
			}
		})
	}
}

// onePayload is a payload of Items (id -> scene href) with a path_template
// (none when tmpl is "").
func onePayload(t *testing.T, tmpl string, items ...[2]string) *stac.Payload {
	t.Helper()
	var feats []string
	for _, it := range items {
		feats = append(feats, `{"type":"Feature","stac_version":"1.0.0","id":"`+it[0]+`","geometry":null,
			"properties":{"datetime":"2024-06-01T00:00:00Z"},"links":[],"assets":{"data":{"href":"`+it[1]+`","roles":["data"]}}}`)
	}
	upload := ""
	if tmpl != "" {
		upload = `"upload_options":{"path_template":"` + tmpl + `"}`
	}
	p, err := stac.ReadPayload(strings.NewReader(`{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`],"process":[{`+upload+`}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPayloadOutChecked: a --payload-out naming the
// payload's scene, the model, the model's Item, a product file or the
// report is refused before any work, and the file keeps its bytes (it was
// replaced by the output payload, exit 0).
func TestPayloadOutChecked(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "s1.tif"), 6)
	modelItem := writeFile(t, stac.ModelItemPath(modelPath), `{"type":"Feature"}`)
	out := filepath.Join(dir, "out")
	report := filepath.Join(dir, "report.jsonl")
	for _, tc := range []struct{ name, path, want string }{
		{"the scene", scene, "the scene"},
		{"the model", modelPath, "the model"},
		{"the model's Item", modelItem, "the model's STAC Item"},
		{"a product", filepath.Join(out, "s1.tif"), "the product"},
		{"the product's Item", filepath.Join(out, "s1.json"), "the product's STAC Item"},
		{"the report", report, "the run report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.path)
			var rep bytes.Buffer
			sum, _, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: out, Jobs: 1, Report: &rep,
				ReportPath: report, PayloadOut: tc.path}, onePayload(t, "", [2]string{"s1", scene}))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "the output payload") || sum.Scenes != 0 {
				t.Fatalf("got %+v, %v: want a refusal naming the output payload and %s before any scene", sum, err, tc.want)
			}
			if after, _ := os.ReadFile(tc.path); !bytes.Equal(before, after) {
				t.Errorf("%s changed", tc.path)
			}
			t.Log(err)
		})
	}
}

// TestPayloadTemplateOntoInput: a path_template that
// resolves onto the folder of the scenes would copy each product over its
// scene (exit 0; the rerun then failed on a 2-band scene): refused before
// any work when the source Item fills the template, and at the upload when
// only the product Item does (${pnec:backend}); the scene keeps its bytes.
func TestPayloadTemplateOntoInput(t *testing.T) {
	modelPath := tinyModel(t)
	for _, tc := range []struct {
		name, tmpl string
		before     bool // refused before any work
	}{
		{"source fills it", "", true},
		{"product fills it", "/${pnec:backend}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			scene := fixture.Scene(t, filepath.Join(dir, "go", "s1.tif"), 6)
			before, _ := os.ReadFile(scene)
			tmpl := filepath.Join(dir, "go")
			if tc.tmpl != "" {
				tmpl = dir + tc.tmpl
			}
			var rep bytes.Buffer
			sum, o, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: filepath.Join(dir, "out"), Jobs: 1, Report: &rep,
				Options: processor.Options{Backend: "go"}}, onePayload(t, tmpl, [2]string{"s1", scene}))
			if !errors.Is(err, processor.ErrOutputIsInput) || !strings.Contains(err.Error(), scene) {
				t.Fatalf("got %+v, %v: want ErrOutputIsInput naming %s", sum, err, scene)
			}
			if tc.before && sum.Scenes != 0 {
				t.Errorf("refused after %d scenes, want before any work", sum.Scenes)
			}
			if o != nil && len(o["features"].([]any)) != 0 {
				t.Errorf("the output payload lists the refused Item")
			}
			if after, _ := os.ReadFile(scene); !bytes.Equal(before, after) {
				t.Errorf("the scene %s was replaced", scene)
			}
			t.Log(err)
		})
	}
}

// TestPayloadSharedAsset: distinct Items naming one
// data asset gave one product and one report line, and the output payload
// listed only the first, silently; now the first Item is classified and
// each other fails with a report line naming both.
func TestPayloadSharedAsset(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "s.tif"), 6)
	var rep bytes.Buffer
	sum, o, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: filepath.Join(dir, "out"), Jobs: 1, Report: &rep},
		onePayload(t, "", [2]string{"A", scene}, [2]string{"B", scene}, [2]string{"C", scene}))
	if !errors.Is(err, ErrScenesFailed) || sum.Done != 1 || sum.Failed != 2 {
		t.Fatalf("got %+v, %v: want one done and two failed", sum, err)
	}
	if f := o["features"].([]any); len(f) != 1 || f[0].(map[string]any)["id"] != "A" {
		t.Errorf("output features %v, want A's product alone", f)
	}
	for _, id := range []string{"B", "C"} {
		if !strings.Contains(rep.String(), `Item \"`+id+`\" shares its data asset with another Item: Item \"A\"`) {
			t.Errorf("no report line names Item %s and A:\n%s", id, rep.String())
		}
	}
}

// TestPayloadUploadsLinkedModelItem: with a
// path_template, the product Item's derived_from link to the model's Item
// (written into the worker's output directory) named that local file,
// which was not uploaded; now the model's Item is copied beside the Item,
// its own hrefs made absolute, and the link names the copy.
func TestPayloadUploadsLinkedModelItem(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	scene := fixture.Scene(t, filepath.Join(dir, "s1.tif"), 6)
	up := filepath.Join(dir, "bucket")
	out := filepath.Join(dir, "out")
	var rep bytes.Buffer
	sum, o, err := RunPayload(context.Background(), Config{ModelPath: modelPath, OutDir: out, Jobs: 1, Report: &rep},
		onePayload(t, up+"/${id}", [2]string{"s1", scene}))
	if err != nil || sum.Done != 1 {
		t.Fatalf("got %+v, %v", sum, err)
	}
	item := o["features"].([]any)[0].(map[string]any)
	var model string
	for _, l := range item["links"].([]any) {
		lm := l.(map[string]any)
		if lm["rel"] == "derived_from" && strings.Contains(fmt.Sprint(lm["title"]), "model") {
			model = lm["href"].(string)
		}
	}
	if !strings.HasPrefix(model, up+"/s1/") {
		t.Fatalf("the model's derived_from link is %q, want a copy under %s/s1/", model, up)
	}
	b, err := os.ReadFile(model)
	if err != nil {
		t.Fatalf("the linked model Item was not copied: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, a := range doc["assets"].(map[string]any) {
		if h := a.(map[string]any)["href"].(string); !strings.HasPrefix(h, "/") && !strings.Contains(h, "://") {
			t.Errorf("the copy's asset href %q is relative: it no longer leads to the model", h)
		}
	}
}
