// Package tiling plans how a scene is cut into overlapping network tiles and
// blends the tiles' outputs back into one canvas. It is pure planning and
// arithmetic on plain types: no I/O, no GDAL, no GoMLX, so every rule here is
// testable in isolation.
//
// A Plan follows from the scene's size and the grid (tile side and
// overlap) alone, never from a memory budget or the machine, so a scene and
// a grid give one plan, and so one map, anywhere. It is either one
// whole-image tile (both sides at most the tile) or a grid of tiles of one
// common input shape (so that one compiled network serves them all). Tile
// origins and sizes are multiples of the network's output stride, so every
// tile's pooled grid lines up with the scene's. Along each axis the last tile
// is shifted back to end at the scene's edge (rounded up to the stride); the
// few rows or columns it overhangs are padding the caller fills. An axis one
// tile spans (the whole image, or a short side) is padded further, to the
// next rung of a ladder of input sizes (Options.Ladder, Rung), so that
// scenes of many sizes share a few compiled shapes.
//
// PlanFlight decides how many tiles a run holds at once from a host memory
// estimate and a budget, and from what an accelerator reports
// (DeviceMemory): the budget and the device change how a plan runs, never
// the plan.
//
// Each tile also owns a Core rectangle: the Cores partition the scene (every
// pixel exactly once), splitting each overlap in the middle. Blending does not
// use Cores directly: a tile's Weight falls linearly to zero towards its
// interior edges (not at the scene's borders), and the Canvas renormalises the
// weighted sum, so no pixel takes its value from a tile border.
//
// A lazy plan (Options.Lazy) lists no tiles: Plan.Tile(i) computes each from
// the grid, so a plan of any size is made and described at once.
//
// The AvgPool recovery (Recover, RecoverRows, RecoverRegion) is arithmetic
// on the stitched canvas's probabilities and lives here beside it: a row
// stripe is recovered once its rows and their halo are final.
//
// Coordinates are 0-based pixels; Rect (package grid's, shared with geo's
// windows) has Col/Row at the top-left corner.
package tiling
