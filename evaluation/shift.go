package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/tiling"
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

// ShiftOptions configure RunShift.
type ShiftOptions struct {
	Runs      int   // models trained (0 = 5)
	FirstSeed int64 // run i uses FirstSeed+i (0 = model.DefaultSeed)
	Train     model.TrainOptions
	Eval      EvalOptions
	// Cases is the suite (nil = ShiftSuite()).
	Cases []ShiftCase
	// Disjoint adds the spatially disjoint split: per run, one more model
	// trained on one half of the scene (TrainPerClass pixels per class drawn
	// with SplitSeed there) and scored on the other half.
	Disjoint bool
	// Other, when set, is a scene of other land cover (resampled to the
	// model's bands with ResampleBands when they differ): a case of its own,
	// without accuracy. OtherName names it.
	Other     *model.Scene
	OtherName string
	Progress  func(ExperimentProgress)
	Logger    *slog.Logger // nil = discard
}

// ShiftRun is one model's result on one case.
type ShiftRun struct {
	Seed int64
	// OA is the overall accuracy after recovery on the case's test pixels
	// (NaN for another scene); RefOA that of the clean scene's prediction on
	// the same pixels (the whole scene, or the sub-area's pixels); Drop is
	// RefOA - OA.
	OA, RefOA, Drop float64
	TestPixels      int
	// Drift is the model's drift measure of the changed scene, as its
	// product would carry it (nil for a model without drift statistics).
	Drift *model.Drift
}

// DriftAlarmPoints is the OA drop of the drift target: a scene that loses
// more than this must not be verdict ok, one that loses less should be.
const DriftAlarmPoints = 5.0

// missed reports whether the run's verdict is ok although its scene lost
// more than DriftAlarmPoints (or is another scene).
func (r ShiftRun) missed(c ShiftCase) bool {
	if r.Drift == nil {
		return false
	}
	bad := c.Other || 100*r.Drop > DriftAlarmPoints
	return bad && r.Drift.Verdict == model.DriftOK
}

// held reports whether the run's scene lost at most DriftAlarmPoints.
func (r ShiftRun) held(c ShiftCase) bool {
	return !c.Other && !math.IsNaN(r.Drop) && 100*r.Drop <= DriftAlarmPoints
}

// falseAlarm reports whether the verdict is not ok on a scene that must be
// ok: the clean scene, or a sub-area of it (another class mix, no other
// change) whose OA held.
func (r ShiftRun) falseAlarm(c ShiftCase) bool {
	mustBeOK := c.IsClean() || (c.Area != "" && c.Change.IsIdentity())
	return r.Drift != nil && mustBeOK && r.held(c) && r.Drift.Verdict != model.DriftOK
}

// alarmHeld reports whether the verdict is not ok although the scene's OA
// held (a changed scene the model tolerates: not a false alarm, the scene
// did drift, but counted for the record).
func (r ShiftRun) alarmHeld(c ShiftCase) bool {
	return r.Drift != nil && r.held(c) && r.Drift.Verdict != model.DriftOK
}

// ShiftRow is one case over all runs.
type ShiftRow struct {
	Case     ShiftCase
	Runs     []ShiftRun
	OA, Drop Stat
	MaxDrop  float64 // the largest drop of a run
	// Verdicts counts the runs' drift verdicts; FarShare and
	// ReliabilityRatio are the drift figures' means over runs.
	Verdicts                   map[model.DriftVerdict]int
	FarShare, ReliabilityRatio Stat
	// Missed counts the runs whose verdict is ok on a drop of more than
	// DriftAlarmPoints (or another scene), FalseAlarms those not ok on the
	// clean scene or a sub-area whose OA held, AlarmsHeld those not ok on
	// any scene whose OA held.
	Missed, FalseAlarms, AlarmsHeld int
}

// DriftCheck totals the drift target over the suite.
type DriftCheck struct {
	Runs        int // case runs with a verdict
	Missed      int // verdict ok although OA dropped by more than DriftAlarmPoints (or another scene)
	FalseAlarms int // verdict warn or fail on the clean scene or a sub-area whose OA held
	AlarmsHeld  int // verdict warn or fail on any scene whose OA held (false alarms included)
	MustAlarm   int // case runs that must not be ok
	MustBeOK    int // case runs that must be ok
}

// Met reports whether the drift target holds: no miss and at most one
// false alarm.
func (d DriftCheck) Met() bool { return d.Runs > 0 && d.Missed == 0 && d.FalseAlarms <= 1 }

// DriftCheck totals the drift target over every case and run.
func (e ShiftExperiment) DriftCheck() DriftCheck {
	var d DriftCheck
	for _, r := range e.Cases {
		c := r.Case
		for _, run := range r.Runs {
			if run.Drift == nil {
				continue
			}
			d.Runs++
			if c.Other || 100*run.Drop > DriftAlarmPoints {
				d.MustAlarm++
			}
			if (c.IsClean() || (c.Area != "" && c.Change.IsIdentity())) && run.held(c) {
				d.MustBeOK++
			}
		}
		d.Missed += r.Missed
		d.FalseAlarms += r.FalseAlarms
		d.AlarmsHeld += r.AlarmsHeld
	}
	return d
}

// DisjointSplit is the spatially disjoint split: models trained on one half
// of the scene, scored on the other half and on the test pixels of their
// own half.
type DisjointSplit struct {
	TrainArea, TestArea string
	// SameHalf is the OA on the training half's test pixels, OtherHalf on
	// every labelled pixel of the other half.
	SameHalf, OtherHalf Stat
	Runs                []DisjointRun
}

// DisjointRun is one run of the disjoint split.
type DisjointRun struct {
	Seed                int64
	SameHalf, OtherHalf float64
	TestPixels          int // of the other half
}

// ShiftExperiment is the result of RunShift.
type ShiftExperiment struct {
	Rows, Cols, Bands int
	Classes           []model.Class
	Backend           string
	FirstSeed         int64
	Runs              int
	Config            model.Config
	TrainPerClass     int // of the disjoint split's draw
	TrainSeconds      Stat
	Cases             []ShiftRow
	Disjoint          *DisjointSplit
}

// Clean is the clean scene's row.
func (e ShiftExperiment) Clean() ShiftRow {
	for _, r := range e.Cases {
		if r.Case.IsClean() {
			return r
		}
	}
	return ShiftRow{}
}

// WorstTarget is the target case with the largest mean drop.
func (e ShiftExperiment) WorstTarget() (ShiftRow, bool) {
	var worst ShiftRow
	found := false
	for _, r := range e.Cases {
		if r.Case.Target && (!found || r.Drop.Mean > worst.Drop.Mean) {
			worst, found = r, true
		}
	}
	return worst, found
}

// RunShift trains opts.Runs models on s (seeds FirstSeed, FirstSeed+1, ...)
// and scores each on the changed scenes of the suite: OA after recovery on
// the test pixels (labelled valid pixels that are not training pixels), and
// its drop against the clean scene's prediction on the same pixels.
func RunShift(ctx context.Context, s model.Scene, labels []int32, opts ShiftOptions) (ShiftExperiment, error) {
	if opts.Runs == 0 {
		opts.Runs = 5
	}
	if opts.Runs < 1 {
		return ShiftExperiment{}, fmt.Errorf("shift experiment: %w", errNoRuns)
	}
	if opts.FirstSeed == 0 {
		opts.FirstSeed = model.DefaultSeed
	}
	if len(labels) != s.Rows*s.Cols {
		return ShiftExperiment{}, fmt.Errorf("shift experiment: labels have %d values, the scene %d pixels: %w", len(labels), s.Rows*s.Cols, ErrLabels)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cases := opts.Cases
	if cases == nil {
		cases = ShiftSuite()
	}
	if opts.Other != nil {
		cases = append(slices.Clone(cases), ShiftCase{Name: "other scene: " + opts.OtherName, Families: []string{FamilyOther}, Other: true, Strong: true})
	}
	exp := ShiftExperiment{Rows: s.Rows, Cols: s.Cols, Bands: s.Bands, FirstSeed: opts.FirstSeed, Runs: opts.Runs,
		TrainPerClass: opts.Train.TrainPerClass}
	if exp.TrainPerClass == 0 {
		exp.TrainPerClass = model.DefaultTrainPerClass
	}
	rows := make([]ShiftRow, len(cases))
	for i, c := range cases {
		rows[i].Case = c
	}
	means := model.BandMeans(s)
	var trainSecs []float64
	trainings := opts.Runs
	if opts.Disjoint {
		trainings *= 2
	}
	var disjoint *DisjointSplit
	done := 0
	for run := 0; run < opts.Runs; run++ {
		seed := opts.FirstSeed + int64(run)
		to := opts.Train
		to.Seed = seed
		if to.Config.Hidden == 0 {
			epochs := to.Config.Epochs
			to.Config = model.DefaultConfig()
			if epochs > 0 {
				to.Config.Epochs = epochs
			}
		}
		if opts.Progress != nil {
			p := ExperimentProgress{Variant: model.AblationFull, Run: run + 1, Runs: opts.Runs, Seed: seed, Trainings: done, TotalTrain: trainings}
			to.Progress = func(e model.EpochStats) { p.Epoch = e; opts.Progress(p) }
		}
		start := time.Now()
		m, err := model.Train(ctx, s, labels, to)
		if err != nil {
			return ShiftExperiment{}, fmt.Errorf("shift run %d (seed %d): %w", run+1, seed, err)
		}
		done++
		trainSecs = append(trainSecs, time.Since(start).Seconds())
		exp.Classes, exp.Config = m.Classes(), m.Config()
		if err := shiftRun(ctx, m, s, labels, means, cases, rows, opts, seed, &exp); err != nil {
			return ShiftExperiment{}, fmt.Errorf("shift run %d (seed %d): %w", run+1, seed, err)
		}
		log.Info("shift run done", "run", run+1, "seed", seed, "clean_oa", pct(rows[0].Runs[len(rows[0].Runs)-1].OA),
			"train_s", fmt.Sprintf("%.1f", trainSecs[len(trainSecs)-1]))
		if opts.Disjoint {
			if opts.Progress != nil {
				p := ExperimentProgress{Variant: model.AblationFull, Run: run + 1, Runs: opts.Runs, Seed: seed, Trainings: done, TotalTrain: trainings}
				to.Progress = func(e model.EpochStats) { p.Epoch = e; opts.Progress(p) }
			}
			dr, trainArea, testArea, err := disjointRun(ctx, s, labels, to, opts.Eval)
			if err != nil {
				return ShiftExperiment{}, fmt.Errorf("disjoint split run %d (seed %d): %w", run+1, seed, err)
			}
			done++
			if disjoint == nil {
				disjoint = &DisjointSplit{TrainArea: trainArea, TestArea: testArea}
			}
			dr.Seed = seed
			disjoint.Runs = append(disjoint.Runs, dr)
			log.Info("disjoint split run done", "run", run+1, "seed", seed, "same_half_oa", pct(dr.SameHalf), "other_half_oa", pct(dr.OtherHalf))
		}
	}
	for i := range rows {
		var oa, drop, far, rel []float64
		rows[i].MaxDrop = math.NaN()
		rows[i].Verdicts = map[model.DriftVerdict]int{}
		for _, r := range rows[i].Runs {
			oa = append(oa, r.OA)
			drop = append(drop, r.Drop)
			if !math.IsNaN(r.Drop) && (math.IsNaN(rows[i].MaxDrop) || r.Drop > rows[i].MaxDrop) {
				rows[i].MaxDrop = r.Drop
			}
			if r.Drift != nil {
				rows[i].Verdicts[r.Drift.Verdict]++
				far = append(far, r.Drift.FarShare)
				rel = append(rel, r.Drift.ReliabilityRatio)
			}
			if r.missed(rows[i].Case) {
				rows[i].Missed++
			}
			if r.falseAlarm(rows[i].Case) {
				rows[i].FalseAlarms++
			}
			if r.alarmHeld(rows[i].Case) {
				rows[i].AlarmsHeld++
			}
		}
		rows[i].OA, rows[i].Drop = statOf(oa), statOf(drop)
		rows[i].FarShare, rows[i].ReliabilityRatio = statOf(far), statOf(rel)
	}
	exp.Cases = rows
	exp.TrainSeconds = statOf(trainSecs)
	if disjoint != nil {
		var same, other []float64
		for _, r := range disjoint.Runs {
			same = append(same, r.SameHalf)
			other = append(other, r.OtherHalf)
		}
		disjoint.SameHalf, disjoint.OtherHalf = statOf(same), statOf(other)
		exp.Disjoint = disjoint
	}
	return exp, nil
}

// caseSeed seeds a case's noise from its name and the run, so that every
// candidate model sees the same noisy scenes.
func caseSeed(name string, seed int64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() ^ uint64(seed)
}

// shiftRun scores one trained model on every case.
func shiftRun(ctx context.Context, m *model.Model, s model.Scene, labels []int32, means []float64,
	cases []ShiftCase, rows []ShiftRow, opts ShiftOptions, seed int64, exp *ShiftExperiment) error {
	p, err := model.NewPredictor(m, opts.Eval.Backend)
	if err != nil {
		return err
	}
	defer p.Close()
	exp.Backend = p.Backend()
	rec := m.Recovery()
	if opts.Eval.Recovery.Window > 0 {
		rec = opts.Eval.Recovery
	}
	dense := map[int32]int{}
	for k, c := range m.Classes() {
		dense[int32(c.Value)] = k
	}
	// Test labels: training pixels removed.
	test := slices.Clone(labels)
	for _, i := range m.TrainIndices() {
		test[i] = 0
	}
	ref, err := m.SpectralReference()
	if err != nil || !m.HasDriftStats() {
		ref = nil // no drift figures
	}
	predict := func(sc model.Scene) ([]int, *model.Drift, error) {
		pred, err := p.Predict(ctx, sc)
		if err != nil {
			return nil, nil, err
		}
		var drift *model.Drift
		if ref != nil {
			d, err := m.DriftOf(sc, pred, ref)
			if err != nil {
				return nil, nil, err
			}
			drift = &d
		}
		return recoveredLabels(pred, sc.Valid, rec), drift, nil
	}
	clean, cleanDrift, err := predict(s)
	if err != nil {
		return err
	}
	for i, c := range cases {
		if err := ctx.Err(); err != nil {
			return err
		}
		var sc model.Scene
		var lab []int32
		var cleanLab []int
		switch {
		case c.Other:
			sc = ResampleBands(*opts.Other, s.Bands)
		case c.Area != "":
			r0, c0, nr, nc := areaRect(c.Area, s.Rows, s.Cols)
			sc, lab = cropScene(s, test, r0, c0, nr, nc)
			cleanLab = cropInts(clean, s.Cols, r0, c0, nr, nc)
		default:
			sc, lab, cleanLab = s, test, clean
		}
		if !c.Change.IsIdentity() {
			// Offsets and noise are relative to the training scene's band
			// means, the same for the whole scene and its sub-areas.
			sc = c.Change.Apply(sc, means, rand.New(rand.NewPCG(caseSeed(c.Name, seed), 0x73686674)))
		}
		got, drift := cleanLab, cleanDrift
		if !c.IsClean() {
			if got, drift, err = predict(sc); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
		r := ShiftRun{Seed: seed, OA: math.NaN(), RefOA: math.NaN(), Drop: math.NaN(), Drift: drift}
		if !c.Other {
			r.OA, r.TestPixels = overallAccuracy(got, lab, sc.Valid, dense)
			r.RefOA, _ = overallAccuracy(cleanLab, lab, sc.Valid, dense)
			r.Drop = r.RefOA - r.OA
		}
		rows[i].Runs = append(rows[i].Runs, r)
	}
	return nil
}

// recoveredLabels is the dense class of every pixel after recovery (-1 at
// invalid pixels).
func recoveredLabels(pred model.Prediction, valid []bool, rec model.RecoveryParams) []int {
	k := pred.Classes
	prec := tiling.Recover(pred.Prob, valid, pred.Rows, pred.Cols, k, rec)
	out := make([]int, pred.Rows*pred.Cols)
	for i := range out {
		if valid != nil && !valid[i] {
			out[i] = -1
			continue
		}
		out[i] = argmaxAt(prec, k, i)
	}
	return out
}

func cropInts(v []int, cols, r0, c0, nr, nc int) []int {
	out := make([]int, nr*nc)
	for r := 0; r < nr; r++ {
		copy(out[r*nc:(r+1)*nc], v[(r0+r)*cols+c0:(r0+r)*cols+c0+nc])
	}
	return out
}

// overallAccuracy is the share of labelled valid pixels (labels != 0) whose
// dense class pred matches, and their number (NaN without any).
func overallAccuracy(pred []int, labels []int32, valid []bool, dense map[int32]int) (float64, int) {
	right, total := 0, 0
	for i, v := range labels {
		if v == 0 || (valid != nil && !valid[i]) {
			continue
		}
		k, ok := dense[v]
		total++
		if ok && pred[i] == k {
			right++
		}
	}
	if total == 0 {
		return math.NaN(), 0
	}
	return float64(right) / float64(total), total
}

// errNoHalf is returned when no half of a scene holds every class.
var errNoHalf = errors.New("no half of the scene holds labelled pixels of two classes")

// disjointHalves picks the half to train on: the one whose rarest class
// (of the scene's classes) has the most labelled pixels; the test half is
// the opposite one.
func disjointHalves(s model.Scene, labels []int32) (train, test string, err error) {
	classes := map[int32]bool{}
	for i, v := range labels {
		if v != 0 && (s.Valid == nil || s.Valid[i]) {
			classes[v] = true
		}
	}
	opposite := map[string]string{AreaLeft: AreaRight, AreaRight: AreaLeft, AreaTop: AreaBottom, AreaBottom: AreaTop}
	best := -1
	for _, a := range Areas {
		r0, c0, nr, nc := areaRect(a, s.Rows, s.Cols)
		count := map[int32]int{}
		for r := r0; r < r0+nr; r++ {
			for c := c0; c < c0+nc; c++ {
				i := r*s.Cols + c
				if v := labels[i]; v != 0 && (s.Valid == nil || s.Valid[i]) {
					count[v]++
				}
			}
		}
		rarest := math.MaxInt
		for v := range classes {
			rarest = min(rarest, count[v])
		}
		if len(count) >= 2 && rarest > best {
			best, train, test = rarest, a, opposite[a]
		}
	}
	if train == "" {
		return "", "", errNoHalf
	}
	return train, test, nil
}

// disjointRun trains on one half of s (its own stretch and statistics, as a
// scene of its own, with TrainPerClass pixels per class drawn there) and
// scores the model on the test pixels of that half and on every labelled
// pixel of the other half, each predicted as a scene of its own.
func disjointRun(ctx context.Context, s model.Scene, labels []int32, to model.TrainOptions, eval EvalOptions) (DisjointRun, string, string, error) {
	trainArea, testArea, err := disjointHalves(s, labels)
	if err != nil {
		return DisjointRun{}, "", "", err
	}
	r0, c0, nr, nc := areaRect(trainArea, s.Rows, s.Cols)
	ts, tl := cropScene(s, labels, r0, c0, nr, nc)
	to.TrainMask = nil // drawn in the half
	m, err := model.Train(ctx, ts, tl, to)
	if err != nil {
		return DisjointRun{}, "", "", err
	}
	p, err := model.NewPredictor(m, eval.Backend)
	if err != nil {
		return DisjointRun{}, "", "", err
	}
	defer p.Close()
	rec := m.Recovery()
	if eval.Recovery.Window > 0 {
		rec = eval.Recovery
	}
	dense := map[int32]int{}
	for k, c := range m.Classes() {
		dense[int32(c.Value)] = k
	}
	var out DisjointRun
	pred, err := p.Predict(ctx, ts)
	if err != nil {
		return DisjointRun{}, "", "", err
	}
	same := slices.Clone(tl)
	for _, i := range m.TrainIndices() {
		same[i] = 0
	}
	out.SameHalf, _ = overallAccuracy(recoveredLabels(pred, ts.Valid, rec), same, ts.Valid, dense)
	r0, c0, nr, nc = areaRect(testArea, s.Rows, s.Cols)
	os, ol := cropScene(s, labels, r0, c0, nr, nc)
	if pred, err = p.Predict(ctx, os); err != nil {
		return DisjointRun{}, "", "", err
	}
	out.OtherHalf, out.TestPixels = overallAccuracy(recoveredLabels(pred, os.Valid, rec), ol, os.Valid, dense)
	return out, trainArea, testArea, nil
}

// ShiftTargetPoints is the robustness target: every target case costs at
// most this many points of OA against the clean scene.
const ShiftTargetPoints = 3.0

// WriteText prints the suite as a table (one row per case: OA mean ± std
// and its drop, in percent and points), then the target and the disjoint
// split.
func (e ShiftExperiment) WriteText(w io.Writer) error {
	var b strings.Builder
	cfg := e.Config
	input := cfg.Input
	if input == "" {
		input = model.InputStretch
	}
	fmt.Fprintf(&b, "acquisition-shift suite on a %dx%dx%d scene: %d runs (seeds %d..%d), encoder %s, input %s, augment %s, %d epochs, backend %s, train %s s per run\n",
		e.Rows, e.Cols, e.Bands, e.Runs, e.FirstSeed, e.FirstSeed+int64(e.Runs)-1, cfg.Encoder, input, cfg.Augment, cfg.Epochs, e.Backend, pm(e.TrainSeconds, 1, 1))
	fmt.Fprintln(&b, "OA after recovery on the test pixels (%), mean ± std (population) over runs; drop = OA of the clean scene's prediction on the same pixels - OA, points (mean, and the largest of a run); T = robustness target, S = strong change")
	fmt.Fprintln(&b)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tset\tOA %\tdrop\tmax drop\tfar px %\treliability ratio\tdrift verdicts\t")
	for _, r := range e.Cases {
		set := ""
		switch {
		case r.Case.Target:
			set = "T"
		case r.Case.Strong:
			set = "S"
		}
		mark := ""
		if r.Missed > 0 {
			mark += fmt.Sprintf(" (%d missed)", r.Missed)
		}
		if r.FalseAlarms > 0 {
			mark += fmt.Sprintf(" (%d false alarms)", r.FalseAlarms)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\t\n", r.Case.Name, set, pm(r.OA, 100, 2), points(r.Drop.Mean), points(r.MaxDrop),
			points(r.FarShare.Mean), num2(r.ReliabilityRatio.Mean), verdictCounts(r.Verdicts), mark)
	}
	tw.Flush()
	fmt.Fprintln(&b)
	clean := e.Clean()
	fmt.Fprintf(&b, "clean OA: %s\n", pm(clean.OA, 100, 2))
	if worst, ok := e.WorstTarget(); ok {
		verdict := "met"
		if worst.Drop.Mean*100 > ShiftTargetPoints {
			verdict = fmt.Sprintf("missed by %.2f points", worst.Drop.Mean*100-ShiftTargetPoints)
		}
		fmt.Fprintf(&b, "largest mean drop of a target change: %s points (%s; largest of a run %s); target <= %g points: %s\n",
			points(worst.Drop.Mean), worst.Case.Name, points(worst.MaxDrop), ShiftTargetPoints, verdict)
	}
	if dc := e.DriftCheck(); dc.Runs > 0 {
		verdict := "met"
		if !dc.Met() {
			verdict = "missed"
		}
		fmt.Fprintf(&b, "drift verdicts over %d case runs: %d of %d missed (ok although OA dropped by more than %g points, or another scene), %d false alarms of %d (warn or fail on the clean scene or a sub-area whose OA held); target (no miss, at most one false alarm): %s; warn or fail on %d runs of changed scenes whose OA held (they drifted; the model tolerated it)\n",
			dc.Runs, dc.Missed, dc.MustAlarm, DriftAlarmPoints, dc.FalseAlarms, dc.MustBeOK, verdict, dc.AlarmsHeld-dc.FalseAlarms)
	}
	if d := e.Disjoint; d != nil {
		fmt.Fprintf(&b, "spatially disjoint split (trained on the %s, %d px per class drawn there): OA %s on the %s's test pixels, %s on the %s (random split of the whole scene: %s)\n",
			d.TrainArea, e.TrainPerClass, pm(d.SameHalf, 100, 2), d.TrainArea, pm(d.OtherHalf, 100, 2), d.TestArea, pm(clean.OA, 100, 2))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictCounts writes drift verdict counts as "ok 4, warn 1".
func verdictCounts(v map[model.DriftVerdict]int) string {
	var parts []string
	for _, k := range []model.DriftVerdict{model.DriftOK, model.DriftWarn, model.DriftFail, model.DriftUnknown} {
		if v[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, v[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func num2(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// points formats a 0..1 difference in points of percent ("-" for NaN).
func points(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", 100*v)
}

// WriteJSON writes the suite as one JSON object (ratios 0..1, NaN as null).
func (e ShiftExperiment) WriteJSON(w io.Writer) error {
	type statJSON struct {
		Mean jsonNum `json:"mean"`
		Std  jsonNum `json:"std"`
	}
	st := func(s Stat) statJSON { return statJSON{jsonNum(s.Mean), jsonNum(s.Std)} }
	type driftJSON struct {
		Verdict          string   `json:"verdict"`
		Reasons          []string `json:"reasons,omitempty"`
		FarShare         jsonNum  `json:"far_share"`
		Reliability      jsonNum  `json:"reliability"`
		ReliabilityRatio jsonNum  `json:"reliability_ratio"`
		BrightnessRatio  jsonNum  `json:"brightness_ratio"`
		BandShiftMeanSD  jsonNum  `json:"band_shift_sd_mean"`
		BandShiftMaxSD   jsonNum  `json:"band_shift_sd_max"`
	}
	type runJSON struct {
		Seed       int64      `json:"seed"`
		OA         jsonNum    `json:"oa"`
		RefOA      jsonNum    `json:"clean_oa_same_pixels"`
		Drop       jsonNum    `json:"drop"`
		TestPixels int        `json:"test_pixels"`
		Drift      *driftJSON `json:"drift,omitempty"`
	}
	type caseJSON struct {
		Name     string            `json:"name"`
		Families []string          `json:"families"`
		Change   model.Radiometric `json:"change"`
		Area     string            `json:"area,omitempty"`
		Target   bool              `json:"target"`
		Strong   bool              `json:"strong"`
		Other    bool              `json:"other_scene,omitempty"`
		OA       statJSON          `json:"oa"`
		Drop     statJSON          `json:"drop"`
		MaxDrop  jsonNum           `json:"max_drop"`
		Runs     []runJSON         `json:"runs"`
	}
	type disjointJSON struct {
		TrainArea string   `json:"train_area"`
		TestArea  string   `json:"test_area"`
		SameHalf  statJSON `json:"oa_same_half"`
		OtherHalf statJSON `json:"oa_other_half"`
		Runs      []any    `json:"runs"`
	}
	out := struct {
		Rows, Cols, Bands int           `json:"-"`
		Size              []int         `json:"scene_rows_cols_bands"`
		Classes           []classJSON   `json:"classes"`
		Backend           string        `json:"backend"`
		FirstSeed         int64         `json:"first_seed"`
		Runs              int           `json:"runs"`
		Config            model.Config  `json:"config"`
		TrainSeconds      statJSON      `json:"train_seconds"`
		TargetPoints      float64       `json:"target_points"`
		Cases             []caseJSON    `json:"cases"`
		Disjoint          *disjointJSON `json:"disjoint_split,omitempty"`
		DriftCheck        any           `json:"drift_check"`
	}{Size: []int{e.Rows, e.Cols, e.Bands}, Classes: toClassesJSON(e.Classes), Backend: e.Backend, FirstSeed: e.FirstSeed,
		Runs: e.Runs, Config: e.Config, TrainSeconds: st(e.TrainSeconds), TargetPoints: ShiftTargetPoints}
	for _, r := range e.Cases {
		cj := caseJSON{Name: r.Case.Name, Families: r.Case.Families, Change: r.Case.Change, Area: r.Case.Area, Target: r.Case.Target,
			Strong: r.Case.Strong, Other: r.Case.Other, OA: st(r.OA), Drop: st(r.Drop), MaxDrop: jsonNum(r.MaxDrop)}
		if cj.Families == nil {
			cj.Families = []string{}
		}
		for _, run := range r.Runs {
			rj := runJSON{Seed: run.Seed, OA: jsonNum(run.OA), RefOA: jsonNum(run.RefOA), Drop: jsonNum(run.Drop), TestPixels: run.TestPixels}
			if d := run.Drift; d != nil {
				rj.Drift = &driftJSON{Verdict: string(d.Verdict), Reasons: d.Reasons, FarShare: jsonNum(d.FarShare), Reliability: jsonNum(d.Reliability),
					ReliabilityRatio: jsonNum(d.ReliabilityRatio), BrightnessRatio: jsonNum(d.BrightnessRatio),
					BandShiftMeanSD: jsonNum(d.BandShiftMeanSD), BandShiftMaxSD: jsonNum(d.BandShiftMaxSD)}
			}
			cj.Runs = append(cj.Runs, rj)
		}
		out.Cases = append(out.Cases, cj)
	}
	dc := e.DriftCheck()
	out.DriftCheck = map[string]any{"case_runs": dc.Runs, "missed": dc.Missed, "false_alarms": dc.FalseAlarms, "met": dc.Met(),
		"must_alarm": dc.MustAlarm, "must_be_ok": dc.MustBeOK, "alarms_where_oa_held": dc.AlarmsHeld,
		"alarm_points": DriftAlarmPoints, "thresholds": model.DefaultDriftThresholds}
	if d := e.Disjoint; d != nil {
		dj := &disjointJSON{TrainArea: d.TrainArea, TestArea: d.TestArea, SameHalf: st(d.SameHalf), OtherHalf: st(d.OtherHalf)}
		for _, r := range d.Runs {
			dj.Runs = append(dj.Runs, map[string]any{"seed": r.Seed, "oa_same_half": jsonNum(r.SameHalf), "oa_other_half": jsonNum(r.OtherHalf), "test_pixels": r.TestPixels})
		}
		out.Disjoint = dj
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// RunShiftFiles reads the scene, labels, optional fixed split and optional
// other scene (opts.Other is set from it) and runs RunShift.
func RunShiftFiles(ctx context.Context, scene, labels, trainMask, other string, opts ShiftOptions) (ShiftExperiment, error) {
	in, err := readInputs(ctx, scene, labels)
	if err != nil {
		return ShiftExperiment{}, err
	}
	if trainMask != "" {
		if opts.Train.TrainMask, err = readTrainMask(ctx, trainMask, labels, in); err != nil {
			return ShiftExperiment{}, err
		}
	}
	if other != "" {
		o, _, err := ReadScene(ctx, other)
		if err != nil {
			return ShiftExperiment{}, err
		}
		opts.Other = &o
		if opts.OtherName == "" {
			opts.OtherName = other
		}
	}
	return RunShift(ctx, in.scene, in.labels, opts)
}
