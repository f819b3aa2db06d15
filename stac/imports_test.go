package stac

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsOneWay: the STAC documents sit below the batch. pipelines and
// the command import this package; it imports neither them nor processor
// (it takes plain data), so that pnec train and pnec model-item write a
// model's Item without the batch.
func TestImportsOneWay(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		for _, no := range []string{"github.com/pnec/pnec/pipelines", "github.com/pnec/pnec/processor", "github.com/pnec/pnec/cmd/"} {
			if imp == no || strings.HasPrefix(imp, no) {
				t.Errorf("package stac imports %s: dependencies point cmd -> pipelines -> stac", imp)
			}
		}
	}
}
