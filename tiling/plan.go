package tiling

import (
	"errors"
	"fmt"

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
	// scene's bottom or right edge by less than the stride; Read is the part
	// inside the scene and the rest is padding.
	Input Rect
	Read  Rect // pixels read from the scene: Input clipped to the scene
	Core  Rect // pixels this tile owns after cropping; Cores partition the scene
}

// Plan is how a scene of Rows x Cols pixels is run through the network.
type Plan struct {
	Rows, Cols int // scene size, pixels
	Stride     int // network output stride the origins align to
	// TileRows x TileCols is every tile's network input shape (the scene's
	// size for a whole-image plan).
	TileRows, TileCols int
	// Overlap is the nominal overlap of neighbouring tiles, pixels (the last
	// tile of a row or column may overlap its neighbour more).
	Overlap int
	// Margin is how many pixels at a tile's interior edge get zero blending weight.
	Margin int
	// Whole is true when the scene runs as one tile.
	Whole bool
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
	// ErrBudget means even the smallest tile does not fit in the memory budget.
	ErrBudget = errors.New("tiling: memory budget too small")
	// ErrInvalid means the request itself is malformed (sizes, stride, overlap).
	ErrInvalid = errors.New("tiling: invalid request")
)

// MinTile is the smallest tile side, pixels, the planner picks by itself.
const MinTile = 64

// Options configure New. TileSize > 0 forces a tiled plan with that tile
// side; otherwise the budget decides between the whole image and the largest
// tile that fits.
type Options struct {
	Stride int // network output stride, pixels (> 0)
	// TileSize forces tiles of this side, pixels (rounded up to the stride); 0 = plan from the budget.
	TileSize int
	// Overlap between neighbouring tiles: OverlapAuto (0, DefaultOverlap
	// for the tile size), OverlapNone (any negative: tiles edge to edge), or
	// pixels (rounded up to the stride); see ResolveOverlap. Ignored for
	// whole-image plans. processor.Options.Overlap has the same meaning.
	Overlap int
	// RecoveryWindow is the odd side of the AvgPool recovery window, pixels;
	// it sets the stripe's halo in the memory estimate and a floor for the default overlap.
	RecoveryWindow int
	// MaxMemoryBytes is the memory budget; 0 = unlimited (whole image unless TileSize forces tiles).
	MaxMemoryBytes int64
	// Cost estimates memory for a run; nil = no estimate (everything fits).
	Cost *Cost
	// Lazy leaves Plan.Tiles nil: Plan.NumTiles and Plan.Tile describe the
	// grid without holding it, so a plan of millions of tiles (a VRT mosaic
	// declaring 10^6 x 10^6 pixels) is made in microseconds.
	Lazy bool
}

// Cost is the memory model of one scene run. All sizes are bytes.
type Cost struct {
	Bands   int // input bands (read buffers hold float32 per band plus a validity byte)
	Classes int // output classes (prediction and canvas hold float32 per class plus uncertainty)
	// NetworkBytes is the network's peak for an input of rows x cols pixels
	// (model.Model.EstimatePredictBytes); nil = 0.
	NetworkBytes func(rows, cols int) int64
	// Whole and Tiled, when set, replace WholeBytes' and TiledBytes' own
	// estimates (the processor's calibrated memory model).
	Whole func(rows, cols int) int64
	Tiled func(tileRows, tileCols, sceneCols, overlap, window int) int64
}

// inputPixelBytes is one pixel of a read block: float32 per band and a validity flag.
func (c *Cost) inputPixelBytes() int64 { return int64(c.Bands)*4 + 1 }

// outputPixelBytes is one pixel of a prediction or canvas row: float32 per
// class, the uncertainty and the blending weight.
func (c *Cost) outputPixelBytes() int64 { return int64(c.Classes+2) * 4 }

// WholeBytes estimates the peak of a whole-image run of a rows x cols scene:
// the scene block, the network, its prediction, the canvas it is copied
// into and the product rows.
func (c *Cost) WholeBytes(rows, cols int) int64 {
	if c.Whole != nil {
		return c.Whole(rows, cols)
	}
	px := int64(rows) * int64(cols)
	n := px*c.inputPixelBytes() + 2*px*c.outputPixelBytes() + px*8
	if c.NetworkBytes != nil {
		n += c.NetworkBytes(rows, cols)
	}
	return n
}

// TiledBytes estimates the peak of a tiled run: two tiles in flight (one read
// ahead while one runs), the network for one tile, two predictions (one being
// stitched), and the canvas stripe: a tile row plus the recovery halo on both
// sides, the whole scene width.
func (c *Cost) TiledBytes(tileRows, tileCols, sceneCols, overlap, window int) int64 {
	if c.Tiled != nil {
		return c.Tiled(tileRows, tileCols, sceneCols, overlap, window)
	}
	tpx := int64(tileRows) * int64(tileCols)
	n := 2*tpx*c.inputPixelBytes() + 2*tpx*c.outputPixelBytes()
	if c.NetworkBytes != nil {
		n += c.NetworkBytes(tileRows, tileCols)
	}
	stripeRows := int64(tileRows + overlap + 2*window)
	n += stripeRows * int64(sceneCols) * (c.outputPixelBytes() + 8)
	return n
}

// DefaultOverlapPixels is the default overlap's floor, pixels, chosen from
// measured tiled-versus-whole agreement (processor's TestOverlapSweep; the
// table is in docs/classify.md): 8 px already kept >= 99.5%
// overall and >= 99% within 8 px of tile edges at tiles of 64 to 128 px,
// 24-32 px gave 99.95-99.98% and 99.95-99.99%; a wider overlap bought
// nothing measurable. The overlap does not grow with the tile (the old
// quarter of the tile read and ran 1.8x the scene's pixels at 640 px tiles
// for no measured gain): the context a pixel lacks at a tile edge is set by
// the network, not by the tile.
const DefaultOverlapPixels = 32

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
func ResolveOverlap(overlap, tile, stride, window int) int {
	switch {
	case overlap == OverlapAuto:
		return DefaultOverlap(tile, stride, window)
	case overlap < 0:
		return 0
	}
	return AlignUp(overlap, stride)
}

// DefaultOverlap is the overlap used for tiles of side tile when none is
// given: DefaultOverlapPixels, at least the recovery window plus 16 pixels,
// rounded up to the stride, and less than half the tile.
func DefaultOverlap(tile, stride, window int) int {
	o := max(DefaultOverlapPixels, window+16)
	o = AlignUp(o, stride)
	if o > tile/2 {
		o = alignDown(tile/2, stride)
	}
	return o
}

// New plans a rows x cols scene.
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
	if o.RecoveryWindow <= 0 {
		o.RecoveryWindow = 1
	}
	if o.TileSize == 0 {
		if o.MaxMemoryBytes <= 0 || o.Cost == nil || o.Cost.WholeBytes(rows, cols) <= o.MaxMemoryBytes {
			return whole(rows, cols, o.Stride, o.Lazy), nil
		}
		return fromBudget(rows, cols, o)
	}
	tile := AlignUp(o.TileSize, o.Stride)
	overlap := ResolveOverlap(o.Overlap, tile, o.Stride, o.RecoveryWindow)
	if overlap >= tile {
		return Plan{}, fmt.Errorf("%w: overlap %d px must be smaller than the tile (%d px)", ErrInvalid, overlap, tile)
	}
	return tileGrid(rows, cols, tile, overlap, o.Stride, o.Lazy), nil
}

// fromBudget picks the largest tile (a multiple of 64 pixels, and of the
// stride) whose tiled run fits the budget.
func fromBudget(rows, cols int, o Options) (Plan, error) {
	const step = 64
	top := AlignUp(max(rows, cols), step)
	for tile := top; tile >= MinTile; tile -= step {
		t := AlignUp(tile, o.Stride)
		overlap := ResolveOverlap(o.Overlap, t, o.Stride, o.RecoveryWindow)
		if overlap >= t {
			continue
		}
		tr, tc := min(t, rows), min(t, cols)
		if o.Cost.TiledBytes(tr, tc, cols, overlap, o.RecoveryWindow) <= o.MaxMemoryBytes {
			// The same number of tiles, each no larger than needed: the
			// grid's tiles end where the scene ends instead of the last
			// one overlapping its neighbour by most of a tile (a 2048 px
			// axis in 640 px tiles ran 2560 px; balanced, 2144).
			br, bc := balanced(rows, t, overlap, o.Stride), balanced(cols, t, overlap, o.Stride)
			return gridRC(rows, cols, br, bc, overlap, o.Stride, o.Lazy), nil
		}
	}
	t := AlignUp(MinTile, o.Stride)
	need := o.Cost.TiledBytes(min(t, rows), min(t, cols), cols, DefaultOverlap(t, o.Stride, o.RecoveryWindow), o.RecoveryWindow)
	return Plan{}, fmt.Errorf("%w: %d MiB allowed, a %dx%d scene needs about %d MiB with %d px tiles",
		ErrBudget, o.MaxMemoryBytes>>20, cols, rows, need>>20, t)
}

func whole(rows, cols, stride int, lazy bool) Plan {
	p := Plan{
		Rows: rows, Cols: cols, Stride: stride,
		TileRows: rows, TileCols: cols,
		Whole: true, TilesDown: 1, TilesAcross: 1,
		rowOrigins: []int{0}, colOrigins: []int{0},
		rowCores: []span{{0, rows}}, colCores: []span{{0, cols}},
	}
	if !lazy {
		p.Tiles = []Tile{p.Tile(0)}
	}
	return p
}

// balanced is the smallest tile side (a multiple of stride, at most tile)
// that covers an axis of size pixels with as many tiles of overlap as tiles
// of side tile need.
func balanced(size, tile, overlap, stride int) int {
	if size <= tile {
		return tile
	}
	n := (size - overlap + tile - overlap - 1) / (tile - overlap)
	b := AlignUp((size-overlap+n-1)/n+overlap, stride)
	return min(b, tile)
}

func tileGrid(rows, cols, tile, overlap, stride int, lazy bool) Plan {
	return gridRC(rows, cols, tile, tile, overlap, stride, lazy)
}

// gridRC is grid with tiles tileRows high and tileCols wide.
func gridRC(rows, cols, tileRows, tileCols, overlap, stride int, lazy bool) Plan {
	p := Plan{Rows: rows, Cols: cols, Stride: stride, Overlap: overlap, Margin: overlap / 4}
	p.rowOrigins, p.TileRows, p.rowCores = axis(rows, tileRows, overlap, stride)
	p.colOrigins, p.TileCols, p.colCores = axis(cols, tileCols, overlap, stride)
	p.TilesDown, p.TilesAcross = len(p.rowOrigins), len(p.colOrigins)
	p.Whole = p.NumTiles() == 1
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

type span struct{ from, to int }

// axis cuts one axis of size pixels into tiles of side tile overlapping by
// overlap. It returns the origins, the tile length (size itself when one tile
// covers the axis) and each tile's core span.
func axis(size, tile, overlap, stride int) ([]int, int, []span) {
	if size <= tile {
		return []int{0}, size, []span{{0, size}}
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
		return fmt.Sprintf("whole image %dx%d (cols x rows)", p.Cols, p.Rows)
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
