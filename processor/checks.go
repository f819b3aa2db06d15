package processor

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/spectral"
	"github.com/pnec/pnec/tiling"
)

// ErrTileTooSmall: a forced tile (Options.TileSize) leaves no context
// beyond its overlap and the recovery window.
var ErrTileTooSmall = errors.New("tile too small")

// ErrTileTooLarge: a forced tile side or overlap above MaxTileSide.
var ErrTileTooLarge = errors.New("tile too large")

// MaxTileSide is the largest forced tile side or overlap, pixels: GDAL's
// largest raster side (a 32-bit int); a tile at least the scene's size is
// the whole scene, so larger ones mean nothing more, and the planner's
// arithmetic on them would overflow (--tile 9223372036854775807 was
// reported as a tile of -9223372036854775804 px).
const MaxTileSide = math.MaxInt32

// ErrOutputIsInput: a file the product writes is a file the scene reads
// (the scene itself, a sidecar, a VRT's source), through any name, link or
// hard link; Run refuses it before any work, and pipelines.Run a run
// whose outputs include one of its inputs. The error is a
// *samefile.Conflict naming both. (Its one home for the packages above
// processor: samefile is internal.)
var ErrOutputIsInput = samefile.ErrOutputIsInput

// checkNotInput refuses a product at out whose files (geo.ProductFiles)
// include one the scene or a mask reads, before any work: the file itself,
// its sidecars (geo.DatasetFiles) and, for a VRT, its sources at any depth
// of VRTs (geo.VRTFiles; GDAL's own list stops at the first level). Only
// local scenes are listed by GDAL: opening a remote one once more costs
// requests, and its files cannot be a local product's.
func checkNotInput(scene, out string, reliabilityFloat32 bool, masks ...samefile.Named) error {
	if !samefile.Local(out) {
		return nil
	}
	var inputs []samefile.Named
	if samefile.Local(scene) {
		inputs = append(inputs, samefile.Named{Path: scene, Role: RoleScene})
		for _, f := range geo.DatasetFiles(scene) {
			inputs = append(inputs, samefile.Named{Path: f, Role: "a file the scene reads,"})
		}
		inputs = append(inputs, vrtReads(scene, "the scene")...)
	}
	for _, m := range masks {
		if samefile.Local(m.Path) {
			inputs = append(inputs, m)
			inputs = append(inputs, vrtReads(m.Path, m.Role)...)
		}
	}
	paths, roles := geo.ProductFiles(out, reliabilityFloat32)
	outputs := make([]samefile.Named, len(paths))
	for i := range paths {
		outputs[i] = samefile.Named{Path: paths[i], Role: roles[i]}
	}
	return samefile.Check(outputs, inputs)
}

// vrtReads names the local files the VRT name reads at any depth (none
// when it is no VRT), as read by role ("the mask").
func vrtReads(name, role string) []samefile.Named {
	var out []samefile.Named
	for _, f := range geo.VRTFiles(name) {
		out = append(out, samefile.Named{Path: f, Role: "a file " + role + " reads,"})
	}
	return out
}

// ErrBadOutput: the product path cannot be written (a directory, or in a
// directory that does not exist).
var ErrBadOutput = errors.New("unusable output path")

// tileOverlap returns the tile side and overlap, pixels, a forced tile of
// opts runs with (both rounded up to the stride), as the planner makes them.
func tileOverlap(opts Options) (tile, overlap int) {
	tile = tiling.AlignUp(opts.TileSize, model.Stride)
	return tile, tiling.ResolveOverlap(opts.Overlap, tile, model.Stride)
}

// MinTileSize is the smallest forced tile side, pixels, that checkTile
// accepts with opts' overlap and a recovery window of window pixels: the
// tile must hold its overlap plus the window. A smaller tile has no pixel
// whose recovery window lies inside the tile's own context, so every pixel
// of it is blended from tiles that saw almost nothing around it (--tile 3
// ran 462 tiles of 4 x 4 pixels and reported success). The default overlap
// depends on the tile (at most half of it), hence the search.
func MinTileSize(opts Options, window int) int {
	for t := model.Stride; ; t += model.Stride {
		o := opts
		o.TileSize = t
		tile, overlap := tileOverlap(o)
		if overlap < tile && tile >= overlap+window {
			return tile
		}
	}
}

// checkTile refuses, before any work, a forced tile that cannot work with
// m's recovery window (see MinTileSize) or whose overlap is not smaller
// than the tile.
func checkTile(opts Options, window int) error {
	if opts.TileSize > MaxTileSide || opts.Overlap > MaxTileSide {
		return fmt.Errorf("%w: tile %d px, overlap %d px: want at most %d px", ErrTileTooLarge, opts.TileSize, opts.Overlap, MaxTileSide)
	}
	if opts.TileSize <= 0 {
		return nil
	}
	tile, overlap := tileOverlap(opts)
	if overlap >= tile {
		return fmt.Errorf("%w: overlap %d px must be smaller than the tile (%d px)", ErrTileTooSmall, overlap, tile)
	}
	if tile < overlap+window {
		return fmt.Errorf("%w: %d px tiles with %d px overlap leave no context for the %d px recovery window: want tiles of at least %d px (overlap + window), or 0 for automatic",
			ErrTileTooSmall, tile, overlap, window, MinTileSize(opts, window))
	}
	return nil
}

// CheckOutput refuses, before any work, a product path that cannot be
// written: an existing directory, or a path in a directory that does not
// exist (or is not a directory). GDAL virtual paths (/vsi...) are not checked.
func CheckOutput(out string) error {
	if out == "" {
		return fmt.Errorf("%w: empty path", ErrBadOutput)
	}
	if strings.HasPrefix(out, "/vsi") {
		return nil
	}
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		hint := "give a file name"
		if ext := strings.ToLower(filepath.Ext(out)); ext == ".tif" || ext == ".tiff" {
			hint += " such as " + filepath.Join(out, "product.tif")
		}
		return fmt.Errorf("%s: %w: it is a directory (%s)", out, ErrBadOutput, hint)
	}
	dir := filepath.Dir(out)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: %w: directory %s does not exist", out, ErrBadOutput, dir)
	case err != nil:
		return fmt.Errorf("%s: %w: %w", out, ErrBadOutput, err)
	case !st.IsDir():
		return fmt.Errorf("%s: %w: %s is not a directory", out, ErrBadOutput, dir)
	}
	return nil
}

// CheckProductOutput is CheckOutput for a product at out and for every
// file written beside it (geo.ProductFiles: the sidecar, the QGIS style,
// the probabilities and Float32 reliability files): an existing directory
// at any of them was found only when the finished file was renamed onto it,
// after all the work.
func CheckProductOutput(out string, reliabilityFloat32 bool) error {
	if err := CheckOutput(out); err != nil || strings.HasPrefix(out, "/vsi") {
		return err
	}
	paths, roles := geo.ProductFiles(out, reliabilityFloat32)
	for i := 1; i < len(paths); i++ {
		if st, err := os.Stat(paths[i]); err == nil && st.IsDir() {
			return fmt.Errorf("%s: %w: %s %s is a directory", out, ErrBadOutput, strings.TrimPrefix(roles[i], "the product's "), paths[i])
		}
	}
	return nil
}

// DescribeBandPlan says in a few words how p makes a model's bands from a
// scene of sceneBands bands: "all 200 scene bands", "200 of 224 scene
// bands (selection)", "200 bands resampled from 218 scene bands"; a gain
// is added ("x10000").
func DescribeBandPlan(p spectral.Plan, sceneBands int) string {
	var s string
	plain := p
	plain.Gain = 1
	switch {
	case p.Resampled():
		s = fmt.Sprintf("%d bands resampled from %d of %d scene bands", p.Out, len(p.Read), sceneBands)
	case plain.Identity(sceneBands):
		s = fmt.Sprintf("all %d scene bands", sceneBands)
	default:
		s = fmt.Sprintf("%d of %d scene bands (selection)", p.Out, sceneBands)
	}
	if p.Gain != 0 && p.Gain != 1 {
		s += fmt.Sprintf(", x%g", p.Gain)
	}
	return s
}

// maskInputs names the files of the options' quality masks and of the
// area of interest mask ("" = none) for checkNotInput: a product must
// replace neither.
func (c *Classifier) maskInputs(mask string) []samefile.Named {
	var ins []samefile.Named
	if mask != "" {
		ins = append(ins, samefile.Named{Path: mask, Role: RoleMask})
	}
	for _, m := range c.opts.QualityMasks {
		ins = append(ins, samefile.Named{Path: m.Path, Role: RoleQualityMask})
	}
	return ins
}

// The roles an output-is-input refusal (*samefile.Conflict, which
// errors.Is ErrOutputIsInput) names the files of a Run by, so that a
// caller can word them as its user gave them (pnec classify: by flag).
const (
	RoleScene       = "the scene"
	RoleMask        = "the mask"
	RoleQualityMask = "the quality mask"
	RoleKept        = "a file of the run" // Request.Keep
)

// checkRequest refuses, before the lock or any work, a product path that
// cannot be written (CheckProductOutput's error, as it is) and an output
// that is one of the run's inputs: the scene and the files it reads, the
// masks, and req.Keep.
func (c *Classifier) checkRequest(req Request) error {
	if err := CheckProductOutput(req.Out, c.opts.ReliabilityFloat32); err != nil {
		return err
	}
	ins := c.maskInputs(req.Mask)
	for _, k := range req.Keep {
		ins = append(ins, samefile.Named{Path: k, Role: RoleKept})
	}
	if err := checkNotInput(req.Scene, req.Out, c.opts.ReliabilityFloat32, ins...); err != nil {
		return fmt.Errorf("%s: %w", req.Scene, err)
	}
	return nil
}
