package stac

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadPayloadRefuses: a payload that is none, or asks for an unknown
// matcher, is refused with ErrPayload saying why.
func TestReadPayloadRefuses(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"not a FeatureCollection", `{"type":"Feature"}`, "want FeatureCollection"},
		{"no process", `{"type":"FeatureCollection","features":[]}`, "no process definition"},
		{"tasks not an object", `{"type":"FeatureCollection","features":[],"process":[{"tasks":{"pnec":3}}]}`, "tasks.pnec is not an object"},
	} {
		p, err := ReadPayload(strings.NewReader(tc.doc), "")
		if err == nil {
			_, err = p.Parameters(DefaultTaskName)
		}
		if !errors.Is(err, ErrPayload) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrPayload saying %q", tc.name, err, tc.want)
		}
	}
	p, _ := ReadPayload(strings.NewReader(`{"type":"FeatureCollection","features":[],"process":[{"collection_matchers":[{"type":"jsonpath","pattern":"$.properties.x","collection_name":"c"}]}]}`), "")
	if _, err := p.collectionOf("x"); !errors.Is(err, ErrPayload) {
		t.Errorf("an unsupported JSONPath: got %v, want ErrPayload", err)
	}
}

// TestExpandTemplate: the variables of a path_template, from the Item and its properties.
func TestExpandTemplate(t *testing.T) {
	item := map[string]any{"id": "S2A_1", "collection": "s2", "properties": map[string]any{
		"datetime": "2020-07-16T10:15:30Z", "mgrs:utm_zone": 31.0, "grid:code": "MGRS-31TDH"}}
	for tmpl, want := range map[string]string{
		"s3://b/${collection}/${year}/${month}/${day}/${id}": "s3://b/s2/2020/07/16/S2A_1",
		"/out/${mgrs:utm_zone}/${grid:code}/${date}":         "/out/31/MGRS-31TDH/2020-07-16",
	} {
		if got, err := expandTemplate(tmpl, item, nil); err != nil || got != want {
			t.Errorf("%s: got %q, %v, want %q", tmpl, got, err, want)
		}
	}
	if _, err := expandTemplate("/out/${platform}", item, nil); !errors.Is(err, ErrPayload) || !strings.Contains(err.Error(), "has no platform") {
		t.Errorf("missing variable: got %v", err)
	}
}

// TestTemplateValuesStayInside: a variable's value that
// is not one folder or file name (a property "../../../x", "a/b", "..",
// "", a backslash) is refused, by CheckTemplate before any work when the
// source Item holds it and by OutputItem's expansion, which then writes
// nothing (no parent folder made); the value was put in the path as it
// was, writing the product, style and Item outside the template's root.
func TestTemplateValuesStayInside(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "a", "b", "c") // ../../../x from root/up/ is base/a/x: still in the test's folder
	os.MkdirAll(root, 0o755)
	doc := `{"type":"FeatureCollection","features":[],"process":[{"upload_options":{"path_template":"` + root + `/up/${platform}/${id}"}}]}`
	p, err := ReadPayload(strings.NewReader(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{"../../../x", "a/b", "..", ".", "", `a\b`, "x\ny"} {
		src := map[string]any{"id": "s", "properties": map[string]any{"platform": v}}
		if err := p.CheckTemplate("k", "s", src, false); !errors.Is(err, ErrPayload) || !strings.Contains(err.Error(), "${platform}") {
			t.Errorf("CheckTemplate with platform %q: %v, want ErrPayload naming ${platform}", v, err)
		}
		item := map[string]any{"id": "k", "properties": map[string]any{"datetime": "2020-07-16T10:15:30Z"}}
		if _, err := expandTemplate(root+"/up/${platform}/${id}", item, src); !errors.Is(err, ErrPayload) {
			t.Errorf("expandTemplate with platform %q: %v, want ErrPayload", v, err)
		}
		itemPath := filepath.Join(t.TempDir(), "k.json")
		os.WriteFile(itemPath, []byte(`{"type":"Feature","id":"k","properties":{"datetime":"2020-07-16T10:15:30Z"},"assets":{}}`), 0o644)
		if _, err := p.OutputItem(itemPath, src); err == nil {
			t.Errorf("OutputItem with platform %q: no error", v)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("the refused values made %v under %s", ents, root)
	}
	if _, err := os.Stat(filepath.Join(base, "a", "x")); err == nil {
		t.Errorf("a folder x was made outside the template's root")
	}
	ok := map[string]any{"id": "s", "properties": map[string]any{"platform": "sentinel-2a"}}
	if err := p.CheckTemplate("k", "s", ok, false); err != nil {
		t.Errorf("a plain value refused: %v", err)
	}
}
