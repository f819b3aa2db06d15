package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pnec/pnec/model/internal/kernels"
)

func TestRadiometricApply(t *testing.T) {
	// One valid pixel of 5 bands 10..50 and one invalid pixel.
	s := Scene{Rows: 1, Cols: 2, Bands: 5, Data: []float32{10, 20, 30, 40, 50, 1, 2, 3, 4, 5}, Valid: []bool{true, false}}
	means := []float64{100, 100, 100, 100, 100}
	for _, tc := range []struct {
		name string
		r    Radiometric
		want []float32
	}{
		{"identity", Radiometric{}, []float32{10, 20, 30, 40, 50}},
		{"gain", Radiometric{Gain: 0.5}, []float32{5, 10, 15, 20, 25}},
		{"linear tilt", Radiometric{Tilt: 0.1}, []float32{9, 19, 30, 42, 55}},
		{"bow tilt", Radiometric{Tilt: 0.1, TiltShape: TiltBow}, []float32{9, 21, 33, 42, 45}}, // +1 in the middle, +0.5 at a quarter
		{"offset", Radiometric{Offset: 0.03}, []float32{13, 23, 33, 43, 53}},
		{"shift +1", Radiometric{BandShift: 1}, []float32{20, 30, 40, 50, 50}},
		{"shift -2", Radiometric{BandShift: -2}, []float32{10, 10, 10, 20, 30}},
		{"shift +0.5", Radiometric{BandShift: 0.5}, []float32{15, 25, 35, 45, 50}},
		{"reverse", Radiometric{Reverse: true}, []float32{50, 40, 30, 20, 10}},
		{"reverse, shift +1", Radiometric{Reverse: true, BandShift: 1}, []float32{40, 30, 20, 10, 10}},
		{"reverse, shift +0.5", Radiometric{Reverse: true, BandShift: 0.5}, []float32{45, 35, 25, 15, 10}},
		{"gain and offset", Radiometric{Gain: 2, Offset: -0.1}, []float32{10, 30, 50, 70, 90}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.Apply(s, means, nil)
			for b, w := range tc.want {
				if math.Abs(float64(got.Data[b]-w)) > 1e-4 {
					t.Errorf("band %d: got %g, want %g (all %v)", b, got.Data[b], w, got.Data[:5])
				}
			}
			for b := 5; b < 10; b++ {
				if got.Data[b] != s.Data[b] {
					t.Errorf("invalid pixel band %d changed: got %g, want %g", b-5, got.Data[b], s.Data[b])
				}
			}
			if tc.r.IsIdentity() != (tc.name == "identity") {
				t.Errorf("IsIdentity() = %v", tc.r.IsIdentity())
			}
		})
	}
	// Noise: zero mean, standard deviation Noise x mean, reproducible.
	big := Scene{Rows: 100, Cols: 100, Bands: 1, Data: make([]float32, 10000)}
	for i := range big.Data {
		big.Data[i] = 200
	}
	r := Radiometric{Noise: 0.05}
	a := r.Apply(big, nil, rand.New(rand.NewPCG(1, 2)))
	b := r.Apply(big, nil, rand.New(rand.NewPCG(1, 2)))
	var sum, sq float64
	for i, v := range a.Data {
		if v != b.Data[i] {
			t.Fatalf("noise not reproducible at %d: %g vs %g", i, v, b.Data[i])
		}
		sum += float64(v - 200)
		sq += float64(v-200) * float64(v-200)
	}
	n := float64(len(a.Data))
	if m, sd := sum/n, math.Sqrt(sq/n); math.Abs(m) > 0.3 || math.Abs(sd-10) > 0.5 {
		t.Errorf("noise: got mean %.3f sd %.3f, want 0 and 10", m, sd)
	}
}

func TestAugmentDraw(t *testing.T) {
	a := Augment{Prob: 0.5, Gain: 0.25, Tilt: 0.15, Offset: 0.05, Noise: 0.03, BandShift: 1, CleanTail: 0.1}
	rng := rand.New(rand.NewPCG(3, 4))
	identity := 0
	for range 2000 {
		r := a.draw(rng)
		if r.IsIdentity() {
			identity++
			continue
		}
		if r.Gain < 1/1.25-1e-9 || r.Gain > 1.25+1e-9 || math.Abs(r.Tilt) > 0.15 || math.Abs(r.Offset) > 0.05 ||
			r.Noise < 0 || r.Noise > 0.03 || math.Abs(r.BandShift) > 1 {
			t.Fatalf("draw outside the bounds: %+v", r)
		}
	}
	if identity < 900 || identity > 1100 {
		t.Errorf("%d of 2000 steps unchanged, want about 1000 (p = 0.5)", identity)
	}
	if r := (Augment{}).draw(rng); !r.IsIdentity() {
		t.Errorf("off: drew %+v", r)
	}
}

func TestParseAugment(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Augment
		wantErr bool
	}{
		{"off", Augment{}, false},
		{"", Augment{}, false},
		{"p=0.8,gain=0.25,tilt=0.15,offset=0.05,noise=0.03,shift=1,tail=0.1", Augment{Prob: 0.8, Gain: 0.25, Tilt: 0.15, Offset: 0.05, Noise: 0.03, BandShift: 1, CleanTail: 0.1}, false},
		{" P = 1 , gain=0.1", Augment{Prob: 1, Gain: 0.1}, false},
		{"p=2", Augment{}, true},
		{"gain=-0.1", Augment{}, true},
		{"tilt=1", Augment{}, true},
		{"shift=1.5", Augment{BandShift: 1.5}, false},
		{"tail=2", Augment{}, true},
		{"gain=0.2x", Augment{}, true},
		{"gain=NaN", Augment{}, true},
		{"gain", Augment{}, true},
		{"gain=0.1,gain=0.2", Augment{}, true},
		{"p=1,gain=0.1,norm=image", Augment{Prob: 1, Gain: 0.1, ImageNorm: true}, false},
		{"p=1,gain=0.1,norm=clean", Augment{Prob: 1, Gain: 0.1}, false},
		{"p=1,norm=batch", Augment{}, true},
		{"bright=0.1", Augment{}, true},
		{"p=0.8,tilt=0.15,crop=0.5", Augment{Prob: 0.8, Tilt: 0.15, Crop: 0.5}, false},
		{"crop=0.3", Augment{Crop: 0.3}, false},
		{"crop=1.5", Augment{}, true},
		{"crop=-0.1", Augment{}, true},
	} {
		got, err := ParseAugment(tc.in)
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("ParseAugment(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	for _, a := range []Augment{
		{Prob: 0.8, Gain: 0.25, Tilt: 0.15, Offset: 0.05, Noise: 0.03, BandShift: 1, CleanTail: 0.1},
		{Prob: 0.8, Tilt: 0.15, CleanTail: 0.1, ImageNorm: true, Crop: 0.5},
		{Crop: 0.25},
	} {
		if got, err := ParseAugment(a.String()); err != nil || got != a {
			t.Errorf("round trip of %q: %+v, %v", a.String(), got, err)
		}
	}
}

// TestAugmentCrop checks the sub-areas of Augment.Crop: a cut across rows or
// columns at a multiple of Stride keeping 40-75% of the scene on either
// side, the rest no-data for the step; the step's training pixels outside
// out of the loss, its anchors and valid cells inside only; and the
// radiometric changes the same as without sub-areas.
func TestAugmentCrop(t *testing.T) {
	s, labels := synthScene(37, 30, 6, 3, 9)
	s.Valid = make([]bool, s.Rows*s.Cols)
	for i := range s.Valid {
		s.Valid[i] = i%11 != 0 // some no-data of the scene's own
	}
	var trainIdx []int
	var ytrain []int32
	for i, l := range labels {
		if l > 0 && i%5 == 0 {
			trainIdx = append(trainIdx, i)
			ytrain = append(ytrain, l-1)
		}
	}
	in := newInputSpec(InputShape, 0, nil, nil)
	base := Augment{Prob: 0.8, Tilt: 0.1, Noise: 0.02, CleanTail: 0.1}
	withCrop := base
	withCrop.Crop = 0.5
	plain := newAugmenter(base, s, in, EncoderCell, 7)
	a := newAugmenter(withCrop, s, in, EncoderCell, 7)
	td := newTrainData(s, in, trainIdx, ytrain, EncoderCell, false)
	defer td.finalize()
	const epochs = 400
	crops, sides := 0, map[string]int{}
	for epoch := 1; epoch <= epochs; epoch++ {
		want, wantOK := plain.nextScene(epoch, epochs)
		got, ok := a.nextScene(epoch, epochs)
		if a.cropped != (ok && got.Valid != nil && &got.Valid[0] == &a.valid[0]) {
			t.Fatalf("epoch %d: cropped %v, scene's mask the sub-area's %v", epoch, a.cropped, ok && got.Valid != nil)
		}
		if wantOK && (!ok || &got.Data[0] != &a.buf[0] || !slices.Equal(want.Data, got.Data)) {
			t.Fatalf("epoch %d: the radiometric change differs with sub-areas", epoch)
		}
		if !wantOK && ok && &got.Data[0] != &s.Data[0] {
			t.Fatalf("epoch %d: a sub-area alone changed the values", epoch)
		}
		if float64(epoch) > epochs*0.9 && a.cropped {
			t.Fatalf("epoch %d: a sub-area in the clean tail", epoch)
		}
		if !a.cropped {
			continue
		}
		crops++
		// The sub-area is a rectangle touching three sides of the scene.
		r0, r1, c0, c1 := s.Rows, 0, s.Cols, 0
		for i, v := range a.valid {
			if !v {
				continue
			}
			r, c := i/s.Cols, i%s.Cols
			r0, r1, c0, c1 = min(r0, r), max(r1, r+1), min(c0, c), max(c1, c+1)
		}
		for i, v := range a.valid {
			r, c := i/s.Cols, i%s.Cols
			if inside := r >= r0 && r < r1 && c >= c0 && c < c1; v != (inside && s.Valid[i]) {
				t.Fatalf("epoch %d: pixel %d valid %v, inside [%d,%d)x[%d,%d) %v", epoch, i, v, r0, r1, c0, c1, inside)
			}
		}
		var cut, keep float64
		switch {
		case r0 == 0 && r1 == s.Rows && c0 == 0:
			cut, keep = float64(c1), float64(c1)/float64(s.Cols)
			sides["left"]++
		case r0 == 0 && r1 == s.Rows && c1 == s.Cols:
			cut, keep = float64(c0), 1-float64(c0)/float64(s.Cols)
			sides["right"]++
		case c0 == 0 && c1 == s.Cols && r0 == 0:
			cut, keep = float64(r1), float64(r1)/float64(s.Rows)
			sides["top"]++
		case c0 == 0 && c1 == s.Cols && r1 == s.Rows:
			cut, keep = float64(r0), 1-float64(r0)/float64(s.Rows)
			sides["bottom"]++
		default:
			t.Fatalf("epoch %d: sub-area [%d,%d)x[%d,%d) is not a cut of the scene", epoch, r0, r1, c0, c1)
		}
		if int(cut)%Stride != 0 || keep < 0.3 || keep > 0.85 {
			t.Fatalf("epoch %d: cut at %g (not a multiple of %d) or keeps %.2f of the scene", epoch, cut, Stride, keep)
		}
		step := a.cropStep(td, trainIdx, ytrain, false)
		ytr, anchor, cellMask := step.ytr.Value().([]int32), step.anchor.Value().([]int32), step.cellMask.Value().([]float32)
		for t2, i := range trainIdx {
			if want := map[bool]int32{true: ytrain[t2], false: -1}[a.valid[i]]; ytr[t2] != want {
				t.Fatalf("epoch %d: training pixel %d class %d, want %d", epoch, i, ytr[t2], want)
			}
		}
		ws := lowRes(s.Cols, EncoderCell)
		for cell, k := range anchor {
			cr, cc := cell/ws, cell%ws
			in := cr*Stride >= r0 && cr*Stride < r1 && cc*Stride >= c0 && cc*Stride < c1
			if !in && (k != -1 || cellMask[cell] != 0) {
				t.Fatalf("epoch %d: cell %d outside the sub-area has anchor %d, valid %g", epoch, cell, k, cellMask[cell])
			}
		}
		a.done()
	}
	if crops < epochs*0.9*0.4 || crops > epochs*0.9*0.6 {
		t.Errorf("%d of %d steps on a sub-area, want about half", crops, int(epochs*0.9))
	}
	if len(sides) != 4 {
		t.Errorf("sub-areas on the sides %v, want all four", sides)
	}
}

func FuzzParseAugment(f *testing.F) {
	for _, s := range []string{"off", "p=0.8,gain=0.25,tilt=0.15,offset=0.05,noise=0.03,shift=1", "gain=", "=,", "shift=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		a, err := ParseAugment(spec)
		if err != nil {
			return
		}
		// Whatever parses is valid and survives its own String.
		if err := a.validate(); err != nil {
			t.Fatalf("%q parsed to invalid %+v: %v", spec, a, err)
		}
		b, err := ParseAugment(a.String())
		if err != nil || (a.On() && b != a) {
			t.Fatalf("%q: %+v does not round-trip: %+v, %v", spec, a, b, err)
		}
	})
}

// TestInputModes checks each input mode's channels for one spectrum: the
// shape and SNV inputs are the same for any gain (SNV also for any common
// offset), the stretch is not.
func TestInputModes(t *testing.T) {
	v := []float32{100, 200, 300, 400}
	lo, hi := []float32{0, 0, 0, 0}, []float32{1000, 1000, 1000, 1000}
	for _, mode := range []string{InputStretch, InputShape, InputStretchShape, InputSNV} {
		in := newInputSpec(mode, 0, lo, hi)
		ch := inputChannels(mode, len(v))
		a, b, c := make([]float32, ch), make([]float32, ch), make([]float32, ch)
		in.add(a, v)
		in.add(b, []float32{50, 100, 150, 200})  // gain 0.5
		in.add(c, []float32{150, 250, 350, 450}) // +50 in every band
		gainInvariant := mode == InputShape || mode == InputSNV
		same := func(x, y []float32) bool {
			for i := range x {
				if math.Abs(float64(x[i]-y[i])) > 1e-6 {
					return false
				}
			}
			return true
		}
		if same(a, b) != gainInvariant {
			t.Errorf("%s: gain 0.5 gives %v from %v; invariant %v", mode, b, a, gainInvariant)
		}
		if same(a, c) != (mode == InputSNV) {
			t.Errorf("%s: offset +50 gives %v from %v", mode, c, a)
		}
	}
	// Shape: the spectrum over its mean, halved.
	in := newInputSpec(InputShape, 0, lo, hi)
	got := make([]float32, 4)
	in.add(got, v)
	for b, w := range []float32{0.2, 0.4, 0.6, 0.8} {
		if math.Abs(float64(got[b]-w)) > 1e-6 {
			t.Errorf("shape band %d: got %g, want %g", b, got[b], w)
		}
	}
}

// TestTrainAugmented: augmented training (clean-scene statistics, and the
// per-image variant) runs, is deterministic for a seed, and differs from
// training without augmentation.
func TestTrainAugmented(t *testing.T) {
	s, labels := synthScene(24, 20, 10, 3, 5)
	train := func(a Augment) *Model {
		cfg := tinyConfig(8)
		cfg.Input = InputStretchShape
		cfg.Augment = a
		m, err := Train(t.Context(), s, labels, TrainOptions{Config: cfg, TrainPerClass: 6, Backend: "go"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	same := func(x, y *Model) bool {
		for i := range x.params {
			for j, v := range x.params[i].Data {
				if math.Float32bits(v) != math.Float32bits(y.params[i].Data[j]) {
					return false
				}
			}
		}
		return true
	}
	aug := Augment{Prob: 0.7, Gain: 0.2, Tilt: 0.1, Offset: 0.03, Noise: 0.02, BandShift: 1, CleanTail: 0.25}
	a, b := train(aug), train(aug)
	if !same(a, b) {
		t.Error("augmented training is not deterministic for one seed")
	}
	imageNorm := aug
	imageNorm.ImageNorm = true
	crop := aug
	crop.Crop = 0.5
	cropped := train(crop)
	if !same(cropped, train(crop)) {
		t.Error("training on sub-areas is not deterministic for one seed")
	}
	plain := train(Augment{})
	for name, m := range map[string]*Model{"per-image statistics": train(imageNorm), "no augmentation": plain, "sub-areas": cropped} {
		if same(m, a) {
			t.Errorf("%s: same weights as augmented training with the clean statistics", name)
		}
	}
	// The paper encoder trains its full-resolution stage on pnec's kernels
	// with per-image statistics (fullResTraining): sub-areas reach them as
	// the scene's valid mask.
	cfg := tinyConfig(8)
	cfg.Encoder, cfg.Input = EncoderPaper, InputShape
	cfg.Augment = Augment{Prob: 0.5, Tilt: 0.1, CleanTail: 0.25, ImageNorm: true, Crop: 1}
	if !kernels.FullResAvailable(cfg.Hidden) {
		t.Log("no AVX-512: pnec's kernels are not built for this CPU, the graph trains the paper encoder")
	} else if !fullResTraining(cfg) {
		t.Fatalf("%+v does not train on the kernels", cfg)
	}
	if _, err := Train(t.Context(), s, labels, TrainOptions{Config: cfg, TrainPerClass: 6, Backend: "go"}); err != nil {
		t.Errorf("paper encoder on sub-areas: %v", err)
	}
	if a.Config().Augment != aug || a.Config().Input != InputStretchShape {
		t.Errorf("config %+v does not record the input and augmentation", a.Config())
	}
}
