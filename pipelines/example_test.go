package pipelines_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/pipelines"
	"github.com/pnec/pnec/processor"
)

// Example runs a nightly batch from Go: two scenes in, two COG products
// (with their thumbnails) and their STAC Items out, linked from the root
// Catalog, with the model's STAC Item they point at (written
// into the output directory when none lies beside the model file); a
// second run finds both products up to date.
func Example() {
	dir, _ := os.MkdirTemp("", "pnec-example-")
	defer os.RemoveAll(dir)
	for i, name := range []string{"north.tif", "south.tif"} {
		if err := fixture.WriteScene(filepath.Join(dir, "incoming", name), uint64(10+i)); err != nil {
			fmt.Println(err)
			return
		}
	}
	modelPath, err := fixture.ModelPath() // a tiny model trained for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := pipelines.Config{
		ModelPath: modelPath,
		OutDir:    filepath.Join(dir, "products"),
		Inputs:    []string{filepath.Join(dir, "incoming", "*.tif")},
		Options:   processor.Options{Backend: "go"},
		// The page an operator reads: summary, scenes, thumbnails, footprints.
		ReportHTML: filepath.Join(dir, "products", "index.html"),
	}
	for run := 1; run <= 2; run++ {
		sum, err := pipelines.Run(context.Background(), cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("run %d: %d done, %d skipped, %d failed\n", run, sum.Done, sum.Skipped, sum.Failed)
	}
	products, _ := filepath.Glob(filepath.Join(dir, "products", "*"))
	for _, p := range products {
		fmt.Println(filepath.Base(p))
	}
	// Output:
	// run 1: 2 done, 0 skipped, 0 failed
	// run 2: 0 done, 2 skipped, 0 failed
	// catalog.json
	// index.html
	// north.json
	// north.qml
	// north.thumbnail.png
	// north.tif
	// north.tif.aux.xml
	// south.json
	// south.qml
	// south.thumbnail.png
	// south.tif
	// south.tif.aux.xml
	// tiny.pnec.json
}
