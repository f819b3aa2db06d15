package synth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/shareddata"
	"github.com/pnec/pnec/matfile"
)

// ErrNoData reports that the shared data folder (../shared/data) was not
// found; callers and tests branch on it.
var ErrNoData = errors.New("shared data folder not found")

// SalinasANames names SalinasA's label values.
var SalinasANames = map[int]string{
	1: "Brocoli_green_weeds_1", 10: "Corn_senesced_green_weeds", 11: "Lettuce_romaine_4wk",
	12: "Lettuce_romaine_5wk", 13: "Lettuce_romaine_6wk", 14: "Lettuce_romaine_7wk",
}

// JasperRidgeNames names JasperRidge's label values.
var JasperRidgeNames = map[int]string{1: "tree", 2: "water", 3: "dirt", 4: "road"}

// FindDataDir returns the shared data folder: $PNEC_DATA when set, else the
// first <ancestor>/shared/data holding README.md, walking up from start (the
// repository's ../shared/data is found from anywhere inside it).
func FindDataDir(start string) (string, error) {
	d, err := shareddata.Find(start)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoData, err)
	}
	return d, nil
}

// noDataDir is the error of a named source without the shared data
// folder: it says where the folder is looked for and the way around it.
func noDataDir(spec string) error {
	return fmt.Errorf("source %s: %w (it is $PNEC_DATA, else shared/data in a folder above the working directory; or give the spectra as SCENE,LABELS)", spec, ErrNoData)
}

// Image is a labelled hyperspectral image in memory.
type Image struct {
	Rows, Cols, Bands int
	Pixels            []float32 // pixel-interleaved, row-major
	Labels            []uint8   // row-major, 0 = unlabelled
}

// LoadSourceImage reads a named source ("SalinasA" or "JasperRidge", from
// dataDir) or a "SCENE,LABELS" pair, each a .mat file (its only numeric
// array, or FILE.mat:VAR) or any raster GDAL reads.
func LoadSourceImage(ctx context.Context, spec, dataDir string) (*Image, string, map[int]string, error) {
	switch strings.ToLower(spec) {
	case "salinasa":
		if dataDir == "" {
			return nil, "", nil, noDataDir(spec)
		}
		im, err := loadPair(ctx, filepath.Join(dataDir, "SalinasA", "SalinasA_corrected.mat"), filepath.Join(dataDir, "SalinasA", "SalinasA_gt.mat"))
		return im, "SalinasA", SalinasANames, err
	case "jasperridge":
		if dataDir == "" {
			return nil, "", nil, noDataDir(spec)
		}
		cube := filepath.Join(dataDir, "JasperRidge", "JasperRidge2_R198.mat")
		rows, cols, bands, px, err := matfile.ReadUnmixing(cube)
		if err != nil {
			return nil, "", nil, fmt.Errorf("source JasperRidge: %w", err)
		}
		labels, lr, lc, err := readLabels(ctx, filepath.Join(dataDir, "JasperRidge", "JasperRidge_gt.mat"))
		if err != nil {
			return nil, "", nil, fmt.Errorf("source JasperRidge: %w", err)
		}
		if lr != rows || lc != cols {
			return nil, "", nil, fmt.Errorf("source JasperRidge: labels %dx%d, cube %dx%d", lr, lc, rows, cols)
		}
		return &Image{Rows: rows, Cols: cols, Bands: bands, Pixels: px, Labels: labels}, "JasperRidge", JasperRidgeNames, nil
	}
	scene, labels, ok := strings.Cut(spec, ",")
	if !ok {
		return nil, "", nil, fmt.Errorf("%w: %q: want SalinasA, JasperRidge or SCENE,LABELS", ErrSource, spec)
	}
	im, err := loadPair(ctx, scene, labels)
	return im, filepath.Base(scene), nil, err
}

func loadPair(ctx context.Context, scene, labels string) (*Image, error) {
	rows, cols, bands, px, err := readImage(ctx, scene)
	if err != nil {
		return nil, err
	}
	lab, lr, lc, err := readLabels(ctx, labels)
	if err != nil {
		return nil, err
	}
	if lr != rows || lc != cols {
		return nil, fmt.Errorf("%w: labels %s are %dx%d, scene %s is %dx%d", ErrSource, labels, lr, lc, scene, rows, cols)
	}
	return &Image{Rows: rows, Cols: cols, Bands: bands, Pixels: px, Labels: lab}, nil
}

// splitMatVar splits "file.mat:VAR" (VAR may be empty).
func splitMatVar(spec string) (path, name string, isMat bool) {
	lower := strings.ToLower(spec)
	if i := strings.LastIndex(lower, ".mat:"); i >= 0 {
		return spec[:i+4], spec[i+5:], true
	}
	return spec, "", strings.HasSuffix(lower, ".mat")
}

// readImage reads a whole image from a .mat array or a GDAL raster.
func readImage(ctx context.Context, spec string) (rows, cols, bands int, px []float32, err error) {
	if path, name, isMat := splitMatVar(spec); isMat {
		a, err := matfile.ReadArray(path, name)
		if err != nil {
			return 0, 0, 0, nil, err
		}
		rows, cols, bands, px, err = a.Image()
		if err != nil {
			return 0, 0, 0, nil, fmt.Errorf("%s: %w", path, err)
		}
		return rows, cols, bands, px, nil
	}
	s, err := geo.Open(spec)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	defer s.Close()
	in := s.Info()
	b, err := s.ReadWindow(ctx, geo.Window{Cols: in.Cols, Rows: in.Rows})
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return in.Rows, in.Cols, in.Bands, b.Data, nil
}

// readLabels reads a one-band label image with integer values 0..255.
func readLabels(ctx context.Context, spec string) ([]uint8, int, int, error) {
	rows, cols, bands, px, err := readImage(ctx, spec)
	if err != nil {
		return nil, 0, 0, err
	}
	if bands != 1 {
		return nil, 0, 0, fmt.Errorf("%w: labels %s have %d bands, want 1", ErrLayout, spec, bands)
	}
	out := make([]uint8, len(px))
	for i, v := range px {
		if v < 0 || v > MaxClasses || v != float32(math.Trunc(float64(v))) {
			return nil, 0, 0, fmt.Errorf("%w: labels %s: pixel (row %d, col %d) is %g, want an integer 0..%d",
				ErrLayout, spec, i/cols, i%cols, v, MaxClasses)
		}
		out[i] = uint8(v)
	}
	return out, rows, cols, nil
}

// LoadSource reads a source image and estimates its class statistics.
func LoadSource(ctx context.Context, spec, dataDir string, opt EstimateOptions) (*Source, error) {
	im, name, names, err := LoadSourceImage(ctx, spec, dataDir)
	if err != nil {
		return nil, err
	}
	if opt.Names == nil {
		opt.Names = names
	}
	return Estimate(name, im.Pixels, im.Labels, im.Bands, opt)
}

// LoadLayout reads a layout: "procedural:ROWSxCOLS" (drawn with seed), a
// ground-truth GeoTIFF (or any one-band raster GDAL reads; its georeference
// is returned when it has a CRS, nil otherwise), or a .mat label file
// (FILE.mat or FILE.mat:VAR).
func LoadLayout(ctx context.Context, spec string, seed uint64) (*Layout, *geo.GeoRef, error) {
	if size, ok := strings.CutPrefix(spec, "procedural:"); ok {
		rows, cols, err := ParseSize(size)
		if err != nil {
			return nil, nil, err
		}
		l, err := Procedural(rows, cols, seed)
		return l, nil, err
	}
	labels, rows, cols, err := readLabels(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	l, err := NewLayout(rows, cols, labels)
	if err != nil {
		return nil, nil, fmt.Errorf("layout %s: %w", spec, err)
	}
	if _, _, isMat := splitMatVar(spec); isMat {
		return l, nil, nil
	}
	s, err := geo.Open(spec)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	// Only a real georeference is kept: GDAL reports the identity transform
	// for a raster without one, and `pnec import mat` writes local grids
	// without a CRS.
	ref := s.Info().GeoRef
	if ref.GeoTransform == ([6]float64{}) || (ref.WKT == "" && ref.EPSG == 0) {
		return l, nil, nil
	}
	return l, &ref, nil
}
