package processor

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/tiling"
)

// TestCarryReaderMatchesDirectReads: reading a plan's tiles with the
// carry between horizontal neighbours gives every tile exactly the pixels
// and validity a direct read of its window gives, for plans whose tiles do
// and do not line up with the 256-pixel blocks, with nodata pixels, and
// with buffers recycled from tile to tile.
func TestCarryReaderMatchesDirectReads(t *testing.T) {
	const rows, cols, bands = 90, 700, 5
	data := make([]float32, rows*cols*bands)
	for i := range data {
		data[i] = float32((i*7919)%2003 - 1000)
	}
	nd := -1000.0
	for p := 0; p < rows*cols; p += 97 { // scattered nodata pixels
		data[p*bands+p%bands] = float32(nd)
	}
	path := filepath.Join(t.TempDir(), "s.tif")
	writeTyped(t, path, rows, cols, bands, geo.Int16, &nd, data)
	sc, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	info := sc.Info()
	if carryBlockCols(info) != 256 {
		t.Fatalf("carry block width %d for %dx%d blocks, want 256", carryBlockCols(info), info.BlockCols, info.BlockRows)
	}
	ctx := context.Background()
	for _, o := range []tiling.Options{{Stride: 4, TileSize: 160, Overlap: 16}, {Stride: 4, TileSize: 272, Overlap: 16}, {Stride: 4, TileSize: 64, Overlap: 8}} {
		plan, err := tiling.New(rows, cols, o)
		if err != nil {
			t.Fatal(err)
		}
		cr := carryReader{sc: sc, bands: bands, sceneCols: cols, blockCols: carryBlockCols(info)}
		var buf []float32
		carried := 0
		for i, tl := range plan.Tiles {
			var next *tiling.Tile
			if i+1 < len(plan.Tiles) {
				next = &plan.Tiles[i+1]
			}
			hadCarry := cr.carry.Cols > 0
			got, err := cr.read(ctx, tl, next, buf)
			if err != nil {
				t.Fatal(err)
			}
			if hadCarry {
				carried++
			}
			w := geo.Window{Col: tl.Read.Col, Row: tl.Read.Row, Cols: tl.Read.Cols, Rows: tl.Read.Rows}
			want, err := sc.ReadWindow(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			if got.Window != w || !slices.Equal(got.Valid, want.Valid) || !slices.Equal(got.Data, want.Data) {
				t.Fatalf("tile %d (%v) of %d-px tiles differs from a direct read", tl.Index, w, o.TileSize)
			}
			buf = got.Data // recycled, as the network hands it back
		}
		if carried == 0 {
			t.Errorf("%d-px tiles: no tile used a carry", o.TileSize)
		}
	}
}
