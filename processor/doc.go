// Package processor classifies scenes into products (training, evaluation
// and experiments are package evaluation's): it plans the run on the model's
// grid (the whole image up to CanonicalTile, 384 px, a side, else
// overlapping tiles of that side; the memory budget decides only how many
// tiles are in flight, never the grid), reads
// tiles through geo, runs the network through model, blends the tiles'
// calibrated probabilities and uncertainty into a stripe canvas (tiling),
// applies the AvgPool recovery only on the stitched canvas, and streams the
// final rows (class and reliability) into the COG product through geo.
//
// Memory does not grow with the scene's height: tiles run in row-major
// order, only a stripe of rows (a tile row plus the recovery halo) is held,
// and rows are written and dropped as soon as no later tile can touch them.
// Reading the next tile, running the network on the current one, stitching
// and writing run in separate goroutines joined by one-slot channels, so the
// stages overlap; every goroutine stops when the context is cancelled or a
// stage fails.
//
// Scenes that cannot give a map are refused with an error naming them and
// nothing written (preflight.go): a product larger than the output file
// system's free space (ErrNoSpace, before planning), no valid pixel
// (ErrNoValidPixels) or valid pixels that are 0 in every band (ErrNoSignal,
// an undeclared nodata), the last two when the last tile is read, before it
// reaches the network. pnec batch relies on the same checks.
//
// Typical use:
//
//	m, err := model.Load("salinas.pnec")
//	c, err := processor.NewClassifier(m, processor.Options{})
//	defer c.Close()
//	res, err := c.Run(ctx, processor.Request{Scene: "scene.tif", Out: "product.tif"})
package processor
