package spectral

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Radiometric quantities (Radiometry.Quantity).
const (
	QuantityReflectance = "reflectance" // surface (or top-of-atmosphere) reflectance
	QuantityRadiance    = "radiance"    // at-sensor radiance
)

// Radiometry says what a scene's values measure, after the scale and
// offset its reader applies.
type Radiometry struct {
	// Quantity is QuantityReflectance, QuantityRadiance, or "" when unknown.
	Quantity string
	// Scale is the value that stands for reflectance 1: 1 for reflectance
	// 0-1, 10000 for 0-10000; 0 when unknown (or for radiance).
	Scale float64
	// Units are the values' units where the source names them (radiance).
	Units string
}

// Known reports whether the quantity is known.
func (r Radiometry) Known() bool { return r.Quantity != "" }

// String is the radiometry in words: "reflectance 0-1", "reflectance
// 0-10000", "radiance (uW cm-2 sr-1 nm-1)", "unknown".
func (r Radiometry) String() string {
	switch {
	case r.Quantity == "":
		return "unknown quantity"
	case r.Quantity == QuantityReflectance && r.Scale > 0:
		return "reflectance 0-" + strconv.FormatFloat(r.Scale, 'g', -1, 64)
	case r.Units != "":
		return r.Quantity + " (" + r.Units + ")"
	}
	return r.Quantity
}

// The reflectance scales pnec takes (Radiometry.Scale): reflectance 1
// stored as 1, 100, 10000, 65535 ... lies well inside. Outside, a
// conversion gain (the ratio of two scales) overflows float32 on real
// values: reflectance:1e-300 made every pixel +Inf, one class, exit 0.
const (
	MinScale = 1e-6
	MaxScale = 1e9
)

// ErrScale: a reflectance scale that is not a finite number in
// [MinScale, MaxScale].
var ErrScale = fmt.Errorf("want a finite number from %g to %g (the value that stands for reflectance 1: 1, 100, 10000)", MinScale, MaxScale)

// CheckScale refuses a reflectance scale outside [MinScale, MaxScale]
// (NaN and infinities included), wrapping ErrScale.
func CheckScale(scale float64) error {
	if !(scale >= MinScale && scale <= MaxScale) {
		return fmt.Errorf("reflectance scale %s: %w", strconv.FormatFloat(scale, 'g', -1, 64), ErrScale)
	}
	return nil
}

// ErrRadiometry: the scene's values measure another quantity than the
// model was trained on, or on another scale that cannot be converted; see
// *RadiometryError.
var ErrRadiometry = errors.New("the scene's values are not what the model was trained on")

// RadiometryError reports a scene whose radiometry does not match the
// model's. errors.Is(err, ErrRadiometry) holds for it.
type RadiometryError struct{ Model, Scene Radiometry }

func (e *RadiometryError) Error() string {
	return fmt.Sprintf("the scene holds %s, the model was trained on %s", e.Scene, e.Model)
}

// Is makes errors.Is(err, ErrRadiometry) true.
func (e *RadiometryError) Is(target error) bool { return target == ErrRadiometry }

// ConvertRadiometry returns the factor that turns the scene's values into
// the model's (1 when nothing is to be done), and a sentence saying what
// was converted ("" when nothing was). Where either side's quantity is
// unknown nothing can be checked (gain 1). Reflectance on two known scales
// is converted (0-1 into 0-10000 is a gain of 10000); other differences (a
// radiance scene for a reflectance model, radiance in other units) are a
// *RadiometryError.
func ConvertRadiometry(model, scene Radiometry) (gain float64, note string, err error) {
	if !model.Known() || !scene.Known() {
		return 1, "", nil
	}
	if model.Quantity != scene.Quantity {
		return 0, "", &RadiometryError{Model: model, Scene: scene}
	}
	switch model.Quantity {
	case QuantityReflectance:
		for _, sc := range []float64{model.Scale, scene.Scale} {
			if sc != 0 {
				if err := CheckScale(sc); err != nil {
					return 0, "", err
				}
			}
		}
		if model.Scale > 0 && scene.Scale > 0 && model.Scale != scene.Scale {
			g := model.Scale / scene.Scale
			return g, fmt.Sprintf("the scene's %s is converted to the model's %s (x%s)", scene, model, strconv.FormatFloat(g, 'g', -1, 64)), nil
		}
	case QuantityRadiance:
		if model.Units != "" && scene.Units != "" && normUnits(model.Units) != normUnits(scene.Units) {
			return 0, "", &RadiometryError{Model: model, Scene: scene}
		}
	}
	return 1, "", nil
}

// normUnits folds spelling differences of a units string (case, spaces, '^', '*').
func normUnits(u string) string {
	u = strings.ToLower(u)
	return strings.NewReplacer(" ", "", "^", "", "*", "", "µ", "u", "μ", "u").Replace(u)
}
