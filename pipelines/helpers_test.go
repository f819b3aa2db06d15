package pipelines

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/internal/stacschema"
	"github.com/pnec/pnec/stac"
)

// validateItem checks a product Item against STAC core, the extensions
// every product Item uses and every other one it declares.
func validateItem(t testing.TB, b []byte) {
	t.Helper()
	stacschema.ValidateItem(t, b, stac.ClassificationSchema, stac.ProjectionSchema, stac.ProcessingSchema, stac.RasterSchema, stac.RenderSchema)
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
