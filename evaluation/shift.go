package evaluation

import (
	"math"
	"strings"

	"github.com/pnec/pnec/model"
)

// Change families of the acquisition-shift suite (ShiftCase.Families).
const (
	FamilyGain     = "gain"
	FamilyTilt     = "tilt"
	FamilyOffset   = "offset"
	FamilyNoise    = "noise"
	FamilyShift    = "band-shift"
	FamilyClassMix = "class-mix"
	FamilyReverse  = "reverse"
	FamilyOther    = "other-scene"
)

// Sub-areas of a scene (ShiftCase.Area): its halves, split at a multiple of
// model.Stride so that a sub-area's 4x4 cells are the training scene's.
const (
	AreaLeft   = "left half"
	AreaRight  = "right half"
	AreaTop    = "top half"
	AreaBottom = "bottom half"
)

// Areas are the sub-areas of the suite.
var Areas = []string{AreaLeft, AreaRight, AreaTop, AreaBottom}

// ShiftCase is one scene of the acquisition-shift suite: the training scene
// (or one of its sub-areas) changed radiometrically, or another scene.
type ShiftCase struct {
	Name     string
	Families []string // the kinds of change it combines (none: the clean scene)
	Change   model.Radiometric
	Area     string // "" = the whole scene, else one of Areas
	// Target marks the changes of the robustness target: gain 0.85-1.15,
	// tilt +-10%, offset +-3%, +-1 band, another class mix (a sub-area) and
	// their pairwise combinations.
	Target bool
	// Strong marks the stronger changes that only the drift verdict is
	// checked on (gain 0.6 and 1.5, +-3 bands, bands reversed, another scene).
	Strong bool
	// Other is another scene (ShiftOptions.Other): no labels, no accuracy.
	Other bool
}

// IsClean reports whether c is the unchanged training scene.
func (c ShiftCase) IsClean() bool { return c.Area == "" && !c.Other && c.Change.IsIdentity() }

// ShiftSuite is the acquisition-shift suite: the clean scene; each change
// alone at several strengths (gain 0.8-1.2, tilts of three shapes at +-10%
// and +-20%, offsets -3% to +5% of each band's mean, noise 1-5% of each
// band's mean, +-1 band, each half of the scene); every pairwise
// combination of the target's representative changes (gain 0.85 and 1.15,
// linear tilt +-10%, offset +3%, +-1 band, the four halves); and the strong
// changes (gain 0.6 and 1.5, +-3 bands, bands reversed).
func ShiftSuite() []ShiftCase {
	var out []ShiftCase
	add := func(c ShiftCase) {
		if c.Name == "" {
			parts := []string{}
			if c.Area != "" {
				parts = append(parts, c.Area)
			}
			if !c.Change.IsIdentity() {
				parts = append(parts, c.Change.String())
			}
			c.Name = strings.Join(parts, " + ")
		}
		out = append(out, c)
	}
	add(ShiftCase{Name: "clean"})
	for _, g := range []float64{0.8, 0.85, 0.9, 1.1, 1.15, 1.2} {
		add(ShiftCase{Families: []string{FamilyGain}, Change: model.Radiometric{Gain: g}, Target: g >= 0.85 && g <= 1.15})
	}
	for _, shape := range model.TiltShapes {
		for _, t := range []float64{-0.1, 0.1, -0.2, 0.2} {
			add(ShiftCase{Families: []string{FamilyTilt}, Change: model.Radiometric{Tilt: t, TiltShape: shape}, Target: math.Abs(t) <= 0.1})
		}
	}
	for _, o := range []float64{-0.03, 0.01, 0.03, 0.05} {
		add(ShiftCase{Families: []string{FamilyOffset}, Change: model.Radiometric{Offset: o}, Target: math.Abs(o) <= 0.03})
	}
	for _, n := range []float64{0.01, 0.02, 0.05} {
		add(ShiftCase{Families: []string{FamilyNoise}, Change: model.Radiometric{Noise: n}})
	}
	for _, k := range []float64{-1, 1} {
		add(ShiftCase{Families: []string{FamilyShift}, Change: model.Radiometric{BandShift: k}, Target: true})
	}
	for _, a := range Areas {
		add(ShiftCase{Families: []string{FamilyClassMix}, Area: a, Target: true})
	}
	// Pairwise combinations of the target's representative changes.
	type level struct {
		family string
		change model.Radiometric
		area   string
	}
	families := [][]level{
		{{FamilyGain, model.Radiometric{Gain: 0.85}, ""}, {FamilyGain, model.Radiometric{Gain: 1.15}, ""}},
		{{FamilyTilt, model.Radiometric{Tilt: -0.1}, ""}, {FamilyTilt, model.Radiometric{Tilt: 0.1}, ""}},
		{{FamilyOffset, model.Radiometric{Offset: 0.03}, ""}},
		{{FamilyShift, model.Radiometric{BandShift: -1}, ""}, {FamilyShift, model.Radiometric{BandShift: 1}, ""}},
	}
	var areas []level
	for _, a := range Areas {
		areas = append(areas, level{FamilyClassMix, model.Radiometric{}, a})
	}
	families = append(families, areas)
	for i := range families {
		for j := i + 1; j < len(families); j++ {
			for _, a := range families[i] {
				for _, b := range families[j] {
					add(ShiftCase{Families: []string{a.family, b.family}, Change: merge(a.change, b.change),
						Area: a.area + b.area, Target: true})
				}
			}
		}
	}
	for _, g := range []float64{0.6, 1.5} {
		add(ShiftCase{Families: []string{FamilyGain}, Change: model.Radiometric{Gain: g}, Strong: true})
	}
	for _, k := range []float64{-3, 3} {
		add(ShiftCase{Families: []string{FamilyShift}, Change: model.Radiometric{BandShift: k}, Strong: true})
	}
	add(ShiftCase{Families: []string{FamilyReverse}, Change: model.Radiometric{Reverse: true}, Strong: true})
	return out
}

// merge combines two changes of different families.
func merge(a, b model.Radiometric) model.Radiometric {
	out := a
	if b.Gain != 0 {
		out.Gain = b.Gain
	}
	if b.Tilt != 0 {
		out.Tilt, out.TiltShape = b.Tilt, b.TiltShape
	}
	out.Offset += b.Offset
	out.Noise += b.Noise
	out.BandShift += b.BandShift
	out.Reverse = out.Reverse || b.Reverse
	return out
}

// areaRect is the pixel rectangle (row0, col0, rows, cols) of a sub-area
// of a rows x cols scene, split at a multiple of model.Stride.
func areaRect(area string, rows, cols int) (r0, c0, nr, nc int) {
	half := func(n int) int { return max(model.Stride, (n/2+model.Stride/2)/model.Stride*model.Stride) }
	switch area {
	case AreaLeft:
		return 0, 0, rows, half(cols)
	case AreaRight:
		h := half(cols)
		return 0, h, rows, cols - h
	case AreaTop:
		return 0, 0, half(rows), cols
	case AreaBottom:
		h := half(rows)
		return h, 0, rows - h, cols
	}
	return 0, 0, rows, cols
}

// cropScene is the rectangle of s (and of labels, when not nil).
func cropScene(s model.Scene, labels []int32, r0, c0, nr, nc int) (model.Scene, []int32) {
	out := model.Scene{Rows: nr, Cols: nc, Bands: s.Bands, WavelengthsNM: s.WavelengthsNM,
		Data: make([]float32, nr*nc*s.Bands)}
	if s.Valid != nil {
		out.Valid = make([]bool, nr*nc)
	}
	var lab []int32
	if labels != nil {
		lab = make([]int32, nr*nc)
	}
	B := s.Bands
	for r := 0; r < nr; r++ {
		src := (r0+r)*s.Cols + c0
		copy(out.Data[r*nc*B:(r+1)*nc*B], s.Data[src*B:(src+nc)*B])
		if s.Valid != nil {
			copy(out.Valid[r*nc:(r+1)*nc], s.Valid[src:src+nc])
		}
		if lab != nil {
			copy(lab[r*nc:(r+1)*nc], labels[src:src+nc])
		}
	}
	return out, lab
}

// ResampleBands maps s onto bands bands by linear interpolation along the
// band index (the first and last bands stay first and last): a scene of
// another sensor or band set, brought to a model's band count only so that
// it can be run and its drift measured.
func ResampleBands(s model.Scene, bands int) model.Scene {
	if s.Bands == bands || bands < 1 {
		return s
	}
	out := model.Scene{Rows: s.Rows, Cols: s.Cols, Bands: bands, Valid: s.Valid, Data: make([]float32, s.Rows*s.Cols*bands)}
	for i := 0; i < s.Rows*s.Cols; i++ {
		in := s.Data[i*s.Bands : (i+1)*s.Bands]
		dst := out.Data[i*bands : (i+1)*bands]
		for b := range dst {
			pos := 0.0
			if bands > 1 {
				pos = float64(b) * float64(s.Bands-1) / float64(bands-1)
			}
			j := min(int(pos), s.Bands-1)
			f := float32(pos - float64(j))
			if j+1 < s.Bands {
				dst[b] = in[j]*(1-f) + in[j+1]*f
			} else {
				dst[b] = in[j]
			}
		}
	}
	return out
}
