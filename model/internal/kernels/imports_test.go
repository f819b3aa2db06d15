package kernels

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsOneWay: the kernels sit below the network. model imports
// this package; it imports neither GoMLX (model alone does) nor any
// package of pnec, so that the kernels take plain slices and stay a leaf
// that builds and tests without the network, with and without
// GOEXPERIMENT=simd (both sets of files are read).
func TestImportsOneWay(t *testing.T) {
	for _, tags := range [][]string{{"goexperiment.simd"}, nil} {
		ctx := build.Default
		ctx.GOARCH, ctx.BuildTags, ctx.ToolTags = "amd64", tags, nil
		pkg, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			for _, no := range []string{"github.com/gomlx/", "github.com/pnec/pnec/"} {
				if strings.HasPrefix(imp, no) {
					t.Errorf("package kernels (tags %v) imports %s: it stays free of GoMLX and of pnec's packages", tags, imp)
				}
			}
		}
	}
}
