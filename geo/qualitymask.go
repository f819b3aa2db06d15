package geo

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pnec/pnec/spectral"
)

// ErrNoProductQualityMasks is returned by UseProductQualityMasks for a
// scene whose product delivers no quality mask pnec knows (or that is no
// product).
var ErrNoProductQualityMasks = errors.New("the scene's product delivers no quality masks pnec reads")

// QualityMaskError reports a quality mask that cannot serve a scene
// (another size). Quality masks mark invalid pixels; an area of interest
// (Mask) is another thing.
type QualityMaskError struct {
	Mask, Scene          string
	Cols, Rows           int // the mask's
	SceneCols, SceneRows int
}

func (e *QualityMaskError) Error() string {
	return fmt.Sprintf("quality mask %s is %dx%d pixels (cols x rows), the scene %s %dx%d: a quality mask must be on the scene's grid",
		e.Mask, e.Cols, e.Rows, e.Scene, e.SceneCols, e.SceneRows)
}

// rasterQualityMask is a quality mask read from a raster (or a product's
// mask file) on the scene's grid: a pixel is masked where any of its bands
// is non-zero (and the mask's own pixel is valid). A per-band mask (a
// product's defective-pixel mask, one plane per spectral band) has a plane
// per scene band, and a read applies the planes of the scene bands it
// reads that the scene does not declare bad: a defect in a band the model
// does not use (or a bad band's plane, flagged everywhere) masks nothing.
type rasterQualityMask struct {
	label   string
	sc      *Scene
	perBand bool
	bad     []bool // the scene's bad bands (per-band masks)
	planes  []int  // the planes the mask scene's plan reads now
}

func (m *rasterQualityMask) name() string { return m.label }

func (m *rasterQualityMask) readQualityMask(w Window, bufCols, bufRows int, bands []int, bad []bool) error {
	if m.perBand {
		planes := make([]int, 0, len(bands))
		for _, b := range bands {
			if b < len(m.bad) && m.bad[b] {
				continue
			}
			planes = append(planes, b)
		}
		slices.Sort(planes)
		planes = slices.Compact(planes)
		if len(planes) == 0 {
			return nil
		}
		if !slices.Equal(planes, m.planes) {
			if err := m.sc.SetBandPlan(&spectral.Plan{Read: planes, Out: len(planes)}); err != nil {
				return err
			}
			m.planes = planes
		}
	}
	data, valid, err := m.sc.read(&m.sc.cur, w, bufCols, bufRows, false)
	if err != nil {
		return err
	}
	nb := m.sc.cur.out
	for p, ok := range valid {
		if !ok {
			continue
		}
		for _, v := range data[p*nb : (p+1)*nb] {
			if v != 0 {
				bad[p] = true
				break
			}
		}
	}
	return nil
}

func (m *rasterQualityMask) close() error { return m.sc.Close() }

// AddQualityMask makes the pixels a quality mask raster marks become
// invalid (no-data) in every later read of s: the raster named name (any
// GDAL dataset name, or a product's mask file a sensor's reader reads,
// orthorectified as its scene is) must have the scene's
// size; a pixel is masked where any of its bands (0-based; nil: band 1) is
// non-zero. The mask is closed with the scene. (An area of interest, where
// non-zero means inside, is OpenMask's.)
func (s *Scene) AddQualityMask(name string, bands []int) error {
	ms, err := Open(name)
	if err != nil {
		return fmt.Errorf("quality mask: %w", err)
	}
	if err := s.addQualityMaskScene(ms, name, bands); err != nil {
		ms.Close()
		return err
	}
	return nil
}

// addQualityMaskScene adds the open scene ms as a quality mask of s (see
// AddQualityMask); it takes ms over.
func (s *Scene) addQualityMaskScene(ms *Scene, label string, bands []int) error {
	mi := ms.Info()
	if mi.Cols != s.info.Cols || mi.Rows != s.info.Rows {
		return &QualityMaskError{Mask: label, Scene: s.name, Cols: mi.Cols, Rows: mi.Rows, SceneCols: s.info.Cols, SceneRows: s.info.Rows}
	}
	if bands == nil {
		bands = []int{0}
	}
	for _, b := range bands {
		if b < 0 || b >= mi.Bands {
			return fmt.Errorf("quality mask %s: band %d of %d", label, b+1, mi.Bands)
		}
	}
	if err := ms.SetBandPlan(&spectral.Plan{Read: bands, Out: len(bands)}); err != nil {
		return fmt.Errorf("quality mask %s: %w", label, err)
	}
	s.qualityMasks = append(s.qualityMasks, &rasterQualityMask{label: label, sc: ms})
	s.refreshSpecs()
	return nil
}

// addPerBandQualityMask adds the open scene ms, with a plane per band of
// s, as a per-band quality mask of s (see rasterQualityMask); it takes ms
// over. A mask of one plane (for all bands) is added as a plain mask.
func (s *Scene) addPerBandQualityMask(ms *Scene, label string) error {
	mi := ms.Info()
	if mi.Bands == 1 {
		return s.addQualityMaskScene(ms, label, nil)
	}
	if mi.Cols != s.info.Cols || mi.Rows != s.info.Rows {
		return &QualityMaskError{Mask: label, Scene: s.name, Cols: mi.Cols, Rows: mi.Rows, SceneCols: s.info.Cols, SceneRows: s.info.Rows}
	}
	if mi.Bands != s.info.Bands {
		return fmt.Errorf("quality mask %s has %d planes, the scene %d bands: a per-band mask has one plane per band", label, mi.Bands, s.info.Bands)
	}
	s.qualityMasks = append(s.qualityMasks, &rasterQualityMask{label: label, sc: ms, perBand: true, bad: slices.Clone(s.info.BadBands)})
	s.refreshSpecs()
	return nil
}

// refreshSpecs rebuilds the read specs after quality masks were added (a
// mask makes integer scenes readable for invalid pixels too).
func (s *Scene) refreshSpecs() {
	plan := s.cur.plan
	cur := s.cur.bands
	s.setSpecs()
	if plan != nil {
		s.cur = s.spec(cur, plan)
	}
}

// ProductQualityMasks names the quality masks the scene's product delivers
// that UseProductQualityMasks would apply (nil for none).
func (s *Scene) ProductQualityMasks() []string {
	var out []string
	for _, m := range s.productQualityMasks {
		out = append(out, m.label)
	}
	return out
}

// UseProductQualityMasks applies the quality masks delivered with the
// scene's product (docs/sensors.md says which, per sensor): their flagged
// pixels become invalid in every later read. ErrNoProductQualityMasks when
// it has none.
func (s *Scene) UseProductQualityMasks() error {
	if len(s.productQualityMasks) == 0 {
		what := "it is not a product pnec reads"
		if s.info.Product != "" {
			what = s.info.Product + " delivers none pnec reads"
		}
		return fmt.Errorf("%s: %w (%s)", s.name, ErrNoProductQualityMasks, what)
	}
	var names []string
	for _, pm := range s.productQualityMasks {
		ms, err := pm.open()
		if err != nil {
			return fmt.Errorf("%s: quality mask %s: %w", s.name, pm.label, err)
		}
		add := func() error { return s.addQualityMaskScene(ms, pm.label, pm.bands) }
		if pm.perBand {
			add = func() error { return s.addPerBandQualityMask(ms, pm.label) }
		}
		if err := add(); err != nil {
			ms.Close()
			return fmt.Errorf("%s: %w", s.name, err)
		}
		names = append(names, pm.label)
	}
	s.usedQualityMasks = strings.Join(names, ", ")
	return nil
}

// productQualityMask is a quality mask a product delivers: how to open it,
// which of its bands flag pixels, and its name for messages.
type productQualityMask struct {
	label string
	bands []int // 0-based; nil: band 1
	// perBand: the mask has a plane per scene band (QualityMaskSource.PerBand);
	// a read applies the planes of the good bands it reads.
	perBand bool
	open    func() (*Scene, error)
}
