package processor

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/model"
)

// Sentinel errors of Run for scenes it refuses; callers (pnec batch)
// branch on them with errors.Is. The returned errors name the scene.
var (
	// ErrNoValidPixels: every pixel of the scene is nodata, NaN, Inf or masked.
	ErrNoValidPixels = errors.New("no valid pixels: every pixel is nodata, NaN or Inf")
	// ErrNoSignal: every valid pixel is 0 in every band, which almost always
	// means a nodata value the scene does not declare; the map would be noise.
	ErrNoSignal = errors.New("nothing to classify")
	// ErrNoSpace: the output file system cannot hold the product.
	ErrNoSpace = errors.New("not enough free disk space")
)

// productClassBytes is the sample size of m's products, bytes: Byte,
// or UInt16 for more than 254 classes or a class value over 254.
func productClassBytes(m *model.Model) int {
	classes := m.Classes()
	maxV := 0
	for _, k := range classes {
		maxV = max(maxV, k.Value)
	}
	if len(classes) > 254 || maxV > 254 {
		return 2
	}
	return 1
}

// checkSpace refuses, before any work, a scene whose product cannot fit in
// the free space of out's file system: geo.ProductDiskBytes of the product
// spec describes, a lower bound of what writing it holds on disk at its
// peak (the uncompressed stage in whole tiles, its overviews, the Float32
// stage), so no scene that could fit is refused; one that cannot fails in
// milliseconds instead of after GDAL has run out of space hours into a
// run. A file system that cannot be queried (a missing directory, which
// creating the product reports) is not checked.
func checkSpace(scene, out string, spec geo.ProductSpec) error {
	need, err := geo.ProductDiskBytes(spec)
	if err != nil {
		return err
	}
	dir := filepath.Dir(out)
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return nil
	}
	free := int64(fs.Bavail) * int64(fs.Bsize)
	if need > free {
		return fmt.Errorf("%s: %dx%d pixels (cols x rows): its product %s needs at least %s while written, %s has %s free: %w",
			scene, spec.Cols, spec.Rows, filepath.Base(out), memory.FormatBytes(need), dir, memory.FormatBytes(free), ErrNoSpace)
	}
	return nil
}

// signalCheck watches the tiles as they are read for the two kinds of
// scene that cannot give a map: no valid pixel at all, or valid pixels that
// are 0 in every band (an integer scene whose nodata 0 is not declared).
// The verdict needs every tile, so it is given when the last one is read,
// before it goes to the network: a whole-image run never starts the
// network on such a scene, and a tiled one stops there, before the product
// is committed.
type signalCheck struct {
	valid   bool // a valid pixel was seen
	nonZero bool // a valid pixel with a non-zero band was seen
}

// add looks at one read tile; the scan stops at the first non-zero valid
// value, so a normal scene costs a few comparisons per tile.
func (s *signalCheck) add(data []float32, valid []bool, bands int) {
	if s.nonZero {
		return
	}
	for p, ok := range valid {
		if !ok {
			continue
		}
		s.valid = true
		for _, v := range data[p*bands : (p+1)*bands] {
			if v != 0 {
				s.nonZero = true
				return
			}
		}
	}
}

// verdict is nil for a scene with signal, else the error naming it.
func (s *signalCheck) verdict(scene string, info geo.Info) error {
	switch {
	case !s.valid:
		return fmt.Errorf("%s: %w", scene, ErrNoValidPixels)
	case !s.nonZero:
		for _, has := range info.HasNoData {
			if has {
				return fmt.Errorf("%s: every valid pixel is 0 in all bands: %w (check the input and its nodata value)", scene, ErrNoSignal)
			}
		}
		return fmt.Errorf("%s: every pixel is 0 in all bands and the scene sets no nodata: %w (set nodata or check the input)", scene, ErrNoSignal)
	}
	return nil
}
