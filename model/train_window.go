package model

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/pnec/pnec/tiling"
)

// Windowed training. A scene larger than the grid's tile on a side
// (tiling.CanonicalTile, 384 px, unless TrainOptions.Tile says otherwise)
// trains on the tiles of the grid classify runs it on, not as one image:
// each epoch is one step on one tile that holds training pixels, the tiles
// taken in a shuffled cycle, so a step's memory and time are one tile's
// whatever the scene's area, and the network learns on the contexts it is
// applied on. A scene within one tile trains whole, as the paper does,
// and so does a held scene the grid covers with at most wholeMaxTiles
// tiles when the whole step fits the budget (trainsWholeByDefault).

// trainWindowMaxRows bounds the training pixels of one windowed step: a
// tile owning more (a densely labelled scene) trains on that many of them
// drawn afresh each step. The step's bilinear weights are a dense
// [rows, cells] matrix (trainData.wtr): at 384 px tiles (9,216 cells) a
// fully labelled tile would need 5.4 GB for it, 2,048 rows need 75 MB.
const trainWindowMaxRows = 2048

// wholeMaxTiles is the most tiles of the default grid a held scene trains
// whole on. With two tiles each windowed step trains on one of them, so a
// label outside their overlap is in half the steps a whole run gives it:
// on the Pavia University layout (340 x 610 px, two 384 px tiles) tiles
// scored 1.11 OA points under the whole scene over 5 seeds (docs/train.md),
// while a whole step there cost about 1.4 tile steps. From four tiles up
// (500 px: a label in 2.3 of the 4 tiles' stitches) tiles scored as well.
const wholeMaxTiles = 2

// trainsWholeByDefault says a scene planned on the windowed grid plan
// trains whole unless the whole step does not fit the budget: the default
// tile (opts.Tile 0, not asked either way) and a grid of at most
// wholeMaxTiles tiles.
func trainsWholeByDefault(plan tiling.Plan, opts TrainOptions) bool {
	return opts.Tile == 0 && !opts.Whole && !plan.Whole && plan.NumTiles() <= wholeMaxTiles
}

// trainGrid is the grid a scene of rows x cols trains on under opts: the
// classify grid of opts.Tile px tiles (0: tiling.CanonicalTile), overlap
// and ladder as classify plans them. Plan.Whole says the scene trains as
// one image (opts.Whole, or a scene within one tile).
func trainGrid(rows, cols int, opts TrainOptions) (tiling.Plan, error) {
	if opts.Tile < 0 {
		return tiling.Plan{}, fmt.Errorf("training tile %d px: must be 0 (the grid's, %d px) or positive", opts.Tile, tiling.CanonicalTile)
	}
	tile := opts.Tile
	if tile == 0 {
		tile = tiling.CanonicalTile
	}
	if !opts.Whole {
		p, err := tiling.New(rows, cols, tiling.Options{Stride: Stride, TileSize: tile, Ladder: tiling.LadderStep})
		if err != nil {
			return tiling.Plan{}, fmt.Errorf("training grid: %w", err)
		}
		if !p.Whole {
			return p, nil
		}
	}
	// One image: the scene itself, not a ladder-padded input.
	return tiling.New(rows, cols, tiling.Options{Stride: Stride})
}

// trainPlan is the grid s trains on under opts with trainPixels training
// pixels: trainGrid's, except that a held scene the default grid covers
// with at most wholeMaxTiles tiles trains whole where the whole step fits
// the budget (on the tiles where it does not).
func trainPlan(s Scene, d dims, opts TrainOptions, trainPixels int) (tiling.Plan, error) {
	plan, err := trainGrid(s.Rows, s.Cols, opts)
	if err != nil || !trainsWholeByDefault(plan, opts) || s.Streamed() {
		return plan, err
	}
	whole, err := trainGrid(s.Rows, s.Cols, TrainOptions{Whole: true})
	if err != nil {
		return tiling.Plan{}, err
	}
	if trainOverBudget(trainNeedBytes(d, opts.Config, s, whole, trainPixels), opts.MaxMemoryBytes) {
		return plan, nil
	}
	return whole, nil
}

// trainedGrid is the grid m trained on (trainGrid of its training scene
// and tile; the whole scene for a model that trained whole).
func (m *Model) trainedGrid() (tiling.Plan, error) {
	return trainGrid(m.meta.SceneRows, m.meta.SceneCols, TrainOptions{Tile: m.meta.TrainTile, Whole: m.meta.TrainTile == 0})
}

// TrainTile is the side, pixels, of the tiles m trained on, one a step
// (TrainOptions.Tile); 0 when it trained on its whole scene.
func (m *Model) TrainTile() int { return m.meta.TrainTile }

// trainWindow is one tile of a windowed run with its training pixels.
type trainWindow struct {
	tile tiling.Tile
	idx  []int   // the training pixels the tile's stitch weighs in, row-major in its input
	y    []int32 // their dense classes
}

// trainWindows are a windowed run's tiles that hold a training pixel and
// the order the steps take them in.
type trainWindows struct {
	plan  tiling.Plan
	wins  []trainWindow
	rows  int // the most training pixels a tile holds, at most trainWindowMaxRows: every step's row count
	rng   *rand.Rand
	order []int
	pos   int
	scene Scene // the current step's tile, reused
}

// newTrainWindows lists the tiles of plan that hold a training pixel. A
// pixel trains in every tile whose prediction classify's stitch weighs
// into it (tiling.Plan.Weights > 0 there): the one whose core holds it,
// and the neighbours whose overlap reaches it. So each pixel trains in
// each context its map is made from, and is seen by more than one
// tile's steps where tiles overlap much: on a 500 px scene (four 384 px
// tiles) a pixel lies in 2.3 tiles' stitches on average, 1.3 on 1000
// and 2000 px scenes. Owned by one tile alone, a label there was seen by
// a quarter of the steps a whole-scene run gives it (docs/train.md: the
// map then scored below the whole-scene run's; now above).
func newTrainWindows(plan tiling.Plan, s Scene, trainIdx []int, ytrain []int32, seed int64) *trainWindows {
	tw := &trainWindows{plan: plan, rng: rand.New(rand.NewPCG(uint64(seed), 0x77696e64))}
	rowsIn, colsIn := stitchedBy(&plan)
	at := map[int]int{} // tile index -> position in wins
	for t, i := range trainIdx {
		r, c := i/s.Cols, i%s.Cols
		for _, tr := range rowsIn[r] {
			for _, tc := range colsIn[c] {
				k := tr*plan.TilesAcross + tc
				w, ok := at[k]
				if !ok {
					w = len(tw.wins)
					at[k] = w
					tw.wins = append(tw.wins, trainWindow{tile: plan.Tile(k)})
				}
				in := tw.wins[w].tile.Input
				tw.wins[w].idx = append(tw.wins[w].idx, (r-in.Row)*in.Cols+(c-in.Col))
				tw.wins[w].y = append(tw.wins[w].y, ytrain[t])
			}
		}
	}
	for _, w := range tw.wins {
		tw.rows = max(tw.rows, min(len(w.idx), trainWindowMaxRows))
	}
	return tw
}

// stitchedBy lists, for each scene row and column, the grid rows and
// columns of the tiles whose stitch weight is positive there (the weight
// of a pixel is its row's weight times its column's, tiling.Plan.Weights).
func stitchedBy(p *tiling.Plan) (rows, cols [][]int) {
	rows = make([][]int, p.Rows)
	for tr := range p.TilesDown {
		t := p.Tile(tr * p.TilesAcross)
		w, _ := p.Weights(t)
		for i, v := range w {
			if r := t.Input.Row + i; v > 0 && r >= 0 && r < p.Rows {
				rows[r] = append(rows[r], tr)
			}
		}
	}
	cols = make([][]int, p.Cols)
	for tc := range p.TilesAcross {
		t := p.Tile(tc)
		_, w := p.Weights(t)
		for i, v := range w {
			if c := t.Input.Col + i; v > 0 && c >= 0 && c < p.Cols {
				cols[c] = append(cols[c], tc)
			}
		}
	}
	return rows, cols
}

// next is the tile of the next step: the tiles in a random order, each
// once a cycle.
func (tw *trainWindows) next() *trainWindow {
	if tw.pos == len(tw.order) {
		tw.order, tw.pos = tw.rng.Perm(len(tw.wins)), 0
	}
	w := &tw.wins[tw.order[tw.pos]]
	tw.pos++
	return w
}

// sceneOf is tile t of s as the network takes it: its input rectangle,
// the part outside s no-data. The scene's buffers are reused from call
// to call (valid until the next).
func (tw *trainWindows) sceneOf(s Scene, t tiling.Tile) Scene {
	in := t.Input
	n := in.Rows * in.Cols
	ws := &tw.scene
	if len(ws.Valid) != n || ws.Bands != s.Bands {
		*ws = Scene{Data: make([]float32, n*s.Bands), Valid: make([]bool, n)}
	}
	ws.Rows, ws.Cols, ws.Bands, ws.WavelengthsNM = in.Rows, in.Cols, s.Bands, s.WavelengthsNM
	fillTile(*ws, s, t)
	return *ws
}

// fillTile writes tile t of s into ws (its input's size): the pixels of
// t.Read, no-data elsewhere.
func fillTile(ws, s Scene, t tiling.Tile) {
	B := s.Bands
	clear(ws.Data)
	clear(ws.Valid)
	rd, in := t.Read, t.Input
	// The read rectangle straight into its place in the input.
	at := (rd.Row-in.Row)*in.Cols + (rd.Col - in.Col)
	data, valid := ws.Data[at*B:], ws.Valid[at:]
	if st := s.stream; st != nil {
		st.readWindow(rd.Row, rd.Col, rd.Rows, rd.Cols, in.Cols, data, valid)
		return
	}
	// Within the scene by the plan: no error.
	_ = SceneMemorySource{Scene: s}.ReadWindow(context.Background(), rd.Row, rd.Col, rd.Rows, rd.Cols, in.Cols, data, valid)
}

// tileScene is tile t of s in buffers of its own (tiles of the
// statistics passes, which outlive the next call).
func tileScene(s Scene, t tiling.Tile) Scene {
	n := t.Input.Rows * t.Input.Cols
	ws := Scene{Rows: t.Input.Rows, Cols: t.Input.Cols, Bands: s.Bands, WavelengthsNM: s.WavelengthsNM,
		Data: make([]float32, n*s.Bands), Valid: make([]bool, n)}
	fillTile(ws, s, t)
	return ws
}

// stepData is the step's data for window w of s (the full-resolution
// stage's input left out with kernels, newTrainData): its scene (tw.scene),
// its training pixels (tw.rows of them drawn at random when it owns more)
// padded to tw.rows rows of class -1 (which carry no loss and no
// prototype update), and the cross-entropy's scale that makes the step's
// means over its own training pixels.
func (tw *trainWindows) stepData(s Scene, w *trainWindow, in inputSpec, encoder string, kernels bool) (Scene, trainData, []int, []int32) {
	ws := tw.sceneOf(s, w.tile)
	idx := make([]int, tw.rows)
	y := make([]int32, tw.rows)
	n := len(w.idx)
	if n > tw.rows {
		// More than a step holds: a fresh draw of them.
		for t, j := range tw.rng.Perm(n)[:tw.rows] {
			idx[t], y[t] = w.idx[j], w.y[j]
		}
		n = tw.rows
	} else {
		copy(idx, w.idx)
		copy(y, w.y)
	}
	for t := n; t < tw.rows; t++ {
		y[t] = -1
	}
	td := newTrainData(ws, in, idx, y, encoder, kernels)
	td.ceScale = float32(tw.rows) / float32(n)
	return ws, td, idx, y
}
