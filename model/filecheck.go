package model

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/pnec/pnec/spectral"
)

// Bounds of a model file's header. They are far above any network pnec
// trains (256 channels, a few hundred bands) and low enough that every size
// computed from them fits an int64, so a hostile header cannot overflow the
// arithmetic that checks it.
const (
	maxFileBands   = 1 << 16 // input bands
	maxFileClasses = 65534   // a UInt16 product's class values, 65535 being its no-data
	maxFileDim     = 1 << 16 // hidden, state, head size, conv width, chunk, groups, diff window
	maxFileExpand  = 1 << 8
	maxFileSide    = 1 << 31 // training scene rows or columns
)

// validate checks every field of a header read from a file before anything
// is allocated from it: counts and shapes against their bounds and against
// each other, and the weights they describe against bodyBytes, the bytes
// that follow the header (the file must hold exactly those).
func (meta *modelMeta) validate(bodyBytes int) error {
	if meta.Bands < 1 || meta.Bands > maxFileBands {
		return fmt.Errorf("bands %d: want 1..%d", meta.Bands, maxFileBands)
	}
	k := len(meta.Classes)
	if k < 2 || k > maxFileClasses {
		return fmt.Errorf("%d classes: want 2..%d", k, maxFileClasses)
	}
	seen := make(map[int]bool, k)
	for _, c := range meta.Classes {
		if c.Value < 1 || c.Value > maxFileClasses {
			return fmt.Errorf("class %q has value %d: want 1..%d", c.Name, c.Value, maxFileClasses)
		}
		if seen[c.Value] {
			return fmt.Errorf("class value %d listed twice", c.Value)
		}
		seen[c.Value] = true
	}
	if meta.PrototypeRows != k {
		return fmt.Errorf("prototype_rows %d: want one per class (%d)", meta.PrototypeRows, k)
	}
	cfg := meta.Config
	switch cfg.Encoder {
	case EncoderPaper, EncoderCell:
	default:
		return fmt.Errorf("encoder %q: want %s or %s", cfg.Encoder, EncoderPaper, EncoderCell)
	}
	switch cfg.Ablation {
	case "", AblationFull, AblationBase, AblationNoEC, AblationNoRC, AblationNoRecovery:
	default:
		return fmt.Errorf("ablation %q unknown", cfg.Ablation)
	}
	for _, f := range []struct {
		name     string
		v, limit int
	}{
		{"hidden", cfg.Hidden, maxFileDim}, {"state size", cfg.DState, maxFileDim}, {"conv width", cfg.DConv, maxFileDim},
		{"expand", cfg.Expand, maxFileExpand}, {"head size", cfg.HeadDim, maxFileDim}, {"chunk", cfg.Chunk, maxFileDim},
		{"groups", cfg.Groups, maxFileDim}, {"diff window", cfg.DiffWindow, maxFileDim},
	} {
		if f.v < 1 || f.v > f.limit {
			return fmt.Errorf("%s %d: want 1..%d", f.name, f.v, f.limit)
		}
	}
	if err := cfg.Recovery.Validate(); err != nil {
		return err
	}
	if err := cfg.Decision.validate(); err != nil {
		return err
	}
	if !(cfg.GateFloor >= 0 && cfg.GateFloor <= 1) {
		return fmt.Errorf("gate floor %g: want 0..1", cfg.GateFloor)
	}
	d, err := makeDims(cfg, meta.Bands, k)
	if err != nil {
		return err
	}
	// The weights, in the order initParams makes them, with their exact shapes.
	want := initParams(d, cfg, nil)
	if len(meta.Params) != len(want) {
		return fmt.Errorf("%d weight tensors, want %d", len(meta.Params), len(want))
	}
	var floats int64
	for i, p := range want {
		got := meta.Params[i]
		if got.Name != p.Name || !slices.Equal(got.Shape, p.Shape) {
			return fmt.Errorf("weight %d is %s %v, want %s %v", i, got.Name, got.Shape, p.Name, p.Shape)
		}
		floats += int64(numel(p.Shape))
	}
	floats += int64(k) * int64(d.D)                                // prototype bank
	floats += int64(len(meta.SpectralClasses)) * int64(meta.Bands) // training spectra
	if floats*4 != int64(bodyBytes) {
		return fmt.Errorf("the header describes %d bytes of weights, the file holds %d", floats*4, bodyBytes)
	}
	if len(meta.StretchLo) != meta.Bands || len(meta.StretchHi) != meta.Bands {
		return fmt.Errorf("normalisation statistics for %d/%d bands, want %d", len(meta.StretchLo), len(meta.StretchHi), meta.Bands)
	}
	for b := range meta.StretchLo {
		lo, hi := float64(meta.StretchLo[b]), float64(meta.StretchHi[b])
		if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			return fmt.Errorf("normalisation statistics of band %d: %g..%g", b+1, lo, hi)
		}
	}
	if err := meta.validateBandRecord(); err != nil {
		return err
	}
	if meta.SceneRows < 0 || meta.SceneCols < 0 || meta.SceneRows > maxFileSide || meta.SceneCols > maxFileSide {
		return fmt.Errorf("training scene %dx%d (cols x rows): want sizes 0..%d", meta.SceneCols, meta.SceneRows, maxFileSide)
	}
	pixels := int64(meta.SceneRows) * int64(meta.SceneCols)
	for i, idx := range meta.TrainIndices {
		if idx < 0 || int64(idx) >= pixels || (i > 0 && idx <= meta.TrainIndices[i-1]) {
			return fmt.Errorf("training pixel %d: index %d outside the %dx%d training scene or out of order", i, idx, meta.SceneCols, meta.SceneRows)
		}
	}
	return nil
}

// validateBandRecord checks the band set and radiometry a header records
// (BandRecord), for files read and for models Train makes: band centres
// and widths are every model band's or none and finite and positive
// (JSON has no NaN; a zero width would divide by zero in resampling);
// widths come with centres; the bands a model takes of its training scene
// are in that scene, ascending (spectral.Plan.Read), one per model band;
// bad bands are in the training scene, ascending; the radiometric
// quantity is one spectral knows and its scale finite and not negative.
// Bounds: meta.Bands is already within 1..maxFileBands.
func (meta *modelMeta) validateBandRecord() error {
	if n := len(meta.WavelengthsNM); n != 0 && n != meta.Bands {
		return fmt.Errorf("%d wavelengths for %d bands", n, meta.Bands)
	}
	if n := len(meta.FWHMNM); n != 0 {
		if n != meta.Bands {
			return fmt.Errorf("%d band widths for %d bands", n, meta.Bands)
		}
		if len(meta.WavelengthsNM) == 0 {
			return fmt.Errorf("band widths without band centres")
		}
	}
	for i, w := range meta.WavelengthsNM {
		if !(w > 0) || math.IsInf(w, 0) {
			return fmt.Errorf("band %d's wavelength is %g: a model records every band's or none", i+1, w)
		}
	}
	for i, f := range meta.FWHMNM {
		if !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("band %d's width is %g: a model records every band's or none", i+1, f)
		}
	}
	if meta.SceneBands < 0 || meta.SceneBands > maxFileBands {
		return fmt.Errorf("training scene bands %d: want 0..%d", meta.SceneBands, maxFileBands)
	}
	sceneBands := meta.Bands // the training scene's bands: the model's unless it left some out
	if n := len(meta.BandsUsed); n != 0 {
		if n != meta.Bands {
			return fmt.Errorf("%d training-scene bands used for %d model bands", n, meta.Bands)
		}
		if meta.SceneBands < meta.Bands {
			return fmt.Errorf("training scene of %d bands for a model of %d taken from it", meta.SceneBands, meta.Bands)
		}
		for i, b := range meta.BandsUsed {
			if b < 0 || b >= meta.SceneBands || (i > 0 && b <= meta.BandsUsed[i-1]) {
				return fmt.Errorf("band used %d outside the training scene's %d bands or out of order", b, meta.SceneBands)
			}
		}
		sceneBands = meta.SceneBands
	} else if meta.SceneBands != 0 && meta.SceneBands != meta.Bands {
		return fmt.Errorf("training scene of %d bands for a model of %d without the bands used", meta.SceneBands, meta.Bands)
	}
	for i, b := range meta.BadBands {
		if b < 0 || b >= sceneBands || (i > 0 && b <= meta.BadBands[i-1]) {
			return fmt.Errorf("bad band %d outside the training scene's %d bands or out of order", b, sceneBands)
		}
	}
	switch meta.Quantity {
	case "", spectral.QuantityReflectance, spectral.QuantityRadiance:
	default:
		return fmt.Errorf("radiometric quantity %q: want %s, %s or none", meta.Quantity, spectral.QuantityReflectance, spectral.QuantityRadiance)
	}
	if !(meta.QuantityScale >= 0) || math.IsInf(meta.QuantityScale, 0) {
		return fmt.Errorf("radiometric scale %g: want a finite number, 0 when unknown", meta.QuantityScale)
	}
	return nil
}

// checkHeaderStrings refuses a model header any of whose strings (class
// names, units, versions, at any depth of v's exported fields, slices and
// maps) holds a control character or a bidirectional override: those are
// what a terminal acts on (ANSI escapes, newlines, carriage returns) or
// what reorders the text around them, and the strings of a model file are
// printed by every command that reads it. The error names the field and
// quotes the value.
func checkHeaderStrings(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); strings.IndexFunc(s, unsafeRune) >= 0 {
			if len(s) > 80 {
				s = s[:80] + "..."
			}
			return fmt.Errorf("%s %q holds control characters: not a model pnec wrote", path, s)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if err := checkHeaderStrings(v.Field(i), path+"."+name); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.String || v.Type().Elem().Kind() == reflect.Struct {
			for i := range v.Len() {
				if err := checkHeaderStrings(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if err := checkHeaderStrings(it.Key(), path+" key"); err != nil {
				return err
			}
			if err := checkHeaderStrings(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key())); err != nil {
				return err
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkHeaderStrings(v.Elem(), path)
		}
	}
	return nil
}

// unsafeRune is a control character (C0, DEL, C1) or a bidirectional
// embedding, override or isolate.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f
}
