package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
)

// TestBatchPayloadCLI runs pnec batch as a STAC task would be run: the
// payload on standard input (its model and out_dir among the task's
// parameters), the output payload on standard output, nothing else
// there; a second shard of the same payload outputs the other Items; a
// parameter pnec does not know fails with one line.
func TestBatchPayloadCLI(t *testing.T) {
	bin := pnecBinary(t)
	modelPath := fixture.Model(t)
	dir := t.TempDir()
	var feats []string
	for _, id := range []string{"p1", "p2", "p3", "p4"} {
		scene := fixture.Scene(t, filepath.Join(dir, "in", id+".tif"), 5)
		feats = append(feats, `{"type":"Feature","stac_version":"1.0.0","id":"`+id+`","geometry":null,"properties":{"datetime":"2024-06-01T00:00:00Z"},"links":[],"assets":{"data":{"href":"`+scene+`","roles":["data"]}}}`)
	}
	payload := func(params string) string {
		return `{"type":"FeatureCollection","features":[` + strings.Join(feats, ",") + `],"process":[{"tasks":{"pnec":{` + params + `}}}]}`
	}
	good := payload(`"model":"` + modelPath + `","out_dir":"` + filepath.Join(dir, "out") + `","max_memory":"1G","co":["COMPRESS=DEFLATE"]`)
	outputs := map[string]bool{}
	for _, shard := range []string{"0/2", "1/2"} {
		cmd := exec.Command(bin, "batch", "-q", "--payload", "-", "--payload-out", "-", "--shard", shard)
		cmd.Stdin = strings.NewReader(good)
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("shard %s: %v\n%s", shard, err, se.String())
		}
		var out struct {
			Type     string
			Features []struct {
				ID     string
				Assets map[string]struct{ Href string }
			}
			Process []any
		}
		if err := json.Unmarshal(so.Bytes(), &out); err != nil {
			t.Fatalf("shard %s: stdout is not one JSON document: %v\n%s", shard, err, so.String())
		}
		if out.Type != "FeatureCollection" || len(out.Process) != 1 || len(out.Features) == 0 {
			t.Errorf("shard %s: got %s with %d features, want the payload with its Items", shard, out.Type, len(out.Features))
		}
		for _, f := range out.Features {
			if outputs[f.ID] {
				t.Errorf("%s output by two shards", f.ID)
			}
			outputs[f.ID] = true
			if h := f.Assets["classification"].Href; !filepath.IsAbs(h) {
				t.Errorf("%s: product href %q, want absolute (an Item in a payload stands alone)", f.ID, h)
			} else if _, err := os.Stat(h); err != nil {
				t.Error(err)
			}
		}
	}
	if len(outputs) != 4 {
		t.Errorf("the shards output %v, want p1..p4 once each", outputs)
	}
	cmd := exec.Command(bin, "batch", "-q", "--payload", "-")
	cmd.Stdin = strings.NewReader(payload(`"model":"` + modelPath + `","out_dir":"` + dir + `","colour":"blue"`))
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Run(); err == nil || !strings.Contains(se.String(), `unknown parameter "colour"`) || strings.Count(strings.TrimSpace(se.String()), "\n") > 0 {
		t.Errorf("unknown parameter: %v, %q, want one line naming it", err, se.String())
	}
}

// TestBatchPayloadBadShape: a payload without a features list, with one
// that is not a list, or with an empty one and no INPUT, fails with one
// clear line and exit 1 (the first ran as an empty job, exit 0; the second
// said "cannot unmarshal ... []jsontext.Value").
func TestBatchPayloadBadShape(t *testing.T) {
	pnecBinary(t)
	modelPath := fixture.Model(t)
	for _, tc := range []struct{ name, doc, want string }{
		{"no features", `{"type":"FeatureCollection","process":[{"tasks":{}}]}`, "no features member (want a list of STAC Items)"},
		{"features an object", `{"type":"FeatureCollection","features":{"type":"Feature"},"process":[{"tasks":{}}]}`, "features is an object, want a list of STAC Items"},
		{"features null", `{"type":"FeatureCollection","features":null,"process":[{"tasks":{}}]}`, "features is null"},
		{"features empty", `{"type":"FeatureCollection","features":[],"process":[{"tasks":{}}]}`, "features list is empty and no INPUT is given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "payload.json")
			os.WriteFile(p, []byte(tc.doc), 0o644)
			r := runPnec(t, time.Minute, "batch", "--model", modelPath, "--out-dir", filepath.Join(dir, "out"), "--payload", p, "--payload-out", filepath.Join(dir, "answer.json"))
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) || strings.Contains(lines[0], "unmarshal") {
				t.Errorf("exit %d, stderr %q: want exit 1 and one line saying %q", r.code, r.stderr, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "answer.json")); err == nil {
				t.Error("an output payload was written")
			}
		})
	}
}
