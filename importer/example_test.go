package importer_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pnec/pnec/importer"
	"github.com/pnec/pnec/internal/matwrite"
)

// A FILE.mat[:VAR] argument names a MAT-file and, optionally, a variable.
func ExampleParseSource() {
	for _, arg := range []string{"Indian_pines.mat", "houston_gt_trte.mat:houston_gt_tr"} {
		s := importer.ParseSource(arg)
		fmt.Printf("file %q, variable %q\n", s.File, s.Var)
	}
	// Output:
	// file "Indian_pines.mat", variable ""
	// file "houston_gt_trte.mat", variable "houston_gt_tr"
}

// Import a MAT-file's cube (its only 3-D array) as a local-grid GeoTIFF.
func ExampleMAT() {
	dir, err := os.MkdirTemp("", "importer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mat := filepath.Join(dir, "cube.mat")
	cube := make([]float64, 3*4*2) // 3 rows x 4 cols x 2 bands, column-major
	for i := range cube {
		cube[i] = float64(i)
	}
	if err := os.WriteFile(mat, matwrite.Encode(false, true,
		matwrite.Var{Name: "X", Class: matwrite.MxDOUBLE, Dims: []int{3, 4, 2}, Type: matwrite.MiUINT16, Data: cube}), 0o644); err != nil {
		log.Fatal(err)
	}

	res, err := importer.MAT(context.Background(), importer.Request{
		Cube: importer.ParseSource(mat), CubeOut: filepath.Join(dir, "cube.tif"), Local: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	w := res.Cube
	fmt.Printf("%s -> %s: %d rows x %d cols x %d bands, %s\n", filepath.Base(w.What), filepath.Base(w.Path), w.Rows, w.Cols, w.Bands, w.DataType)
	// Output:
	// cube.mat:X -> cube.tif: 3 rows x 4 cols x 2 bands, Int16
}
