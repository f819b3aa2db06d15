package pipelines

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/pipelines/internal/jsonschema"
)

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

func schemaStore(t testing.TB) *jsonschema.Store {
	return jsonschema.NewStore(filepath.Join(repoRoot(t), "testdata", "stac", "schemas"))
}

// itemSchemas are the schemas every Item pnec writes must pass.
var itemSchemas = []string{
	"https://schemas.stacspec.org/v1.0.0/item-spec/json-schema/item.json",
	ClassificationSchema, ProjectionSchema, ProcessingSchema, RasterSchema,
}

// validateItem checks the Item JSON against core and each extension schema it uses.
func validateItem(t testing.TB, b []byte) {
	t.Helper()
	s := schemaStore(t)
	for _, u := range itemSchemas {
		if err := s.Validate(b, u); err != nil {
			t.Errorf("item does not validate against %s: %v", u, err)
		}
	}
}

func writeFile(t testing.TB, p, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
