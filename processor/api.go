package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/spectral"
	"github.com/pnec/pnec/tiling"
)

// Options tune a Classifier. Zero values mean the documented defaults.
type Options struct {
	// Backend names the compute backend ("go", "xla:cuda",
	// "xla:/abs/plugin.so[,options]"); "" is backend.Decide's choice for
	// the first scene the Classifier runs, from its pixels, made once by
	// that Run: GOMLX_BACKEND when set, else XLA where a PJRT plugin is
	// installed and the scene is large enough to repay the compilation,
	// else the pure-Go backend (docs/backends.md). pnec batch names the
	// backend it decided for the batch's scenes.
	Backend string
	// MaxMemoryBytes is the memory budget the run holds to, bytes; 0 = the
	// default (half of the memory the process may use, physical or its
	// cgroup limit, at most 80% of what was available when the process
	// started: the one rule of internal/resources/memory.Budget), negative
	// is refused. It decides how
	// many tiles are in flight, never the plan (and so never the map); one
	// that cannot hold one tile is refused with a *BudgetError.
	MaxMemoryBytes int64
	// TileSize > 0 gives a grid of tiles of this side, pixels (rounded up
	// to model.Stride), and so another map than the model's; 0 = the
	// model's grid (the whole image up to CanonicalTile a side, else tiles
	// of that side).
	TileSize int
	// Overlap between neighbouring tiles, as tiling.Options.Overlap:
	// tiling.OverlapAuto (0, tiling.DefaultOverlap for the tile size),
	// tiling.OverlapNone (negative: tiles cropped edge to edge, which shows
	// seams), or pixels (rounded up to model.Stride).
	Overlap int
	// CreationOptions are COG creation options KEY=VALUE overriding geo's defaults.
	CreationOptions []string
	// ReliabilityFloat32 writes the reliability band as Float32 0..1 (NaN
	// nodata) instead of Byte percent (255 nodata).
	ReliabilityFloat32 bool
	// NoThumbnail leaves out the product's thumbnail (geo.ThumbnailPath,
	// KEY.thumbnail.png), which is otherwise written beside it.
	NoThumbnail bool
	// Reliability is the score the reliability band carries; see
	// model.ReliabilityKind. "" = model.DefaultReliability when the model
	// file holds the training spectra, else model.FallbackReliability (with
	// a log line). A spectral kind asked of a model without them fails with
	// model.ErrNoSpectralReference.
	Reliability model.ReliabilityKind
	// ResampleBands computes the model's bands from a scene whose bands are
	// not the model's (Gaussian spectral response functions, see
	// model.Model.BandPlan) instead of refusing it.
	ResampleBands bool
	// Radiometry says what a scene's values measure when the scene does
	// not say (a plain GeoTIFF); a scene's own statement wins.
	Radiometry spectral.Radiometry
	// ProductQualityMasks applies the quality masks each scene's product
	// delivers (geo.Scene.UseProductQualityMasks: EnMAP's pixel and cloud
	// masks, EMIT's mask file, ...): their flagged pixels become no-data. A
	// scene whose product delivers none fails.
	ProductQualityMasks bool
	// QualityMasks are quality mask rasters on the scene's grid applied to
	// every scene (geo.Scene.AddQualityMask): pixels non-zero in any of a
	// mask's bands become no-data. They combine with Mask (the area of
	// interest): a pixel is classified inside Mask where no quality mask
	// flags it.
	QualityMasks []QualityMask
	// Probabilities, when not ProbabilitiesOff, also writes the class
	// probabilities of that stage beside the product
	// (geo.ProbabilitiesPath): one band per class, or with TopK > 0 the
	// TopK most probable classes of each pixel as (class, probability)
	// band pairs; percent 0-100 with the product's no-data.
	Probabilities ProbabilityStage
	// TopK is the number of classes the probabilities keep per pixel
	// (0 = every class as a band); needs Probabilities.
	TopK int
	// Logger receives the plan and stage timings; nil = discard.
	Logger *slog.Logger
	// DriftCheck, when set, is called with the scene's drift (Result.Drift)
	// after the last row and before the product is committed: an error stops
	// the product from being written (nothing changes at the output path)
	// and Run returns it. Not called for a model without drift
	// statistics.
	DriftCheck func(drift.Report) error
}

// QualityMask is a quality mask raster for Options.QualityMasks.
type QualityMask struct {
	Path  string // any GDAL dataset name, or a product's mask file pnec reads
	Bands []int  // 0-based bands that flag pixels; nil: band 1
}

// tileProgress is a running classification's state after a tile.
type tileProgress struct {
	Tile, Tiles       int           // tiles stitched, of the plan's
	Pixels, PixelsAll int64         // scene pixels done (the stitched tiles' cores), of the scene's
	Elapsed           time.Duration // since Run started
}

// PixelsPerSecond is the rate so far.
func (p tileProgress) PixelsPerSecond() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Pixels) / p.Elapsed.Seconds()
}

// ETA is the time left at the rate so far (0 when unknown or done).
func (p tileProgress) ETA() time.Duration {
	r := p.PixelsPerSecond()
	if r <= 0 || p.Pixels >= p.PixelsAll {
		return 0
	}
	return time.Duration(float64(p.PixelsAll-p.Pixels) / r * float64(time.Second))
}

// String is the progress in one line: "tile 3/64, 12.5 of 100.0 Mpx (12.5%), 48.2 kpx/s, ETA 30m15s".
func (p tileProgress) String() string {
	s := fmt.Sprintf("tile %d/%d, %s of %s px (%.1f%%), %s px/s", p.Tile, p.Tiles,
		SI(float64(p.Pixels)), SI(float64(p.PixelsAll)), 100*float64(p.Pixels)/float64(max(p.PixelsAll, 1)), SI(p.PixelsPerSecond()))
	if eta := p.ETA().Round(time.Second); eta > 0 {
		s += ", ETA " + eta.String()
	}
	return s
}

// event is p as the progress event of scene: pixels done of the scene's,
// tiles as the parts.
func (p tileProgress) event(scene string) progress.Event {
	return progress.Event{Stage: "classify", Subject: scene, Done: p.Pixels, Total: p.PixelsAll, Unit: "px",
		Part: p.Tile, Parts: p.Tiles, Elapsed: p.Elapsed, ETA: p.ETA(), Message: p.String()}
}

// SI writes v with an SI prefix: "950", "48.2k", "12.5M", "1.0G".
func SI(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.1fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// PixelsPerSecond is the scene's pixels over the wall time of Run.
func (r Result) PixelsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Rows) * float64(r.Cols) / r.Elapsed.Seconds()
}

// Shares are the stage times as fractions of the wall time (they overlap,
// so they may add up to more than 1).
func (r Result) Shares() (read, network, stitch, write float64) {
	w := r.Elapsed.Seconds()
	if w <= 0 {
		return
	}
	t := r.Times
	return t.Read.Seconds() / w, t.Network.Seconds() / w, t.Stitch.Seconds() / w, t.Write.Seconds() / w
}

// StageTimes is where a scene's time went. The stages overlap in wall time
// (they run concurrently), so their sum may exceed Result.Elapsed.
type StageTimes struct {
	Read    time.Duration // reading tiles through GDAL (and padding them)
	Network time.Duration // the network on every tile (compilation included)
	Stitch  time.Duration // blending, recovery, argmax and reliability
	Write   time.Duration // streaming rows and finishing the COG
}

// Result describes one classified scene.
type Result struct {
	Scene, Product string
	Rows, Cols     int
	Tiles          int    // 1 for a whole-image run
	Plan           string // the plan in words (tiling.Plan.String)
	TileRows       int    // network input shape, pixels
	TileCols       int
	Overlap        int           // pixels; 0 for a whole-image run
	ValidPixels    int64         // pixels with data, classified
	ClassCounts    map[int]int64 // class value -> pixels
	Times          StageTimes    // per-stage busy time
	Elapsed        time.Duration // wall time of Run
	Backend        string        // backend that ran the network
	ModelChecksum  string        // model.Model.Checksum
	MaxMemoryBytes int64         // budget the plan was made for
	PlannedBytes   int64         // the memory model's peak estimate for the plan with Flight's tiles in flight
	Flight         tiling.Flight // tiles in flight on the host and on the device, as the budget and the device decided
	// SceneInfo is the scene as geo opened it (metadata, georeference), so
	// that a caller need not open it again.
	SceneInfo geo.Info
	// Stats are the product's stored pixels as its writer saw them: class
	// counts and reliability statistics, without reading the product back.
	Stats geo.ProductStats
	// Bands says how the model's bands were made from the scene's: a
	// selection, a resampling or every band as it is (spectral.Plan).
	Bands string
	// QualityMasks names the quality masks applied to the scene ("" when
	// none).
	QualityMasks string
	// Warnings are what classifying the scene assumed or converted (a
	// scene without wavelengths taken band for band, a reflectance scale
	// converted), one sentence each; they are also logged.
	Warnings []string
	// Mask is the area of interest the scene was classified in ("" =
	// none), MaskPixels the scene's pixels inside it and TilesSkipped the
	// tiles wholly outside it, which were neither read nor run.
	Mask         string
	MaskPixels   int64
	TilesSkipped int
	// Drift is how far the scene is from the model's training scene, with
	// the verdict (also in the product's metadata); nil for a model without
	// drift statistics.
	Drift *drift.Report
	// StaleTemporaries is how many temporaries of an earlier, killed run
	// of the same output Run removed before writing (lockOutput).
	StaleTemporaries int
}

// predictor is what Run needs of model.Predictor; tests substitute
// networks without spatial context to check the tiling exactly.
type predictor interface {
	Predict(ctx context.Context, s model.Scene) (model.Prediction, error)
	Backend() string
	Close() error
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("classifier is closed")

// Classifier applies one loaded model to scenes. It keeps one predictor (and
// its compiled executables) across scenes, so classifying many scenes of the
// same size compiles the network once. A Classifier runs one scene at a
// time; use several Classifiers for concurrent scenes.
type Classifier struct {
	m    *model.Model
	opts Options
	pred predictor
	log  *slog.Logger
	kind model.ReliabilityKind
	ref  *model.SpectralReference // training spectra; nil unless kind needs them
	dref *model.SpectralReference // the fused decision's reference; nil for the network's decision
	// busy is held by Run and Close: one scene at a time, and pred is
	// read and cleared only while it is held.
	busy    chan struct{}
	backend string // pred.Backend(), kept for Backend after Close
	closed  bool   // Close ran: pred is gone and no Run opens another
}

// NewClassifier prepares m for classification with opts.
func NewClassifier(m *model.Model, opts Options) (*Classifier, error) {
	if m == nil {
		return nil, errors.New("processor: nil model")
	}
	if opts.TileSize < 0 {
		return nil, fmt.Errorf("processor: tile size %d px: must be 0 (automatic) or positive", opts.TileSize)
	}
	if opts.MaxMemoryBytes < 0 {
		return nil, fmt.Errorf("processor: memory budget %d bytes: must be 0 (default) or positive", opts.MaxMemoryBytes)
	}
	if err := m.Recovery().Validate(); err != nil {
		return nil, fmt.Errorf("processor: model: %w", err)
	}
	if err := checkTile(opts, recoveryWindow(m)); err != nil {
		return nil, err
	}
	if err := checkProbabilities(opts, len(m.Classes())); err != nil {
		return nil, fmt.Errorf("processor: %w", err)
	}
	if err := geo.CheckCreationOptions(opts.CreationOptions, productClasses(m), opts.ReliabilityFloat32); err != nil {
		return nil, fmt.Errorf("processor: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	kind, ref, err := spectralReference(m, opts, log)
	if err != nil {
		return nil, fmt.Errorf("processor: %w", err)
	}
	dref, err := m.DecisionReference()
	switch {
	case errors.Is(err, model.ErrNoSpectralReference):
		// A file stripped of its training spectra: the network decides.
		log.Warn("the model's fused decision needs its training spectra, which its file does not hold: the network decides alone")
	case err != nil:
		return nil, fmt.Errorf("processor: fused decision: %w", err)
	}
	c := &Classifier{m: m, opts: opts, log: log, kind: kind, ref: ref, dref: dref, busy: make(chan struct{}, 1)}
	if opts.Backend == "" {
		// The default is decided by the first Run, for its scene's pixels
		// (openDefaultPredictor); until then Backend names what a job of
		// unknown size would get.
		b, err := backend.Decide("", backend.Job{})
		if err != nil {
			return nil, fmt.Errorf("processor: default backend: %w", err)
		}
		c.backend = b.Label()
		return c, nil
	}
	if err := c.openPredictor(opts.Backend); err != nil {
		return nil, err
	}
	return c, nil
}

// openPredictor opens the predictor on the backend name names.
func (c *Classifier) openPredictor(name string) error {
	pred, err := model.NewPredictor(c.m, name)
	if err != nil {
		return fmt.Errorf("processor: prepare backend %q: %w", name, err)
	}
	c.pred, c.backend = pred, pred.Backend()
	return nil
}

// openDefaultPredictor opens the predictor a Classifier whose Options name
// no backend runs on: the backend backend.Decide chooses for classifying
// a scene of info's pixels, decided once, on the first Run (a Classifier
// keeps its predictor across scenes).
func (c *Classifier) openDefaultPredictor(info geo.Info) error {
	b, err := backend.Decide("", backend.Job{Task: backend.TaskClassify, Pixels: int64(info.Rows) * int64(info.Cols)})
	if err != nil {
		return fmt.Errorf("processor: default backend: %w", err)
	}
	return c.openPredictor(b.Name)
}

// spectralReference resolves the reliability kind of m's products and the
// training spectra the products need: for a spectral kind, and for the
// drift figures of a model with drift statistics whatever the kind.
func spectralReference(m *model.Model, opts Options, log *slog.Logger) (model.ReliabilityKind, *model.SpectralReference, error) {
	kind, ref, err := m.ResolveReliability(opts.Reliability, log)
	if err != nil {
		return "", nil, err
	}
	if ref == nil && m.HasDriftStats() {
		if r, err := m.SpectralReference(); err == nil && r.Bands() == m.Bands() {
			ref = r
		}
	}
	return kind, ref, nil
}

// Backend names the backend the network runs on. For a Classifier whose
// Options name no backend it is decided by the first Run, for that
// scene's pixels; before it, Backend names the backend a job of unknown
// size gets.
func (c *Classifier) Backend() string { return c.backend }

// Request is one scene to classify: Classifier.Run reads Scene (any GDAL
// dataset name), classifies it within Mask and writes the COG product to
// Out. The Classifier's Options apply to every request: they fix the
// predictor it keeps across scenes.
type Request struct {
	Scene string
	// Mask, when set, is an area of interest: only pixels inside it (a
	// raster, non-zero inside, or a vector file OGR reads; any CRS,
	// reprojected to the scene's: geo.OpenMask) are classified, the rest
	// of the product is no-data, and tiles wholly outside it are neither
	// read nor run. "" classifies the whole scene.
	Mask string
	Out  string
	// Keep names other files of the run (the model file) that Run's sweep
	// of the output's stale temporaries must never remove, whatever their
	// names and through any link, and that no output may be (RoleKept);
	// the scene, the mask and the quality masks are kept without being
	// named here.
	Keep []string
	// SceneCheck, when set, is called with the scene as Run opened it,
	// before anything is planned, read or written: an error it returns
	// ends the run with nothing written (pnec batch refuses there a scene
	// whose Item would have no acquisition time), so that a caller need
	// not open the scene itself.
	SceneCheck func(geo.Info) error
	// LockHeld says that the caller holds the output's lock and swept its
	// stale temporaries itself (pnec batch, which locks a scene's product
	// before it decides whether to run the scene): Run then takes neither.
	LockHeld bool
	// Progress, when set, is called after every tile is stitched (from
	// the stitching goroutine) with an Event of Stage "classify": the
	// scene's pixels done (Unit "px"), its tiles as the parts, the time
	// left, and the state in one line as the Message.
	Progress progress.Func
}

// Run classifies req.Scene and writes its product to req.Out atomically:
// req.Out is replaced only by a complete product, and a failed or
// cancelled run leaves no partial file. It holds the Classifier (one scene
// at a time, and Close waits) before it looks at the predictor, which
// Close clears under the same hold.
func (c *Classifier) Run(ctx context.Context, req Request) (Result, error) {
	select {
	case c.busy <- struct{}{}:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { <-c.busy }()
	if c.closed {
		return Result{}, ErrClosed
	}
	if err := c.checkRequest(req); err != nil {
		return Result{Scene: req.Scene, Product: req.Out, Backend: c.backend, Mask: req.Mask}, err
	}
	stale := 0
	if !req.LockHeld {
		lock, n, err := c.lockOutput(req)
		if err != nil {
			return Result{Scene: req.Scene, Product: req.Out, Backend: c.backend, Mask: req.Mask}, err
		}
		if lock != nil {
			defer lock.Release()
		}
		stale = n
	}
	res, err := c.classify(ctx, req)
	res.StaleTemporaries = stale
	return res, err
}

// lockOutput takes the lock pnec batch takes for a product (the same file
// beside it, so that two processes never write one product at once) on a
// local output, and removes the temporaries a killed earlier run of the
// same output left (staging files, its lock): with the lock free their
// writer is gone. It never removes an input of the run (the scene, the
// mask, a quality mask, req.Keep), whatever its name. An output GDAL
// writes remotely (/vsi...) has no lock: nil.
func (c *Classifier) lockOutput(req Request) (*tempfiles.Lock, int, error) {
	out := req.Out
	if strings.HasPrefix(out, "/vsi") {
		return nil, 0, nil
	}
	dir, base := filepath.Split(out)
	if dir == "" {
		dir = "."
	}
	key := strings.TrimSuffix(base, ".tif")
	lock, err := tempfiles.TryLock(dir, key)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", out, err)
	}
	var keep samefile.Set
	keep.Add(samefile.Named{Path: req.Scene})
	if req.Mask != "" {
		keep.Add(samefile.Named{Path: req.Mask})
	}
	for _, qm := range c.opts.QualityMasks {
		keep.Add(samefile.Named{Path: qm.Path})
	}
	for _, p := range req.Keep {
		keep.Add(samefile.Named{Path: p})
	}
	n, err := tempfiles.RemoveTemps(dir, key, keep.Has)
	if err != nil {
		lock.Release()
		return nil, 0, fmt.Errorf("%s: remove stale temporary files: %w", out, err)
	}
	if n > 0 {
		c.log.Info("removed stale temporary files", "output", out, "files", n)
	}
	return lock, n, nil
}

// Close releases the backend, after the Run in progress (if any)
// returns. It is safe to call more than once, and from another goroutine.
func (c *Classifier) Close() error {
	c.busy <- struct{}{}
	defer func() { <-c.busy }()
	c.closed = true
	if c.pred == nil {
		return nil
	}
	err := c.pred.Close()
	c.pred = nil
	return err
}
