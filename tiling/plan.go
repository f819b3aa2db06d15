package tiling

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pnec/pnec/grid"
)

// Rect is a rectangle of pixels (the one rectangle type of the project,
// package grid's).
type Rect = grid.Rect

// Tile is one network run of a Plan.
type Tile struct {
	Index    int // position in Plan.Tiles (row-major)
	Row, Col int // position in the grid of tiles, 0-based
	// Input is the network input in scene coordinates: Plan.TileRows x
	// Plan.TileCols, origin a multiple of the stride. It may overhang the
	// scene's bottom or right edge: by less than the stride where tiles
	// follow each other along the axis, by up to a ladder step
	// (Options.Ladder) where one tile spans it. Read is the part inside the
	// scene and the rest is padding (no-data).
	Input Rect
	Read  Rect // pixels read from the scene: Input clipped to the scene
	Core  Rect // pixels this tile owns after cropping; Cores partition the scene
}

// Plan is how a scene of Rows x Cols pixels is run through the network.
type Plan struct {
	Rows, Cols int // scene size, pixels
	Stride     int // network output stride the origins align to
	// TileRows x TileCols is every tile's network input shape (for a
	// whole-image plan the scene's size, on the ladder when Options.Ladder
	// is set).
	TileRows, TileCols int
	// Overlap is the nominal overlap of neighbouring tiles, pixels (the last
	// tile of a row or column may overlap its neighbour more).
	Overlap int
	// Margin is how many pixels at a tile's interior edge get zero blending weight.
	Margin int
	// Whole is true when the scene runs as one tile.
	Whole bool
	// Ladder is the ladder step inputs were padded on (Options.Ladder).
	Ladder int
	// TilesDown x TilesAcross is the grid; Tiles lists it row-major (nil
	// for a plan made with Options.Lazy: Tile(i) gives each one).
	TilesDown, TilesAcross int
	Tiles                  []Tile
	// rowOrigins and colOrigins are the grid lines, pixels; rowCores and
	// colCores the spans each grid row and column owns.
	rowOrigins, colOrigins []int
	rowCores, colCores     []span
}

// Sentinel errors of New; callers may branch on them with errors.Is.
var (
	// ErrBudget means a plan does not fit in the memory budget (the
	// planner of package processor returns it; New never does: the budget
	// plays no part in a grid).
	ErrBudget = errors.New("memory budget too small")
	// ErrInvalid means the request itself is malformed (sizes, stride, overlap).
	ErrInvalid = errors.New("invalid request")
)

// Options configure New: the grid (tile side and overlap) and the ladder of
// network input sizes. Nothing here depends on the machine: a scene and
// the same Options give the same plan, and so the same map, anywhere.
type Options struct {
	Stride int // network output stride, pixels (> 0)
	// TileSize is the grid's tile side, pixels (rounded up to the stride):
	// a scene whose sides are both at most TileSize runs as one tile (the
	// whole image); a larger one on tiles of TileSize x TileSize, and an
	// axis at most TileSize long is spanned by one tile. 0 = always the
	// whole image.
	TileSize int
	// Overlap between neighbouring tiles: OverlapAuto (0, DefaultOverlap
	// for the tile size), OverlapNone (any negative: tiles edge to edge), or
	// pixels (rounded up to the stride); see ResolveOverlap. Ignored for
	// whole-image plans. processor.Options.Overlap has the same meaning.
	Overlap int
	// Ladder, when > 0, is the step of the ladder of network input sides
	// (a multiple of the stride; LadderStep): a side one tile spans (the
	// whole image, or a tile spanning a short axis) is padded up to the
	// next multiple of Ladder (Rung), so that scenes of many sizes share a
	// few compiled shapes. The padding is outside the
	// scene: Tile.Read stops at the scene's edge and the caller fills the
	// rest of Tile.Input with no-data. 0 = inputs of the tiles' own size.
	Ladder int
	// Lazy leaves Plan.Tiles nil: Plan.NumTiles and Plan.Tile describe the
	// grid without holding it, so a plan of millions of tiles (a VRT mosaic
	// declaring 10^6 x 10^6 pixels) is made in microseconds.
	Lazy bool
}

// LadderStep is the ladder step processor plans with: network input sides
// below the tile are padded to multiples of 64 pixels. Measured effect of
// the padding on the maps: docs/classify.md ("Few shapes").
const LadderStep = 64

// Rung is the network input side for an axis of n pixels spanned by one
// tile, on a ladder of step pixels (0 = no ladder): n rounded up to the
// step. It does not depend on the tile, so a scene runs whole on the same
// input whatever tile at least its size the grid has (a tile that is a
// multiple of the step is the top rung of its grid).
func Rung(n, step int) int {
	if step <= 0 {
		return n
	}
	return AlignUp(n, step)
}

// CanonicalTile is the tile side, pixels, of the grid every model's plans
// follow: a scene whose sides are both at most CanonicalTile runs as one
// tile (the whole image), a larger one on CanonicalTile x CanonicalTile
// tiles overlapping by tiling.DefaultOverlapPixels (12 px), for models of
// either encoder. The grid depends on the scene's size and the model alone,
// never on --max-memory, the backend, the jobs or the machine, so a scene
// and a model give one map everywhere; the budget and the device decide
// only how many tiles are in flight. Tiles of 96 to 512 px all kept the
// whole image's OA on mirrored SalinasA and Jasper Ridge mosaics, so memory
// and speed chose: 384 px is the largest multiple of the ladder step (64)
// whose tile of a 200-band scene 10,000 px wide fits a 2 GiB budget with
// the next tile read ahead (planned peak 1762 MiB; 448 px needs 1951 MiB
// with no read-ahead, 512 px 2301 MiB), and the network's CPU time per
// pixel run was about the same at 384 and 700 px tiles, so the time is set
// by the overlap's extra pixels (docs/classify.md, "One map per scene and
// model"). Training draws its windows from the same grid (docs/train.md).
const CanonicalTile = 384

// DefaultOverlapPixels is the default overlap, pixels, chosen from measured
// agreement with the whole image on real scenes (docs/classify.md, "One map
// per scene and model": 384 px tiles of 8x8 mirrored SalinasA and Jasper
// Ridge mosaics with overlaps of 8 to 32 px): the overall agreement moved
// by at most 0.13 points and the OA by 0.08, and from 12 px on the pixels
// within 8 px of a seam agreed at least as often as the others on both
// scenes (at 8 px, 99.71% against 99.75% on Jasper Ridge). The
// disagreements come from the scan's missing context across the whole
// tile, not from its edges, so a wider overlap only reads and runs more
// pixels: (384/372)^2 = 1.065 times the scene's at 12 px, 1.19 at 32 px
// (the default before).
const DefaultOverlapPixels = 12

// The two named overlap requests (Options.Overlap). The zero value asks for
// the default, as every zero Option does.
const (
	OverlapAuto = 0  // DefaultOverlap for the tile size
	OverlapNone = -1 // no overlap: tiles edge to edge, which shows seams
)

// ResolveOverlap is the overlap, pixels, tiles of side tile (a multiple
// of stride) run with for the request overlap: DefaultOverlap for
// OverlapAuto, 0 for OverlapNone (any negative), else overlap rounded up to
// the stride. It is the one place an overlap request is resolved.
func ResolveOverlap(overlap, tile, stride int) int {
	switch {
	case overlap == OverlapAuto:
		return DefaultOverlap(tile, stride)
	case overlap < 0:
		return 0
	}
	return AlignUp(overlap, stride)
}

// DefaultOverlap is the overlap used for tiles of side tile when none is
// given: DefaultOverlapPixels rounded up to the stride, and at most half
// the tile.
func DefaultOverlap(tile, stride int) int {
	o := AlignUp(DefaultOverlapPixels, stride)
	if o > tile/2 {
		o = alignDown(tile/2, stride)
	}
	return o
}

// New plans a rows x cols scene on the grid of o: the whole image when both
// sides are at most o.TileSize, else overlapping tiles of that side. The
// memory budget plays no part (package processor checks the plan against
// it and decides how many tiles are in flight), so a scene and a grid give
// one plan on any machine.
func New(rows, cols int, o Options) (Plan, error) {
	if rows <= 0 || cols <= 0 {
		return Plan{}, fmt.Errorf("%w: scene size %dx%d", ErrInvalid, cols, rows)
	}
	if o.Stride <= 0 {
		return Plan{}, fmt.Errorf("%w: stride %d", ErrInvalid, o.Stride)
	}
	if o.TileSize < 0 {
		return Plan{}, fmt.Errorf("%w: tile size %d", ErrInvalid, o.TileSize)
	}
	if o.Ladder < 0 || o.Ladder%o.Stride != 0 {
		return Plan{}, fmt.Errorf("%w: ladder step %d, want a multiple of the stride %d", ErrInvalid, o.Ladder, o.Stride)
	}
	if o.TileSize == 0 {
		p := whole(rows, cols, o.Stride, o.Ladder, o.Lazy)
		p.Ladder = o.Ladder
		return p, nil
	}
	tile := AlignUp(o.TileSize, o.Stride)
	overlap := ResolveOverlap(o.Overlap, tile, o.Stride)
	if overlap >= tile {
		return Plan{}, fmt.Errorf("%w: overlap %d px must be smaller than the tile (%d px)", ErrInvalid, overlap, tile)
	}
	if rows <= tile && cols <= tile {
		p := whole(rows, cols, o.Stride, o.Ladder, o.Lazy)
		p.Ladder = o.Ladder
		return p, nil
	}
	return gridRC(rows, cols, tile, overlap, o.Stride, o.Ladder, o.Lazy), nil
}

// whole is the one-tile plan of a rows x cols scene, its input padded to
// the ladder of step ladder (0: none).
func whole(rows, cols, stride, ladder int, lazy bool) Plan {
	p := Plan{
		Rows: rows, Cols: cols, Stride: stride,
		TileRows: Rung(rows, ladder), TileCols: Rung(cols, ladder),
		Whole: true, TilesDown: 1, TilesAcross: 1,
		rowOrigins: []int{0}, colOrigins: []int{0},
		rowCores: []span{{0, rows}}, colCores: []span{{0, cols}},
	}
	if !lazy {
		p.Tiles = []Tile{p.Tile(0)}
	}
	return p
}

// gridRC is the grid of tiles of side tile overlapping by overlap; an axis
// one tile spans has inputs on the ladder of step ladder.
func gridRC(rows, cols, tile, overlap, stride, ladder int, lazy bool) Plan {
	p := Plan{Rows: rows, Cols: cols, Stride: stride, Overlap: overlap, Margin: overlap / 4, Ladder: ladder}
	p.rowOrigins, p.TileRows, p.rowCores = axis(rows, tile, overlap, stride, ladder)
	p.colOrigins, p.TileCols, p.colCores = axis(cols, tile, overlap, stride, ladder)
	p.TilesDown, p.TilesAcross = len(p.rowOrigins), len(p.colOrigins)
	if !lazy {
		p.Tiles = make([]Tile, p.NumTiles())
		for i := range p.Tiles {
			p.Tiles[i] = p.Tile(i)
		}
	}
	return p
}

// NumTiles is the number of tiles of the plan (len(Tiles) unless lazy).
func (p Plan) NumTiles() int { return p.TilesDown * p.TilesAcross }

// Tile returns tile i (row-major, 0 <= i < NumTiles()), computed from the
// grid: the same value as Tiles[i] of a plan that is not lazy.
func (p Plan) Tile(i int) Tile {
	r, c := i/p.TilesAcross, i%p.TilesAcross
	in := Rect{Col: p.colOrigins[c], Row: p.rowOrigins[r], Cols: p.TileCols, Rows: p.TileRows}
	rc, cc := p.rowCores[r], p.colCores[c]
	return Tile{
		Index: i, Row: r, Col: c,
		Input: in,
		Read:  in.Intersect(Rect{Rows: p.Rows, Cols: p.Cols}),
		Core:  Rect{Col: cc.from, Row: rc.from, Cols: cc.to - cc.from, Rows: rc.to - rc.from},
	}
}

// TileAt is the index of the tile whose core holds pixel (row, col) of
// the scene (0 <= row < Rows, 0 <= col < Cols): the one tile that owns it.
func (p Plan) TileAt(row, col int) int {
	return coreAt(p.rowCores, row)*p.TilesAcross + coreAt(p.colCores, col)
}

// coreAt is the span of cores holding x (the last span for x past them).
func coreAt(cores []span, x int) int {
	i, _ := slices.BinarySearchFunc(cores, x, func(s span, x int) int {
		switch {
		case s.to <= x:
			return -1
		case s.from > x:
			return 1
		}
		return 0
	})
	return min(i, len(cores)-1)
}

type span struct{ from, to int }

// axis cuts one axis of size pixels into tiles of side tile overlapping by
// overlap. It returns the origins, the tile length (size on the ladder of
// step ladder when one tile covers the axis) and each tile's core span.
func axis(size, tile, overlap, stride, ladder int) ([]int, int, []span) {
	if size <= tile {
		return []int{0}, Rung(size, ladder), []span{{0, size}}
	}
	step := tile - overlap
	origins := []int{0}
	for last := 0; last+tile < size; last = origins[len(origins)-1] {
		// The last tile ends at the scene's edge, rounded up to the stride,
		// rather than overhanging by up to a whole step of padding.
		origins = append(origins, min(last+step, AlignUp(size-tile, stride)))
	}
	cores := make([]span, len(origins))
	for i := range origins {
		cores[i].from = 0
		if i > 0 {
			cores[i].from = cores[i-1].to
		}
		cores[i].to = size
		if i+1 < len(origins) {
			// Split the overlap with the next tile in its middle.
			cores[i].to = alignDown((origins[i+1]+origins[i]+tile)/2, stride)
		}
	}
	return origins, tile, cores
}

// AlignUp is n rounded up to a multiple of a (a > 0).
func AlignUp(n, a int) int { return (n + a - 1) / a * a }

func alignDown(n, a int) int { return n / a * a }

// String summarises the plan in one line.
func (p Plan) String() string {
	if p.Whole {
		s := fmt.Sprintf("whole image %dx%d (cols x rows)", p.Cols, p.Rows)
		if p.TileRows != p.Rows || p.TileCols != p.Cols {
			s += fmt.Sprintf(", run padded to %dx%d", p.TileCols, p.TileRows)
		}
		return s
	}
	return fmt.Sprintf("%d tiles (%d down x %d across) of %dx%d, overlap %d px, scene %dx%d (cols x rows)",
		p.NumTiles(), p.TilesDown, p.TilesAcross, p.TileCols, p.TileRows, p.Overlap, p.Cols, p.Rows)
}

// RowBand is one row of tiles and the scene rows whose stitching it
// completes.
type RowBand struct {
	Row   int // tile row, 0-based
	Tiles []Tile
	// FinalRows: after this tile row (and every earlier one) is stitched, no
	// later tile touches scene rows below FinalRows (exclusive bound).
	FinalRows int
}

// RowBands groups the tiles by tile row, in order.
func (p Plan) RowBands() []RowBand {
	out := make([]RowBand, p.TilesDown)
	for i := range out {
		var tiles []Tile
		if p.Tiles != nil {
			tiles = p.Tiles[i*p.TilesAcross : (i+1)*p.TilesAcross]
		} else {
			tiles = make([]Tile, p.TilesAcross)
			for j := range tiles {
				tiles[j] = p.Tile(i*p.TilesAcross + j)
			}
		}
		out[i] = RowBand{Row: i, Tiles: tiles, FinalRows: p.Rows}
		if i+1 < p.TilesDown {
			out[i].FinalRows = p.rowOrigins[i+1]
		}
	}
	return out
}
