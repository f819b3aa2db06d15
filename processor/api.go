package processor

// NOTE: contract file written first so that other packages can compile
// against it; the classify implementation replaces the stub bodies.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/pnec/pnec/model"
)

var errStub = errors.New("processor: not implemented yet")

// Options tune a Classifier. Zero values mean the documented defaults.
type Options struct {
	Backend            string                // "" = default backend (see model.NewPredictor)
	MaxMemoryBytes     int64                 // memory budget for planning; 0 = a fraction of physical memory
	TileSize, Overlap  int                   // pixels; TileSize > 0 forces tiling with these
	CreationOptions    []string              // COG creation options KEY=VALUE overriding defaults
	ReliabilityFloat32 bool                  // write reliability as Float32 0..1 instead of Byte percent
	Progress           func(done, total int) // tiles done of total; may be nil
	Logger             *slog.Logger          // nil = discard
}

// StageTimes is where a scene's time went.
type StageTimes struct {
	Read, Network, Stitch, Write time.Duration
}

// Result describes one classified scene.
type Result struct {
	Scene, Product string
	Rows, Cols     int
	Tiles          int // 1 for a whole-image run
	ValidPixels    int64
	ClassCounts    map[int]int64 // class value -> pixels
	Times          StageTimes
	Backend        string
	ModelChecksum  string
}

// Classifier applies one loaded model to scenes.
type Classifier struct{}

// NewClassifier prepares m for classification with opts.
func NewClassifier(m *model.Model, opts Options) (*Classifier, error) { return nil, errStub }

// Classify reads the scene named scene (any GDAL dataset name), classifies it and writes the COG product to out atomically.
func (c *Classifier) Classify(ctx context.Context, scene, out string) (Result, error) {
	return Result{}, errStub
}

// Close releases the backend.
func (c *Classifier) Close() error { return nil }
