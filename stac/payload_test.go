package stac

import (
	"errors"
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
