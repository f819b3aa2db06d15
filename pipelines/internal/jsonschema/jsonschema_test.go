package jsonschema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// store writes schemas (URL path under https://example.org/ -> JSON) to a temp dir.
func store(t testing.TB, schemas map[string]string) *Store {
	dir := t.TempDir()
	for p, s := range schemas {
		f := filepath.Join(dir, "example.org", filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return NewStore(dir)
}

var testSchemas = map[string]string{
	"s/main.json": `{
	  "type": "object",
	  "required": ["id", "n"],
	  "properties": {
	    "id": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"},
	    "n": {"type": "integer", "minimum": 1, "maximum": 10},
	    "x": {"type": ["number", "null"], "exclusiveMinimum": 0},
	    "tags": {"type": "array", "uniqueItems": true, "minItems": 1, "items": {"enum": ["a", "b"]}},
	    "pt": {"$ref": "defs.json#/definitions/point"},
	    "when": {"type": "string", "format": "date-time"},
	    "kind": {"const": "k"}
	  },
	  "patternProperties": {"^(?!ext:)": {}},
	  "additionalProperties": false,
	  "if": {"properties": {"kind": {"const": "k"}}, "required": ["kind"]},
	  "then": {"required": ["x"]},
	  "not": {"required": ["forbidden"]}
	}`,
	"s/defs.json": `{"definitions": {"point": {"type": "array", "items": [{"type": "number"}, {"type": "number"}], "minItems": 2,
	  "oneOf": [{"maxItems": 2}, {"minItems": 3, "maxItems": 3}], "contains": {"type": "number"}}}}`,
}

func TestValidate(t *testing.T) {
	s := store(t, testSchemas)
	const u = "https://example.org/s/main.json"
	for _, tc := range []struct {
		name, doc string
		wantErr   string // "" = valid
	}{
		{"valid", `{"id":"abc","n":3,"tags":["a"],"pt":[1,2],"when":"2024-01-02T03:04:05Z","other":1}`, ""},
		{"missing required", `{"id":"abc"}`, `missing required property "n"`},
		{"wrong type", `{"id":"abc","n":2.5}`, "got type number, want integer"},
		{"pattern", `{"id":"ABC","n":2}`, "does not match pattern"},
		{"maximum", `{"id":"a","n":11}`, "want <= 10"},
		{"exclusive minimum", `{"id":"a","n":1,"x":0}`, "want > 0"},
		{"null allowed", `{"id":"a","n":1,"x":null}`, ""},
		{"unique items", `{"id":"a","n":1,"tags":["a","a"]}`, "want unique items"},
		{"enum", `{"id":"a","n":1,"tags":["c"]}`, "want one of"},
		{"ref and tuple", `{"id":"a","n":1,"pt":[1,"x"]}`, "/pt/1: got type string"},
		{"oneOf none", `{"id":"a","n":1,"pt":[1,2,3,4]}`, "matches 0 of oneOf"},
		{"date-time", `{"id":"a","n":1,"when":"yesterday"}`, "not an RFC 3339 date-time"},
		{"negative lookahead", `{"id":"a","n":1,"ext:y":1}`, "/ext:y: property is not allowed here"},
		{"if then", `{"id":"a","n":1,"kind":"k"}`, `missing required property "x"`},
		{"not", `{"id":"a","n":1,"forbidden":1}`, "must not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Validate([]byte(tc.doc), u)
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("got %v, want valid", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want ErrInvalid containing %q", err, tc.wantErr)
			}
		})
	}
	if err := s.Validate([]byte(`{}`), "https://example.org/s/none.json"); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("missing schema: got %v, want a loading error", err)
	}
}

// FuzzValidate: any document gives nil or an error, never a panic.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"id":"abc","n":3,"pt":[1,2]}`))
	f.Add([]byte(`[1,2,{"a":null}]`))
	f.Add([]byte(`{"pt":[[]],"tags":[{},{}]}`))
	s := store(f, testSchemas)
	f.Fuzz(func(t *testing.T, doc []byte) {
		_ = s.Validate(doc, "https://example.org/s/main.json")
	})
}
