// Package stacschema validates STAC documents in tests against the
// official JSON Schemas shipped under testdata/stac/schemas (STAC core and
// the extensions pnec writes), with github.com/santhosh-tekuri/jsonschema:
// tests do not reach the network.
package stacschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ecmaRegexp is a JSON Schema pattern in ECMA-262 syntax, as the
// specification defines them: the STAC extension schemas use lookahead
// ("^(?!proj:)"), which Go's regexp does not have.
type ecmaRegexp regexp2.Regexp

func (re *ecmaRegexp) MatchString(s string) bool {
	ok, err := (*regexp2.Regexp)(re).MatchString(s)
	return err == nil && ok
}

func (re *ecmaRegexp) String() string { return (*regexp2.Regexp)(re).String() }

func compileECMA(s string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(s, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	return (*ecmaRegexp)(re), nil
}

// repoRoot walks up from the package directory to the directory holding go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// schemaMirror loads a schema URL from testdata/stac/schemas/<host>/<path>
// (tests do not reach the network); a URL that is not shipped is an error.
type schemaMirror string

func (m schemaMirror) Load(u string) (any, error) {
	if notShipped[u] {
		// The validator compiles every $ref up front; this one is only
		// reached through proj:projjson, which pnec does not write: the
		// false schema rejects any document that reaches it.
		return false, nil
	}
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(string(m), pu.Host, filepath.FromSlash(pu.Path)))
	if err != nil {
		return nil, fmt.Errorf("schema %s is not shipped in testdata/stac/schemas: %w", u, err)
	}
	defer f.Close()
	return jsonschema.UnmarshalJSON(f)
}

// notShipped are schemas referenced by the shipped ones but not shipped
// (testdata/stac/README.md).
var notShipped = map[string]bool{"https://proj.org/schemas/v0.5/projjson.schema.json": true}

// Set validates documents against the shipped official schemas with
// github.com/santhosh-tekuri/jsonschema/v6; compiled schemas are reused.
type Set struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

var (
	schemasOnce sync.Once
	schemas     *Set
)

// Store is the validator of the shipped schemas (compiled once per process).
func Store(t testing.TB) *Set {
	root := filepath.Join(repoRoot(t), "testdata", "stac", "schemas")
	schemasOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.UseLoader(schemaMirror(root))
		c.UseRegexpEngine(compileECMA)
		c.AssertFormat() // STAC's date-time fields are "format": "date-time"
		schemas = &Set{compiler: c, compiled: map[string]*jsonschema.Schema{}}
	})
	return schemas
}

// ErrInvalid marks a document the schema rejects (not a schema that failed to load).
var ErrInvalid = errors.New("document does not validate")

// Validate checks the JSON document b against the schema at schemaURL.
func (s *Set) Validate(b []byte, schemaURL string) error {
	s.mu.Lock()
	sch, ok := s.compiled[schemaURL]
	if !ok {
		var err error
		if sch, err = s.compiler.Compile(schemaURL); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("compile %s: %w", schemaURL, err)
		}
		s.compiled[schemaURL] = sch
	}
	s.mu.Unlock()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%w: %v", ErrInvalid, ve)
		}
		return err
	}
	return nil
}

// ValidateItem checks the Item JSON against STAC core 1.0.0, the
// extension schemas required (those every Item of the kind uses) and every
// other extension schema it declares (each must be shipped).
func ValidateItem(t testing.TB, b []byte, required ...string) {
	t.Helper()
	s := Store(t)
	var doc struct {
		Extensions []string `json:"stac_extensions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("item is not JSON: %v", err)
	}
	seen := map[string]bool{}
	for _, u := range append(append([]string{ItemSchema}, required...), doc.Extensions...) {
		if seen[u] {
			continue
		}
		seen[u] = true
		if err := s.Validate(b, u); err != nil {
			t.Errorf("item does not validate against %s: %v", u, err)
		}
	}
}

// ItemSchema is STAC core's Item schema.
const ItemSchema = "https://schemas.stacspec.org/v1.0.0/item-spec/json-schema/item.json"
