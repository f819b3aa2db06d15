package sensors_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsOneWay: sensors sit above geo. geo never imports this package
// (it reaches the registry through geo.ProductHooks), and the sensors'
// readers never talk to GDAL themselves: no godal, no cgo (geo is the one
// door to GDAL), nor any package above them.
func TestImportsOneWay(t *testing.T) {
	geoPkg, err := build.ImportDir("../geo", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range geoPkg.Imports {
		if imp == "github.com/pnec/pnec/sensors" {
			t.Errorf("package geo imports %s: dependencies point sensors -> geo", imp)
		}
	}
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		for _, no := range []string{"C", "github.com/airbusgeo/godal", "github.com/pnec/pnec/processor", "github.com/pnec/pnec/pipelines",
			"github.com/pnec/pnec/evaluation", "github.com/pnec/pnec/cmd/"} {
			if imp == no || strings.HasPrefix(imp, no+"/") || (strings.HasSuffix(no, "/") && strings.HasPrefix(imp, no)) {
				t.Errorf("package sensors imports %s: only geo talks to GDAL, and sensors sit below the packages that open scenes", imp)
			}
		}
	}
}
