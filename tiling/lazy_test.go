package tiling

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestLazyPlanMatches: a lazy plan's Tile(i) and RowBands are the tiles a
// full plan lists, over random scene sizes, tile sizes and overlaps.
func TestLazyPlanMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 200; n++ {
		rows, cols := 1+rng.IntN(900), 1+rng.IntN(900)
		o := Options{Stride: 4, TileSize: 8 + rng.IntN(200), Overlap: OverlapAuto}
		if n%5 == 0 {
			o.TileSize = 0 // whole image
		}
		full, err := New(rows, cols, o)
		if err != nil {
			t.Fatal(err)
		}
		o.Lazy = true
		lazy, err := New(rows, cols, o)
		if err != nil {
			t.Fatal(err)
		}
		if lazy.Tiles != nil {
			t.Fatalf("lazy plan holds %d tiles, want none", len(lazy.Tiles))
		}
		if got, want := lazy.NumTiles(), len(full.Tiles); got != want {
			t.Fatalf("%dx%d tile %d: NumTiles got %d, want %d", cols, rows, o.TileSize, got, want)
		}
		for i, ft := range full.Tiles {
			if lt := lazy.Tile(i); lt != ft {
				t.Fatalf("%dx%d tile %d: Tile(%d) got %+v, want %+v", cols, rows, o.TileSize, i, lt, ft)
			}
		}
		if got, want := lazy.RowBands(), full.RowBands(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%dx%d tile %d: RowBands differ:\ngot  %+v\nwant %+v", cols, rows, o.TileSize, got, want)
		}
		if lazy.String() != full.String() {
			t.Errorf("String: got %q, want %q", lazy.String(), full.String())
		}
	}
}

// TestLazyPlanHuge: a 10^6 x 10^6 scene plans at once when lazy.
func TestLazyPlanHuge(t *testing.T) {
	start := time.Now()
	p, err := New(1_000_000, 1_000_000, Options{Stride: 4, TileSize: 256, Overlap: OverlapAuto, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("lazy plan of 10^12 pixels took %s, want well under a second", el)
	}
	last := p.Tile(p.NumTiles() - 1)
	if last.Core.Col+last.Core.Cols != 1_000_000 || last.Core.Row+last.Core.Rows != 1_000_000 {
		t.Errorf("last tile's core %v does not reach the scene's corner", last.Core)
	}
	if p.NumTiles() < 10_000_000 {
		t.Errorf("got %d tiles of 256 px over 10^6 x 10^6 px, want over 10^7", p.NumTiles())
	}
}
