package processor_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
)

// A Go program classifies a scene with a trained model file: load the model,
// make a Classifier (it keeps the compiled network for later scenes), and
// classify scene to product. Here tiles of 16 px are forced to show the
// tiled path; with Options{} a scene runs whole up to 384 px a side
// (CanonicalTile), else on 384 px tiles, whatever the memory budget.
func ExampleClassifier() {
	modelPath, err := fixture.ModelPath() // a tiny model trained for tests
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pnec-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	scene := filepath.Join(dir, "scene.tif") // 40 x 32 pixels, 8 bands
	if err := fixture.WriteScene(scene, 2); err != nil {
		log.Fatal(err)
	}

	m, err := model.Load(modelPath)
	if err != nil {
		log.Fatal(err)
	}
	c, err := processor.NewClassifier(m, processor.Options{Backend: "go", TileSize: 16, Overlap: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.Run(context.Background(), processor.Request{Scene: scene, Out: filepath.Join(dir, "product.tif")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d x %d pixels, %d tiles, %d classified\n", res.Cols, res.Rows, res.Tiles, res.ValidPixels)
	// Output: 40 x 32 pixels, 9 tiles, 1280 classified
}
