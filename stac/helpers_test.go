package stac

import (
	"os"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/stacschema"
)

func TestMain(m *testing.M) { os.Exit(fixture.RunTests(m)) }

// validateItem checks a product Item against STAC core, the extensions
// every product Item uses and every other one it declares.
func validateItem(t testing.TB, b []byte) {
	t.Helper()
	stacschema.ValidateItem(t, b, ClassificationSchema, ProjectionSchema, ProcessingSchema, RasterSchema)
}
