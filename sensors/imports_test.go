package sensors_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestImportsOneWay: sensors sit above geo. geo never imports this package
// (it reaches the registry through geo.ProductHooks), and the sensors'
// readers never talk to GDAL themselves: no godal, no cgo (geo is the one
// door to GDAL), nor any package above them.
func TestImportsOneWay(t *testing.T) {
	rules := []struct {
		dir, why  string
		forbidden []string
	}{
		{"../geo", "dependencies point sensors -> geo", []string{"github.com/pnec/pnec/sensors"}},
		{".", "only geo talks to GDAL, and sensors sit below the packages that open scenes", []string{"C", "github.com/airbusgeo/godal",
			"github.com/pnec/pnec/processor", "github.com/pnec/pnec/pipelines", "github.com/pnec/pnec/evaluation", "github.com/pnec/pnec/cmd"}},
	}
	for _, r := range rules {
		pkg, err := build.ImportDir(r.dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			if slices.ContainsFunc(r.forbidden, func(no string) bool { return imp == no || strings.HasPrefix(imp, no+"/") }) {
				t.Errorf("package %s imports %s: %s", pkg.Name, imp, r.why)
			}
		}
	}
}
