package tiling_test

import (
	"fmt"
	"log"

	"github.com/pnec/pnec/tiling"
)

// Plan a 83 x 86 pixel scene in 48 pixel tiles overlapping by 16, for a
// network of output stride 4: each tile's network input, the window read
// from the scene (the input clipped to it) and the core it owns (the cores
// partition the scene).
func ExampleNew() {
	p, err := tiling.New(83, 86, tiling.Options{Stride: 4, TileSize: 48, Overlap: 16})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p)
	for _, t := range p.Tiles {
		fmt.Printf("tile %d (row %d, col %d): input %v, read %v, core %v\n", t.Index, t.Row, t.Col, t.Input, t.Read, t.Core)
	}
	// Rows are final (no later tile touches them) after each row of tiles.
	for _, b := range p.RowBands() {
		fmt.Printf("after tile row %d: rows below %d are final\n", b.Row, b.FinalRows)
	}
	// Output:
	// 9 tiles (3 down x 3 across) of 48x48, overlap 16 px, scene 86x83 (cols x rows)
	// tile 0 (row 0, col 0): input 48x48+0+0, read 48x48+0+0, core 40x40+0+0
	// tile 1 (row 0, col 1): input 48x48+32+0, read 48x48+32+0, core 20x40+40+0
	// tile 2 (row 0, col 2): input 48x48+40+0, read 46x48+40+0, core 26x40+60+0
	// tile 3 (row 1, col 0): input 48x48+0+32, read 48x48+0+32, core 40x16+0+40
	// tile 4 (row 1, col 1): input 48x48+32+32, read 48x48+32+32, core 20x16+40+40
	// tile 5 (row 1, col 2): input 48x48+40+32, read 46x48+40+32, core 26x16+60+40
	// tile 6 (row 2, col 0): input 48x48+0+36, read 48x47+0+36, core 40x27+0+56
	// tile 7 (row 2, col 1): input 48x48+32+36, read 48x47+32+36, core 20x27+40+56
	// tile 8 (row 2, col 2): input 48x48+40+36, read 46x47+40+36, core 26x27+60+56
	// after tile row 0: rows below 32 are final
	// after tile row 1: rows below 36 are final
	// after tile row 2: rows below 83 are final
}

// The grid follows from the scene and the tile alone: a scene whose sides
// both fit in the tile runs whole, padded to the ladder of input sizes
// (so that scenes of many sizes share a few compiled shapes); a larger one
// runs on tiles of that side, a short axis spanned by one tile on the
// ladder too.
func ExampleNew_ladder() {
	for _, s := range [][2]int{{83, 86}, {610, 340}, {349, 1905}, {10000, 10000}} {
		p, err := tiling.New(s[0], s[1], tiling.Options{Stride: 4, TileSize: 384, Ladder: tiling.LadderStep, Lazy: true})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p)
	}
	// Output:
	// whole image 86x83 (cols x rows), run padded to 128x128
	// 2 tiles (2 down x 1 across) of 384x384, overlap 12 px, scene 340x610 (cols x rows)
	// 6 tiles (1 down x 6 across) of 384x384, overlap 12 px, scene 1905x349 (cols x rows)
	// 729 tiles (27 down x 27 across) of 384x384, overlap 12 px, scene 10000x10000 (cols x rows)
}

// How many tiles a run holds at once follows from the host budget and,
// on an accelerator, from what the backend reports of the device; the
// plan itself stays the same. Here one tile in flight needs 1.5 GiB of
// host memory and two 2 GiB, and a tile needs 20 GiB on a device with
// 60 GiB of which 30 are in use.
func ExamplePlanFlight() {
	const gib = int64(1) << 30
	host := func(n int) int64 { return gib + int64(n)*gib/2 }
	dev := tiling.DeviceMemory{Device: "cuda:0", LimitBytes: 60 * gib, InUseBytes: 30 * gib, TileBytes: 20 * gib}
	for _, budget := range []int64{4 * gib, 3 * gib / 2, gib} {
		f, err := tiling.PlanFlight(budget, host, dev)
		fmt.Printf("budget %d MiB: %+v %v\n", budget>>20, f, err)
	}
	dev.InUseBytes = 50 * gib
	_, err := tiling.PlanFlight(4*gib, host, dev)
	fmt.Println(err)
	// Output:
	// budget 4096 MiB: {Host:2 Device:1} <nil>
	// budget 1536 MiB: {Host:1 Device:1} <nil>
	// budget 1024 MiB: {Host:0 Device:0} memory budget too small: one tile in flight needs 1.50 GiB, the budget is 1.00 GiB
	// device memory too small for one tile: one tile needs 20.00 GiB on cuda:0, 10.00 GiB of its 60.00 GiB are free
}
