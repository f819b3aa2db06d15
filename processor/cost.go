package processor

import (
	"math"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/resources"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/tiling"
)

// MemoryModel is the planner's model of a classify process's peak resident
// memory. Its coefficients are measured: `go run ./bench/cmd/calibrate`
// runs pnec classify on generated scenes of several shapes and fits them
// (see calibration.go, which it rewrites). Rerun it whenever the network or
// the pipeline's buffers change.
//
// The peak of a run with tiles of tr x tc pixels, b bands, k output
// channels per pixel (classes, or twice that with a spectral reliability)
// and a scene sceneCols wide is
//
//	BaseBytes + block cache + strip scratch + Headroom * live
//	live = ReadBytesPerSample  * tr*tc*b                  (read blocks in flight)
//	     + NetworkFactor       * model.EstimatePredictBytes(tr, tc)
//	     + OutputBytesPerValue * tr*tc*(k+2)              (predictions in flight)
//	     + CanvasBytesPerValue * stripeRows*sceneCols*(k+2)
//	     + FullResBytesPerValue * tr*tc*hidden            (paper encoder only)
//
// where the block cache is what GDAL needs for one row of the scene's
// blocks across a tile (BlockCacheBytes; reserved with
// resources.Reserve), the strip scratch geo's band-sequential read
// buffer (StripScratchBytes), and Headroom is the Go heap's growth over its live
// data under the memory limit the run sets (resources.Reserve).
type MemoryModel struct {
	BaseBytes           int64   // the process with its model loaded, before any tile
	ReadBytesPerSample  float64 // per input sample (pixel x band) of a tile
	NetworkFactor       float64 // times model.EstimatePredictBytes of a tile
	OutputBytesPerValue float64 // per tile output value
	CanvasBytesPerValue float64 // per canvas value (stripe rows x scene columns x channels)
	// FullResBytesPerValue is per tile pixel and hidden channel of a model
	// whose encoder works at full resolution (model.EncoderPaper), which
	// model.Model.EstimatePredictBytes (made for the cell encoder) leaves out.
	FullResBytesPerValue float64
	Headroom             float64 // Go heap over live data
}

// BlockCacheBytes is the GDAL block cache a tile tileCols wide needs when
// read in strips of block rows (geo.Scene.ReadWindow): one row of blocks
// across the tile plus one, every band (a pixel-interleaved file decodes
// all bands of a block at once). Blocks are taken as at least 256 x 256:
// a VRT reports its own 128 x 128 blocks over sources of larger ones.
func BlockCacheBytes(info geo.Info, tileCols int) int64 {
	bw, bh := max(info.BlockCols, 256), max(info.BlockRows, 256)
	sb := int64(max(info.SampleBytes, 1))
	across := int64((min(tileCols, info.Cols)+bw-1)/bw + 1)
	return across*int64(bw)*int64(bh)*int64(max(info.Bands, 1))*sb + 16<<20
}

// chunkCacheBytes is what decoding a multidimensional scene's chunks holds
// for a tile tileCols wide (0 for other scenes): a read of any value of a
// chunk decodes it whole, and the chunks one row of a tile's reads spans,
// across the tile (plus one where it straddles a chunk edge) and down the
// bands, are read again by the next strip, so the chunk cache must hold
// them all. GDAL's block size for such a scene is not the chunk
// (BlockCols x BlockRows are a read's strip there), so the block terms
// missed it: an AVIRIS-3 NetCDF of 1 GiB chunks passed --max-memory 1.5G
// and peaked at 2.15 GB.
func chunkCacheBytes(info geo.Info, tileCols int) int64 {
	ch := info.Chunks
	if ch.Bytes <= 0 {
		return 0
	}
	cw, nb := max(ch.Cols, 1), max(ch.Bands, 1)
	span := min(tileCols, info.Cols)
	across := min((span+cw-1)/cw+1, (info.Cols+cw-1)/cw)
	down := (max(info.Bands, 1) + nb - 1) / nb
	return int64(across) * int64(down) * ch.Bytes
}

// decodeBytes is the C memory GDAL's decoding holds outside the block
// cache and the Go heap: each decoding thread (GDAL_NUM_THREADS, all cores
// by default, at most 4 counted) reads a compressed block and decodes it
// whole, every band of a pixel-interleaved file, into buffers of its own.
// Measured: a 10,000 x 10,000 x 200 Int16 scene of 256 x 256 DEFLATE blocks
// peaked at 4.41 GB under a 4G budget without this term (26 MB decoded and
// about 21 MB compressed per block, 2 threads).
func decodeBytes(info geo.Info) int64 {
	bw, bh := max(info.BlockCols, 256), max(info.BlockRows, 256)
	if bw > info.Cols {
		bw = info.Cols
	}
	block := int64(bw) * int64(bh) * int64(max(info.Bands, 1)) * int64(max(info.SampleBytes, 1))
	return 2 * block * int64(min(geo.DecodeThreads(), 4))
}

// sceneCost is the calibrated memory model's estimate, bytes, of running a
// plan on a scene of info's shape through m (nil: a generic network) with
// opts: planBytes is the planned peak that PlannedBytes reports and the
// budget is checked against (it decides how many tiles are in flight).
type sceneCost struct {
	mm      MemoryModel
	info    geo.Info
	bands   int
	depth   int // output channels per pixel: classes (x2 with training spectra) + 2
	network func(rows, cols int) int64
	fullRes int // hidden channels of a full-resolution encoder, 0 for the cell encoder
	// probHeap and probCache are what the class probabilities output adds
	// (probabilityMemoryBytes): Go heap, and GDAL block cache for its stage.
	probHeap, probCache int64
	// write is the C memory of compressing the COG's tiles beyond the
	// default tiles' (geo.ProductWriteBytes: a large BLOCKSIZE creation
	// option holds several whole tiles).
	write  int64
	window int // the recovery window, pixels: the canvas stripe's halo
}

func newSceneCost(info geo.Info, m *model.Model, opts Options) *sceneCost {
	c := &sceneCost{mm: Calibrated, info: info, bands: info.Bands, depth: genericClasses + 2, window: recoveryWindow(m),
		network: func(r, c int) int64 { return int64(r) * int64(c) * genericNetworkBytesPerPixel }}
	if m != nil {
		c.bands = m.Bands()
		k := len(m.Classes())
		depth := k
		if _, ref, err := spectralReference(m, opts, nil); err == nil && ref != nil {
			depth += k
		}
		if m.Decision().Fused() {
			depth += k // the decision reference's distances
		}
		c.depth = depth + 2
		c.network = m.EstimatePredictBytes
		if cfg := m.Config(); cfg.Encoder == model.EncoderPaper {
			c.fullRes = cfg.Hidden
		}
		c.probHeap, c.probCache = probabilityMemoryBytes(info.Cols, probabilityBands(opts, len(m.Classes())), productClassBytes(m))
	}
	// Invalid options are refused before (geo.CheckCreationOptions).
	c.write, _ = geo.ProductWriteBytes(geo.ProductSpec{Cols: info.Cols, Rows: info.Rows, Classes: productClasses(m),
		ReliabilityFloat32: opts.ReliabilityFloat32, CreationOptions: opts.CreationOptions})
	return c
}

// productClasses are m's classes as a product describes them (nil for a nil model).
func productClasses(m *model.Model) []geo.ClassInfo {
	if m == nil {
		return nil
	}
	classes := m.Classes()
	ci := make([]geo.ClassInfo, len(classes))
	for i, k := range classes {
		ci[i] = geo.ClassInfo{Value: k.Value, Name: k.Name, Color: k.Color}
	}
	return ci
}

// FullResValues is the full-resolution encoder feature of the memory model
// for a tile of tr x tc pixels through m: tr*tc*hidden for a paper-encoder
// model, 0 otherwise.
func FullResValues(m *model.Model, tr, tc int) float64 {
	if m == nil || m.Config().Encoder != model.EncoderPaper {
		return 0
	}
	return float64(tr) * float64(tc) * float64(m.Config().Hidden)
}

// StitchAhead is how many finished tiles' network outputs may wait for the
// stitcher while it finalises a tile row (runStages), beside the tiles in
// flight: enough to keep the network busy through a row's finalisation.
const StitchAhead = 2

// waitingBytes is what the finished tiles waiting for the stitcher hold
// (StitchAhead of them; none when one tile covers the scene): each tile's
// network outputs, float32 values of depth channels a pixel. Not part of
// the calibration's fit: added after it, at its exact size.
func (c *sceneCost) waitingBytes(tr, tc int) float64 {
	if tr >= c.info.Rows && tc >= c.info.Cols {
		return 0
	}
	return StitchAhead * 4 * float64(tr) * float64(tc) * float64(c.depth)
}

// live is the data a run with inFlight tiles in flight on the host holds
// at its peak, bytes (see MemoryModel, whose read term is measured with
// tiling.MaxInFlight: each tile fewer holds one tile's samples less).
func (c *sceneCost) live(tr, tc, sceneCols, stripeRows, inFlight int) float64 {
	tpx := float64(tr) * float64(tc)
	return c.mm.ReadBytesPerSample*tpx*float64(c.bands) +
		float64(inFlight-tiling.MaxInFlight)*tpx*float64(4*c.bands+1) +
		c.mm.NetworkFactor*float64(c.network(tr, tc)) +
		c.mm.OutputBytesPerValue*tpx*float64(c.depth) +
		c.waitingBytes(tr, tc) +
		c.mm.CanvasBytesPerValue*float64(stripeRows)*float64(sceneCols)*float64(c.depth) +
		c.mm.FullResBytesPerValue*tpx*float64(c.fullRes) +
		c.carryBytes(tr, tc) + float64(c.probHeap)
}

// carryBytes is what carrying block columns between horizontal neighbours
// adds to a tile's read (see carryReader): the read buffer up to a block
// wider, and the carry kept for the next tile; float32 samples. Not part
// of the calibration's fit: it was added after, at its exact size.
func (c *sceneCost) carryBytes(tr, tc int) float64 {
	cc := carryColumns(c.info, tc)
	if cc == 0 {
		return 0
	}
	return 4 * float64(tr) * float64(cc+carryBlockCols(c.info)) * float64(c.bands)
}

func (c *sceneCost) total(tr, tc, sceneCols, stripeRows, inFlight int) int64 {
	return c.mm.BaseBytes + BlockCacheBytes(c.info, tc) + chunkCacheBytes(c.info, tc) + c.probCache + decodeBytes(c.info) + StripScratchBytes(c.info, tc) + c.write +
		VRTSourcesBytes(c.info) + int64(math.Ceil(c.mm.Headroom*c.live(tr, tc, sceneCols, stripeRows, inFlight)))
}

// outputBytes is what one more tile's network outputs hold on the host
// (probabilities, uncertainty and class distances: the live term's
// outputs), bytes: a second call in flight on the device (Flight).
func (c *sceneCost) outputBytes(p tiling.Plan) int64 {
	return int64(math.Ceil(c.mm.Headroom * c.mm.OutputBytesPerValue * float64(p.TileRows) * float64(p.TileCols) * float64(c.depth)))
}

// planBytes is the peak of running plan p with inFlight tiles in flight
// on the host: tiles of p's network input shape (padded to the ladder),
// and a canvas stripe of the whole scene for a whole-image plan, else a
// tile row with its overlap and the recovery halo.
func (c *sceneCost) planBytes(p tiling.Plan, inFlight int) int64 {
	stripe := p.Rows
	if !p.Whole {
		stripe = min(p.TileRows+p.Overlap+2*c.window, c.info.Rows)
	}
	return c.total(p.TileRows, p.TileCols, p.Cols, stripe, inFlight)
}

// vrtSourceBytes is what GDAL holds for each source of an open VRT
// (geo.Info.VRTSources), outside the Go heap and the block cache. Measured
// with pnec tiles (which opens the scene and reads no pixel) on generated
// mosaics of one 64 x 64 Int16 file: 552 sources in each of 200 bands
// peaked at 444 MB against 69 MB for one source a band, 3.4 KB a source.
const vrtSourceBytes = 3500

// VRTSourcesBytes is the memory an open VRT's sources take (0 for other
// drivers): a mosaic of 552 sources a band over 200 bands is about 390 MB,
// which the plan missed before (peaks 5-8% over --max-memory).
func VRTSourcesBytes(info geo.Info) int64 { return vrtSourceBytes * int64(info.VRTSources) }

// StripScratchBytes is geo.Scene's band-sequential buffer for one strip of
// a tile tileCols wide (float32 samples, a block row high; see
// geo.Scene.ReadWindow).
func StripScratchBytes(info geo.Info, tileCols int) int64 {
	return int64(min(tileCols, info.Cols)) * int64(max(info.BlockRows, 16)) * int64(max(info.Bands, 1)) * 4
}

// run is the run's share of the process's memory settings for a plan
// within budget on backend (applied by resources.Reserve): the parts of the
// budget the Go heap must leave (the base process, the block cache, GDAL's
// decoding and the writer's buffers, an open VRT's sources), the network's
// buffers, and the block cache its reads need.
func (c *sceneCost) run(budget int64, plan tiling.Plan, backend backend.Backend) resources.Run {
	cache := BlockCacheBytes(c.info, plan.TileCols)
	return resources.Run{
		BudgetBytes:     budget,
		OffHeapBytes:    c.mm.BaseBytes + cache + chunkCacheBytes(c.info, plan.TileCols) + c.probCache + decodeBytes(c.info) + c.write + VRTSourcesBytes(c.info),
		NetworkBytes:    int64(c.mm.NetworkFactor * float64(c.network(plan.TileRows, plan.TileCols))),
		NetworkOnGoHeap: backend.NetworkOnGoHeap(),
		BlockCacheBytes: cache + c.probCache,
	}
}

// backendOf is the described backend of p: model.Predictor's own
// description, else its name parsed (a name that does not parse, such as a
// test's network, describes no backend: off the Go heap).
func backendOf(p predictor) backend.Backend {
	if d, ok := p.(interface{ Describe() backend.Backend }); ok {
		return d.Describe()
	}
	b, _ := backend.Parse(p.Backend())
	return b
}
