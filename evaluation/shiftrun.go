package evaluation

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/progress"
)

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
	// ModelDir, when set, keeps each run's model there (shift-SEED.pnec,
	// and disjoint-SEED.pnec for the disjoint split) and reuses a model
	// found there instead of training it again, when it was trained with
	// the same settings and seed on a scene of the same size (the caller
	// keeps one directory per scene); a reused model's drift statistics
	// are measured again on the scene, so that a rerun measures what the
	// code of the day measures, without the training.
	ModelDir string
	Progress progress.Func // as ExperimentOptions.Progress
	Logger   *slog.Logger  // nil = discard
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
	Drift *drift.Report
}

// DriftAlarmPoints is the OA drop of the drift target: a scene that loses
// more than this must not be verdict ok (DriftCheck).
const DriftAlarmPoints = 5.0

// caseRun is r as a case run of the drift targets (DriftCaseRun).
func (r ShiftRun) caseRun(c ShiftCase) DriftCaseRun {
	return DriftCaseRun{Case: c.Name, Families: c.Families, Clean: c.IsClean(), AreaOnly: c.Area != "" && c.Change.IsIdentity() && !c.Other,
		Other: c.Other, Drop: 100 * r.Drop, Seed: r.Seed}
}

// missed reports whether the run's verdict is ok although its scene lost
// more than DriftAlarmPoints (or is another scene).
func (r ShiftRun) missed(c ShiftCase) bool {
	return r.Drift != nil && r.caseRun(c).bad() && r.Drift.Verdict == drift.OK
}

// falseAlarm reports whether the verdict is not ok on a scene that must be
// ok: the clean scene, or a sub-area of it (another class mix, no other
// change).
func (r ShiftRun) falseAlarm(c ShiftCase) bool {
	return r.Drift != nil && r.caseRun(c).mustBeOK() && r.Drift.Verdict != drift.OK
}

// alarmHeld reports whether the verdict is not ok although the scene lost
// at most ShiftTargetPoints (a changed scene the model tolerates).
func (r ShiftRun) alarmHeld(c ShiftCase) bool {
	return r.Drift != nil && r.caseRun(c).held() && r.Drift.Verdict != drift.OK
}

// ShiftRow is one case over all runs.
type ShiftRow struct {
	Case     ShiftCase
	Runs     []ShiftRun
	OA, Drop Stat
	MaxDrop  float64 // the largest drop of a run
	// Verdicts counts the runs' drift verdicts; Figures are the drift
	// figures' means over runs, by drift.Figure key.
	Verdicts map[drift.Verdict]int
	Figures  map[string]Stat
	// Missed counts the runs whose verdict is ok on a drop of more than
	// DriftAlarmPoints (or another scene), FalseAlarms those not ok on the
	// clean scene or a sub-area alone, AlarmsHeld those not ok on any scene
	// that lost at most ShiftTargetPoints.
	Missed, FalseAlarms, AlarmsHeld int
}

// DriftCheck totals the drift verdict's targets over the suite
// (DriftTally over the case runs).
type DriftCheck struct {
	Runs int // case runs with a verdict
	DriftTally
}

// Met reports whether the drift targets hold (DriftTally.Met).
func (d DriftCheck) Met() bool { return d.Runs > 0 && d.DriftTally.Met() }

// DriftCheck totals the drift targets over every case and run.
func (e ShiftExperiment) DriftCheck() DriftCheck {
	var d DriftCheck
	for _, r := range e.Cases {
		for _, run := range r.Runs {
			if run.Drift == nil {
				continue
			}
			d.Runs++
			d.Add(run.caseRun(r.Case), run.Drift.Verdict)
		}
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
	opts, err := shiftDefaults(s, labels, opts)
	if err != nil {
		return ShiftExperiment{}, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cases := shiftCases(opts)
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
	var disjoint *DisjointSplit
	if opts.Disjoint {
		trainings *= 2
		disjoint = &DisjointSplit{}
	}
	done := 0
	for run := 0; run < opts.Runs; run++ {
		seed := opts.FirstSeed + int64(run)
		to := shiftTrainOptions(opts, seed)
		to.Progress = trainingProgress(opts.Progress, runSubject(model.AblationFull, run+1, opts.Runs, seed), done, trainings)
		m, secs, err := trainOrReuse(ctx, s, labels, to, opts, "shift")
		if err != nil {
			return ShiftExperiment{}, fmt.Errorf("shift run %d (seed %d): %w", run+1, seed, err)
		}
		done++
		trainSecs = append(trainSecs, secs)
		exp.Classes, exp.Config = m.Classes(), m.Config()
		if err := shiftRun(ctx, m, s, labels, means, cases, rows, opts, seed, &exp); err != nil {
			return ShiftExperiment{}, fmt.Errorf("shift run %d (seed %d): %w", run+1, seed, err)
		}
		log.Info("shift run done", "run", run+1, "seed", seed, "clean_oa", pct(rows[0].Runs[len(rows[0].Runs)-1].OA),
			"train_s", fmt.Sprintf("%.1f", trainSecs[len(trainSecs)-1]))
		if disjoint != nil {
			to.Progress = trainingProgress(opts.Progress, runSubject(model.AblationFull, run+1, opts.Runs, seed), done, trainings)
			if err := disjoint.addRun(ctx, s, labels, to, opts, run, seed, log); err != nil {
				return ShiftExperiment{}, err
			}
			done++
		}
	}
	for i := range rows {
		rows[i].summarise()
	}
	exp.Cases = rows
	exp.TrainSeconds = statOf(trainSecs)
	if disjoint != nil {
		disjoint.summarise()
		exp.Disjoint = disjoint
	}
	return exp, nil
}

// shiftDefaults fills opts' zero run count and first seed, and checks
// them and the labels.
func shiftDefaults(s model.Scene, labels []int32, opts ShiftOptions) (ShiftOptions, error) {
	if opts.Runs == 0 {
		opts.Runs = 5
	}
	if opts.Runs < 1 {
		return opts, fmt.Errorf("shift experiment: %w", errNoRuns)
	}
	if opts.FirstSeed == 0 {
		opts.FirstSeed = model.DefaultSeed
	}
	if len(labels) != s.Rows*s.Cols {
		return opts, fmt.Errorf("shift experiment: labels have %d values, the scene %d pixels: %w", len(labels), s.Rows*s.Cols, ErrLabels)
	}
	return opts, nil
}

// shiftCases is the experiment's cases: opts.Cases (ShiftSuite when nil),
// and the other scene's when there is one.
func shiftCases(opts ShiftOptions) []ShiftCase {
	cases := opts.Cases
	if cases == nil {
		cases = ShiftSuite()
	}
	if opts.Other != nil {
		cases = append(slices.Clone(cases), ShiftCase{Name: "other scene: " + opts.OtherName, Families: []string{FamilyOther}, Other: true, Strong: true})
	}
	return cases
}

// shiftTrainOptions is the training options of the run with seed: opts.Train,
// with the paper's network (and opts.Train's epochs when set) when it
// sets no network.
func shiftTrainOptions(opts ShiftOptions, seed int64) model.TrainOptions {
	to := opts.Train
	to.Seed = seed
	if to.Config.Hidden == 0 {
		epochs := to.Config.Epochs
		to.Config = model.DefaultConfig()
		if epochs > 0 {
			to.Config.Epochs = epochs
		}
	}
	return to
}

// addRun trains and scores the disjoint split's run (from 0) with seed
// and adds it to d, whose areas are the first run's.
func (d *DisjointSplit) addRun(ctx context.Context, s model.Scene, labels []int32, to model.TrainOptions, opts ShiftOptions, run int, seed int64, log *slog.Logger) error {
	dr, trainArea, testArea, err := disjointRun(ctx, s, labels, to, opts)
	if err != nil {
		return fmt.Errorf("disjoint split run %d (seed %d): %w", run+1, seed, err)
	}
	if len(d.Runs) == 0 {
		d.TrainArea, d.TestArea = trainArea, testArea
	}
	dr.Seed = seed
	d.Runs = append(d.Runs, dr)
	log.Info("disjoint split run done", "run", run+1, "seed", seed, "same_half_oa", pct(dr.SameHalf), "other_half_oa", pct(dr.OtherHalf))
	return nil
}

// summarise sets the split's statistics over its runs.
func (d *DisjointSplit) summarise() {
	var same, other []float64
	for _, r := range d.Runs {
		same = append(same, r.SameHalf)
		other = append(other, r.OtherHalf)
	}
	d.SameHalf, d.OtherHalf = statOf(same), statOf(other)
}

// summarise sets the row's statistics over its runs: OA, drop and each
// drift figure, the largest drop, the verdicts and the alarms.
func (row *ShiftRow) summarise() {
	var oa, drop []float64
	figs := map[string][]float64{}
	row.MaxDrop = math.NaN()
	row.Verdicts = map[drift.Verdict]int{}
	for _, r := range row.Runs {
		oa = append(oa, r.OA)
		drop = append(drop, r.Drop)
		if !math.IsNaN(r.Drop) && (math.IsNaN(row.MaxDrop) || r.Drop > row.MaxDrop) {
			row.MaxDrop = r.Drop
		}
		if r.Drift != nil {
			row.Verdicts[r.Drift.Verdict]++
			for _, f := range drift.Figures() {
				figs[f.Key] = append(figs[f.Key], f.Value(*r.Drift))
			}
		}
		if r.missed(row.Case) {
			row.Missed++
		}
		if r.falseAlarm(row.Case) {
			row.FalseAlarms++
		}
		if r.alarmHeld(row.Case) {
			row.AlarmsHeld++
		}
	}
	row.OA, row.Drop = statOf(oa), statOf(drop)
	row.Figures = map[string]Stat{}
	for k, v := range figs {
		row.Figures[k] = statOf(v)
	}
}

// trainOrReuse trains a model on s with to, or with opts.ModelDir loads
// the one kept there by an earlier run (name-SEED.pnec) when it was trained
// with the same settings and seed on a scene of s's size, and measures its
// drift statistics again on s; a model trained here is kept there. It
// returns the training time (the original one for a reused model).
func trainOrReuse(ctx context.Context, s model.Scene, labels []int32, to model.TrainOptions, opts ShiftOptions, name string) (*model.Model, float64, error) {
	var path string
	if opts.ModelDir != "" {
		path = filepath.Join(opts.ModelDir, fmt.Sprintf("%s-%d.pnec", name, to.Seed))
		if _, err := os.Stat(path); err == nil {
			m, err := model.LoadWithoutDrift(path)
			if err != nil {
				return nil, 0, err
			}
			rows, cols := m.TrainSceneSize()
			if !model.TrainedAs(m.Config(), to.Config) || m.Seed() != to.Seed || rows != s.Rows || cols != s.Cols || m.Bands() != s.Bands {
				return nil, 0, fmt.Errorf("%s: a kept model of another scene, seed or settings (keep each scene and settings in a directory of their own, or remove the file)", path)
			}
			if err := m.CalibrateDrift(ctx, s, opts.Eval.Backend); err != nil {
				return nil, 0, fmt.Errorf("%s: %w", path, err)
			}
			return m, m.TrainSeconds(), nil
		}
	}
	start := time.Now()
	m, err := model.Train(ctx, s, labels, to)
	if err != nil {
		return nil, 0, err
	}
	secs := time.Since(start).Seconds()
	if path != "" {
		if err := os.MkdirAll(opts.ModelDir, 0o755); err != nil {
			return nil, 0, err
		}
		if err := m.Save(path); err != nil {
			return nil, 0, err
		}
	}
	return m, secs, nil
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
	predict := func(sc model.Scene) ([]int, *drift.Report, error) {
		pred, err := p.Predict(ctx, sc)
		if err != nil {
			return nil, nil, err
		}
		var drift *drift.Report
		if ref != nil {
			d, err := m.DriftOf(ctx, p, sc, pred, ref)
			if err != nil {
				return nil, nil, err
			}
			drift = &d
		}
		labels, err := recoveredLabels(m, sc, pred, rec)
		return labels, drift, err
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

// recoveredLabels is the dense class of every pixel of scene s after m's
// decision with recovery rec (-1 at invalid pixels).
func recoveredLabels(m *model.Model, s model.Scene, pred model.Prediction, rec model.RecoveryParams) ([]int, error) {
	k := pred.Classes
	prec, err := m.DecideWith(s, pred.Prob, rec)
	if err != nil {
		return nil, err
	}
	valid := s.Valid
	out := make([]int, pred.Rows*pred.Cols)
	for i := range out {
		if valid != nil && !valid[i] {
			out[i] = -1
			continue
		}
		out[i] = argmaxAt(prec, k, i)
	}
	return out, nil
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
func disjointRun(ctx context.Context, s model.Scene, labels []int32, to model.TrainOptions, opts ShiftOptions) (DisjointRun, string, string, error) {
	eval := opts.Eval
	trainArea, testArea, err := disjointHalves(s, labels)
	if err != nil {
		return DisjointRun{}, "", "", err
	}
	r0, c0, nr, nc := areaRect(trainArea, s.Rows, s.Cols)
	ts, tl := cropScene(s, labels, r0, c0, nr, nc)
	to.TrainMask = nil // drawn in the half
	m, _, err := trainOrReuse(ctx, ts, tl, to, opts, "disjoint")
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
	sameLabels, err := recoveredLabels(m, ts, pred, rec)
	if err != nil {
		return DisjointRun{}, "", "", err
	}
	out.SameHalf, _ = overallAccuracy(sameLabels, same, ts.Valid, dense)
	r0, c0, nr, nc = areaRect(testArea, s.Rows, s.Cols)
	os, ol := cropScene(s, labels, r0, c0, nr, nc)
	if pred, err = p.Predict(ctx, os); err != nil {
		return DisjointRun{}, "", "", err
	}
	otherLabels, err := recoveredLabels(m, os, pred, rec)
	if err != nil {
		return DisjointRun{}, "", "", err
	}
	out.OtherHalf, out.TestPixels = overallAccuracy(otherLabels, ol, os.Valid, dense)
	return out, trainArea, testArea, nil
}

// RunShiftFiles reads the scene, labels, optional fixed split and optional
// other scene (opts.Other is set from it) and runs RunShift.
func RunShiftFiles(ctx context.Context, scene, labels, trainMask, other string, opts ShiftOptions) (ShiftExperiment, error) {
	in, err := readInputs(ctx, scene, labels, nil)
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
