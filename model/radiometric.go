package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// TiltShape is the shape of a smooth spectral tilt over the band axis
// (Radiometric.Tilt): a function of u = band/(bands-1) in [0, 1] with
// values in [-1, 1].
type TiltShape string

// Tilt shapes.
const (
	// TiltLinear rises from -1 at the first band to +1 at the last: a
	// tilt of 0.1 scales the first band by 0.9 and the last by 1.1.
	TiltLinear TiltShape = "linear"
	// TiltBow is +1 in the middle of the spectrum and -1 at both ends.
	TiltBow TiltShape = "bow"
	// TiltWave is one period of a sine over the spectrum (0 at both ends
	// and the middle, +1 at a quarter, -1 at three quarters).
	TiltWave TiltShape = "wave"
)

// TiltShapes are the shapes augmentation draws from.
var TiltShapes = []TiltShape{TiltLinear, TiltBow, TiltWave}

// at is the shape's value at u in [0, 1].
func (t TiltShape) at(u float64) float64 {
	switch t {
	case TiltBow:
		x := 2*u - 1
		return 1 - 2*x*x
	case TiltWave:
		return math.Sin(2 * math.Pi * u)
	}
	return 2*u - 1
}

// Radiometric is a change of a whole scene of the kind that separates two
// acquisitions of the same ground: a gain, a smooth spectral tilt, an
// additive offset (path radiance), sensor noise and a shift of the band
// axis (calibration drift). Apply computes, per pixel and band b,
//
//	out[b] = Gain * (1 + Tilt*shape(b)) * in(b+BandShift) + Offset*mean[b] + Noise*mean[b]*N(0,1)
//
// where mean[b] is the band's mean over the scene's valid pixels and
// in(b+BandShift) is the spectrum at that band position, interpolated
// linearly between bands for a fractional shift and clamped to the first
// and last band. The zero value
// but Gain (0 = 1) changes nothing.
type Radiometric struct {
	Gain      float64   // brightness factor (0 = 1)
	Tilt      float64   // tilt amplitude: the shape's +-1 scales by 1 +- Tilt
	TiltShape TiltShape // "" = TiltLinear
	Offset    float64   // additive offset as a fraction of each band's mean
	Noise     float64   // Gaussian noise standard deviation as a fraction of each band's mean
	BandShift float64   // out[b] takes the spectrum at band b+BandShift (edge bands repeat)
	Reverse   bool      // bands in reverse order (applied before the rest)
}

// IsIdentity reports whether r changes nothing.
func (r Radiometric) IsIdentity() bool {
	return (r.Gain == 0 || r.Gain == 1) && r.Tilt == 0 && r.Offset == 0 && r.Noise == 0 && r.BandShift == 0 && !r.Reverse
}

// String names the change ("gain 0.9, tilt +10% linear").
func (r Radiometric) String() string {
	var parts []string
	if r.Reverse {
		parts = append(parts, "bands reversed")
	}
	if r.Gain != 0 && r.Gain != 1 {
		parts = append(parts, fmt.Sprintf("gain %g", r.Gain))
	}
	if r.Tilt != 0 {
		shape := r.TiltShape
		if shape == "" {
			shape = TiltLinear
		}
		parts = append(parts, fmt.Sprintf("tilt %+g%% %s", 100*r.Tilt, shape))
	}
	if r.Offset != 0 {
		parts = append(parts, fmt.Sprintf("offset %+g%%", 100*r.Offset))
	}
	if r.Noise != 0 {
		parts = append(parts, fmt.Sprintf("noise %g%%", 100*r.Noise))
	}
	if r.BandShift != 0 {
		parts = append(parts, fmt.Sprintf("band shift %+g", r.BandShift))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// BandMeans is each band's mean over the valid, finite values of s.
func BandMeans(s Scene) []float64 {
	if s.stream != nil {
		return slices.Clone(s.stream.means) // its first pass's
	}
	sum := make([]float64, s.Bands)
	n := make([]float64, s.Bands)
	for i := 0; i < s.Rows*s.Cols; i++ {
		if !s.valid(i) {
			continue
		}
		for b, v := range s.Data[i*s.Bands : (i+1)*s.Bands] {
			if x := float64(v); !math.IsNaN(x) && !math.IsInf(x, 0) {
				sum[b] += x
				n[b]++
			}
		}
	}
	for b := range sum {
		if n[b] > 0 {
			sum[b] /= n[b]
		}
	}
	return sum
}

// Apply returns a copy of s changed by r. means are the band means the
// offset and noise are relative to (nil = BandMeans(s)); rng draws the
// noise (nil with Noise = 0). Invalid pixels are copied unchanged.
func (r Radiometric) Apply(s Scene, means []float64, rng *rand.Rand) Scene {
	out := s
	out.Data = make([]float32, len(s.Data))
	r.applyInto(out.Data, s, means, rng)
	return out
}

// bandPlan is a Radiometric for a scene of a given number of bands, per
// output band b: the source bands src[b] and src2[b] interpolated with
// weight w2[b] (the band shift, reversal), the factor (gain and tilt), the
// additive offset and the noise's standard deviation sigma. The host
// (applyInto) and the training graph (augNodes) apply the same plan.
type bandPlan struct {
	src, src2          []int32
	w2, factor, offset []float32
	sigma              []float64
}

// plan is r's bandPlan for bands bands; means are the band means the offset
// and noise are relative to (nil: no offset or noise).
func (r Radiometric) plan(bands int, means []float64) bandPlan {
	B := bands
	gain := r.Gain
	if gain == 0 {
		gain = 1
	}
	shape := r.TiltShape
	if shape == "" {
		shape = TiltLinear
	}
	p := bandPlan{src: make([]int32, B), src2: make([]int32, B), w2: make([]float32, B),
		factor: make([]float32, B), offset: make([]float32, B), sigma: make([]float64, B)}
	for b := 0; b < B; b++ {
		pos := min(max(float64(b)+r.BandShift, 0), float64(B-1))
		j := int(math.Floor(pos))
		j2 := min(j+1, B-1)
		p.w2[b] = float32(pos - float64(j))
		if r.Reverse {
			// Reversed first, then shifted along the reversed axis.
			j, j2 = B-1-j, B-1-j2
		}
		p.src[b], p.src2[b] = int32(j), int32(j2)
		u := 0.0
		if B > 1 {
			u = float64(b) / float64(B-1)
		}
		p.factor[b] = float32(gain * (1 + r.Tilt*shape.at(u)))
		if means != nil {
			p.offset[b] = float32(r.Offset * means[b])
			p.sigma[b] = r.Noise * math.Abs(means[b])
		}
	}
	return p
}

// applyInto writes s changed by r into dst (len(s.Data)).
func (r Radiometric) applyInto(dst []float32, s Scene, means []float64, rng *rand.Rand) {
	B := s.Bands
	if means == nil && (r.Offset != 0 || r.Noise != 0) {
		means = BandMeans(s)
	}
	p := r.plan(B, means)
	for i := 0; i < s.Rows*s.Cols; i++ {
		in, out := s.Data[i*B:(i+1)*B], dst[i*B:(i+1)*B]
		if !s.valid(i) {
			copy(out, in)
			continue
		}
		for b := range out {
			x := in[p.src[b]]
			if p.w2[b] != 0 {
				x += p.w2[b] * (in[p.src2[b]] - x)
			}
			v := p.factor[b]*x + p.offset[b]
			if r.Noise != 0 && rng != nil {
				v += float32(p.sigma[b] * rng.NormFloat64())
			}
			out[b] = v
		}
	}
}

// Augment configures radiometric augmentation during training: at each
// training step, with probability Prob, the whole training scene is
// changed by a Radiometric drawn at random within these bounds before it is
// normalised (with the clean scene's statistics) and fed to the network.
// The labels, the training pixels and the forward pass are unchanged, so
// augmentation changes what the network learns, not how it computes.
// The zero value is off.
type Augment struct {
	Prob      float64 // share of steps that are augmented (0 = off)
	Gain      float64 // gain drawn log-uniformly in [1/(1+Gain), 1+Gain]
	Tilt      float64 // tilt amplitude drawn uniformly in [-Tilt, Tilt], shape uniformly of TiltShapes
	Offset    float64 // offset drawn uniformly in [-Offset, Offset] (fraction of each band's mean)
	Noise     float64 // noise level drawn uniformly in [0, Noise] (fraction of each band's mean)
	BandShift float64 // band shift drawn uniformly in [-BandShift, BandShift] (fractions interpolate)
	// CleanTail is the share of the last epochs trained without
	// augmentation, so that the prototype bank and the last updates see the
	// scene as it is.
	CleanTail float64
	// ImageNorm normalises an augmented step with its own GroupNorm
	// statistics, as the paper's training does, instead of the clean
	// scene's (the default; see trainer.augExec).
	ImageNorm bool
	// Crop is the share of steps that see only a sub-area of the scene:
	// the scene cut across its rows or columns, at a multiple of Stride,
	// keeping 40-75% of it on one side, the rest no-data for that step
	// (its training pixels out of the loss). A new acquisition often covers
	// another part of the ground, with another mix of classes around each
	// pixel, and the paper encoder's full-resolution context learns the
	// training scene's mix unless it is varied. Drawn apart from the
	// radiometric change (its own random source), also off in the clean
	// tail.
	Crop float64
}

// On reports whether augmentation changes any step.
func (a Augment) On() bool { return a.radiometricOn() || a.Crop > 0 }

// radiometricOn reports whether augmentation changes the values of any step.
func (a Augment) radiometricOn() bool {
	return a.Prob > 0 && (a.Gain > 0 || a.Tilt > 0 || a.Offset > 0 || a.Noise > 0 || a.BandShift > 0)
}

// validate checks the bounds.
func (a Augment) validate() error {
	switch {
	case a.Prob < 0 || a.Prob > 1:
		return fmt.Errorf("augmentation probability %g: must be in [0,1]", a.Prob)
	case a.Gain < 0 || a.Tilt < 0 || a.Tilt >= 1 || a.Offset < 0 || a.Noise < 0:
		return fmt.Errorf("augmentation bounds gain %g, tilt %g, offset %g, noise %g: must be non-negative (tilt below 1)", a.Gain, a.Tilt, a.Offset, a.Noise)
	case a.BandShift < 0:
		return fmt.Errorf("augmentation band shift %g: must be non-negative", a.BandShift)
	case a.CleanTail < 0 || a.CleanTail > 1:
		return fmt.Errorf("augmentation clean tail %g: must be in [0,1]", a.CleanTail)
	case a.Crop < 0 || a.Crop > 1:
		return fmt.Errorf("augmentation crop share %g: must be in [0,1]", a.Crop)
	}
	return nil
}

// draw picks one step's change: the identity with probability 1-Prob.
func (a Augment) draw(rng *rand.Rand) Radiometric {
	if !a.radiometricOn() || rng.Float64() >= a.Prob {
		return Radiometric{}
	}
	r := Radiometric{Gain: 1}
	if a.Gain > 0 {
		l := math.Log(1 + a.Gain)
		r.Gain = math.Exp((2*rng.Float64() - 1) * l)
	}
	if a.Tilt > 0 {
		r.Tilt = (2*rng.Float64() - 1) * a.Tilt
		r.TiltShape = TiltShapes[rng.IntN(len(TiltShapes))]
	}
	if a.Offset > 0 {
		r.Offset = (2*rng.Float64() - 1) * a.Offset
	}
	if a.Noise > 0 {
		r.Noise = rng.Float64() * a.Noise
	}
	if a.BandShift > 0 {
		r.BandShift = (2*rng.Float64() - 1) * a.BandShift
	}
	return r
}

// String writes a in the form ParseAugment reads ("off" when it is off).
func (a Augment) String() string {
	if !a.On() {
		return "off"
	}
	s := fmt.Sprintf("p=%g,gain=%g,tilt=%g,offset=%g,noise=%g,shift=%g,tail=%g", a.Prob, a.Gain, a.Tilt, a.Offset, a.Noise, a.BandShift, a.CleanTail)
	if a.ImageNorm {
		s += ",norm=image"
	}
	if a.Crop > 0 {
		s += fmt.Sprintf(",crop=%g", a.Crop)
	}
	return s
}

// ParseAugment reads an augmentation setting: "off" (or "none", "0"), or
// comma-separated KEY=VALUE items of p (Prob), gain, tilt, offset, noise
// shift (BandShift), tail (CleanTail), crop (Crop) and norm (clean, the
// default, or image: ImageNorm); numbers not given are 0.
func ParseAugment(spec string) (Augment, error) {
	spec = strings.TrimSpace(spec)
	switch strings.ToLower(spec) {
	case "off", "none", "0", "":
		return Augment{}, nil
	}
	var a Augment
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return Augment{}, fmt.Errorf("augmentation %q: item %q is not KEY=VALUE", spec, item)
		}
		if seen[k] {
			return Augment{}, fmt.Errorf("augmentation %q: %s given twice", spec, k)
		}
		seen[k] = true
		if k == "norm" {
			switch strings.ToLower(v) {
			case "clean":
				a.ImageNorm = false
			case "image":
				a.ImageNorm = true
			default:
				return Augment{}, fmt.Errorf("augmentation %q: norm=%q: want clean or image", spec, v)
			}
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return Augment{}, fmt.Errorf("augmentation %q: %s=%q is not a number", spec, k, v)
		}
		switch k {
		case "p":
			a.Prob = f
		case "gain":
			a.Gain = f
		case "tilt":
			a.Tilt = f
		case "offset":
			a.Offset = f
		case "noise":
			a.Noise = f
		case "shift":
			a.BandShift = f
		case "tail":
			a.CleanTail = f
		case "crop":
			a.Crop = f
		default:
			return Augment{}, fmt.Errorf("augmentation %q: unknown key %q (want p, gain, tilt, offset, noise, shift, tail, crop, norm)", spec, k)
		}
	}
	if err := a.validate(); err != nil {
		return Augment{}, fmt.Errorf("augmentation %q: %w", spec, err)
	}
	return a, nil
}
