package geo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pnec/pnec/spectral"
)

// ErrNoProductMasks is returned by UseProductMasks for a scene whose
// product delivers no quality mask pnec knows (or that is no product).
var ErrNoProductMasks = errors.New("geo: the scene's product delivers no quality masks pnec reads")

// MaskError reports a mask that cannot serve a scene (another size).
type MaskError struct {
	Mask, Scene          string
	Cols, Rows           int // the mask's
	SceneCols, SceneRows int
}

func (e *MaskError) Error() string {
	return fmt.Sprintf("mask %s is %dx%d pixels (cols x rows), the scene %s %dx%d: a mask must be on the scene's grid",
		e.Mask, e.Cols, e.Rows, e.Scene, e.SceneCols, e.SceneRows)
}

// sceneMask is a mask read from a raster (or a product's mask file) on the
// scene's grid: a pixel is masked where any of its bands is non-zero (and
// the mask's own pixel is valid).
type sceneMask struct {
	label string
	sc    *Scene
}

func (m *sceneMask) name() string { return m.label }

func (m *sceneMask) readMask(w Window, bufCols, bufRows int, bad []bool) error {
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

func (m *sceneMask) close() error { return m.sc.Close() }

// AddMask makes the pixels a mask raster marks become invalid (no-data) in
// every later read of s: the raster named name (any GDAL dataset name, or
// a product's mask file pnec reads, such as EMIT's L2A mask, which is
// orthorectified as its scene is) must have the scene's size; a pixel is
// masked where any of its bands (0-based; nil: band 1) is non-zero. The
// mask is closed with the scene.
func (s *Scene) AddMask(name string, bands []int) error {
	ms, err := Open(name)
	if err != nil {
		return fmt.Errorf("mask: %w", err)
	}
	if err := s.addMaskScene(ms, name, bands); err != nil {
		ms.Close()
		return err
	}
	return nil
}

// addMaskScene adds the open scene ms as a mask of s (see AddMask); it
// takes ms over.
func (s *Scene) addMaskScene(ms *Scene, label string, bands []int) error {
	mi := ms.Info()
	if mi.Cols != s.info.Cols || mi.Rows != s.info.Rows {
		return &MaskError{Mask: label, Scene: s.name, Cols: mi.Cols, Rows: mi.Rows, SceneCols: s.info.Cols, SceneRows: s.info.Rows}
	}
	if bands == nil {
		bands = []int{0}
	}
	for _, b := range bands {
		if b < 0 || b >= mi.Bands {
			return fmt.Errorf("mask %s: band %d of %d", label, b+1, mi.Bands)
		}
	}
	if err := ms.SetBandPlan(&spectral.Plan{Read: bands, Out: len(bands)}); err != nil {
		return fmt.Errorf("mask %s: %w", label, err)
	}
	s.masks = append(s.masks, &sceneMask{label: label, sc: ms})
	s.refreshSpecs()
	return nil
}

// refreshSpecs rebuilds the read specs after masks were added (a mask
// makes integer scenes readable for invalid pixels too).
func (s *Scene) refreshSpecs() {
	plan := s.cur.plan
	cur := s.cur.bands
	s.setSpecs()
	if plan != nil {
		s.cur = s.spec(cur, plan)
	}
}

// ProductMasks names the quality masks the scene's product delivers that
// UseProductMasks would apply ("" joined; nil for none).
func (s *Scene) ProductMasks() []string {
	var out []string
	for _, m := range s.productMasks {
		out = append(out, m.label)
	}
	return out
}

// UseProductMasks applies the quality masks delivered with the scene's
// product (docs/sensors.md says which, per sensor): their flagged pixels
// become invalid in every later read. ErrNoProductMasks when it has none.
func (s *Scene) UseProductMasks() error {
	if len(s.productMasks) == 0 {
		what := "it is not a product pnec reads"
		if s.info.Product != "" {
			what = s.info.Product + " delivers none pnec reads"
		}
		return fmt.Errorf("%s: %w (%s)", s.name, ErrNoProductMasks, what)
	}
	var names []string
	for _, pm := range s.productMasks {
		ms, err := pm.open()
		if err != nil {
			return fmt.Errorf("%s: quality mask %s: %w", s.name, pm.label, err)
		}
		if err := s.addMaskScene(ms, pm.label, pm.bands); err != nil {
			ms.Close()
			return fmt.Errorf("%s: %w", s.name, err)
		}
		names = append(names, pm.label)
	}
	s.usedMasks = strings.Join(names, ", ")
	return nil
}

// productMask is a quality mask a product delivers: how to open it, which
// of its bands flag pixels, and its name for messages.
type productMask struct {
	label string
	bands []int // 0-based; nil: band 1
	open  func() (*Scene, error)
}
