package kernels

import "math"

// Stride is the full-resolution stage's output stride: MaxPool 2 then
// AvgPool 2 make one output cell of every 4 x 4 pixels (the network's
// stride, model.Stride).
const Stride = 4

// FullResChunkCells is the most cells along a row whose Winograd tiles
// (one 6x6 input patch per cell) are transformed and multiplied together:
// 36 transforms of up to 32 tiles x D channels, 0.6 MiB each for the inputs
// and the products at D = 128 (what the memory plan counts).
const FullResChunkCells = 32

// chunkCells is the chunk the stage runs, chosen by the matrix product's
// kernel. With AVX-512 (machines with 1-2 MiB of L2 a core): 32 cells, 0.32
// CPU-s per Pavia-sized inference against 0.39 for 64, the products then
// spilling from the L2 cache. With AVX2 (Zen 3, 512 KiB of L2 a core), a
// multiple of the 6-row kernel: BenchmarkFullRes/infer at bench-big's tile
// (408 x 408 x 200), 4 rounds alternated, took 0.71-0.79 CPU-s with 18
// cells, 0.73-0.84 with 24, 0.76-0.99 with 32, 0.79-0.87 with 48.
var chunkCells = func() int {
	if haveGemm512 {
		return FullResChunkCells
	}
	return 18
}()

// Dims are the sizes of the network the full-resolution stage belongs to.
type Dims struct {
	Bands  int // spectral bands of a scene (one input channel per band)
	D      int // the network's width (channels)
	Groups int // GroupNorm's groups (D a multiple of them)
}

// Scene is the scene the stage reads: Data is pixel-interleaved
// [Rows][Cols][Bands] raw values, Valid[r*Cols+c] false for nodata pixels
// (nil: all valid).
type Scene struct {
	Rows, Cols, Bands int
	Data              []float32
	Valid             []bool
}

func (s Scene) valid(i int) bool { return s.Valid == nil || s.Valid[i] }

// Input turns one pixel's raw spectrum into the network's input channels,
// one per band: the per-band stretch (Stretch01 with Lo and Scale, then
// Quantize01 with Levels), vectorised in the stage, or, where Add is set,
// what Add adds to a zeroed row (the model's other input modes).
type Input struct {
	Lo, Scale []float32
	Levels    int
	Add       func(dst, src []float32)
}

// Cells is the stage's output grid for the current scene: the floor of its
// rows and columns over Stride.
func (f *FullRes) Cells() (rows, cols int) { return f.hs, f.ws }

// Stretch01 is v stretched with lo and scale and clipped to [0,1] (NaN: 0).
func Stretch01(v, lo, scale float32) float32 {
	x := (v - lo) * scale
	if !(x >= 0) { // also NaN
		return 0
	}
	return min(x, 1)
}

// Quantize01 maps x in [0,1] to levels evenly spaced values, truncating:
// floor(x (levels-1)) / (levels-1), what MambaHSI's cast of 255 x to 8 bits
// and back does for levels = 256 (Config.InputLevels); x as it is for
// levels < 2.
func Quantize01(x float32, levels int) float32 {
	if levels < 2 {
		return x
	}
	n := float32(levels - 1)
	return float32(math.Floor(float64(x*n))) / n
}
