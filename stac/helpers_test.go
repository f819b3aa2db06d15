package stac

import (
	"os"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/stacschema"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.Cleanup()
	os.Exit(code)
}

// tinyModel is the fixture's tiny trained model (trained once per process).
func tinyModel(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("trains a model: skipped with -short")
	}
	p, err := fixture.ModelPath()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// validateItem checks a product Item against STAC core, the extensions
// every product Item uses and every other one it declares.
func validateItem(t testing.TB, b []byte) {
	t.Helper()
	stacschema.ValidateItem(t, b, ClassificationSchema, ProjectionSchema, ProcessingSchema, RasterSchema)
}

// wavelengthModel is fixture.WriteWavelengthModel's model in dir.
func wavelengthModel(t testing.TB, dir string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("trains a model: skipped with -short")
	}
	p, err := fixture.WriteWavelengthModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
