package evaluation

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pnec/pnec/model"
)

// The drift verdict's targets (issue 33), over case runs of the
// acquisition-shift protocol counted by their OA drop: ok on at least
// DriftOKShare of the runs that lost at most ShiftTargetPoints, warn or
// fail on every run that lost more than DriftAlarmPoints (and on another
// scene), fail only on runs that lost more than ShiftTargetPoints, and
// neither on the clean scene nor on a sub-area of it alone.
const DriftOKShare = 0.9

// DriftCaseRun is one case run's drift figures and OA drop: what the
// verdict's thresholds are chosen on and judged by (ChooseDriftThresholds).
type DriftCaseRun struct {
	Scene string // the scene's name (SalinasA, JasperRidge)
	// Set is DriftSetChoose for the runs of the seeds thresholds are
	// chosen on, DriftSetReport for the others.
	Set      string
	Seed     int64
	Case     string
	Families []string // the case's families (ShiftCase.Families)
	// Clean is the unchanged scene, AreaOnly a sub-area of it with no other
	// change, Other another scene (no drop).
	Clean, AreaOnly, Other bool
	Drop                   float64            // OA points lost (NaN for another scene)
	Figures                map[string]float64 // by model.DriftFigure.Key
}

// Figure is the run's figure key (NaN when absent).
func (r DriftCaseRun) Figure(key string) float64 {
	if v, ok := r.Figures[key]; ok {
		return v
	}
	return math.NaN()
}

// drift is the run's figures as a model.Drift, for the verdict.
func (r DriftCaseRun) drift() model.Drift {
	d := model.Drift{ValidPixels: 1}
	for _, f := range model.DriftFigures() {
		f.Set(&d, r.Figure(f.Key))
	}
	return d
}

// bad reports whether the verdict must not be ok: the run lost more than
// DriftAlarmPoints, or it is another scene.
func (r DriftCaseRun) bad() bool { return r.Other || r.Drop > DriftAlarmPoints }

// held reports whether the run lost at most ShiftTargetPoints: the verdict
// should be ok and must not be fail.
func (r DriftCaseRun) held() bool { return !r.Other && r.Drop <= ShiftTargetPoints }

// mustBeOK reports whether the verdict must be ok: the clean scene or a
// sub-area of it alone.
func (r DriftCaseRun) mustBeOK() bool { return r.Clean || r.AreaOnly }

// ShiftCaseRuns turns an experiment's runs into case runs of scene.
func (e ShiftExperiment) ShiftCaseRuns(scene string) []DriftCaseRun {
	var out []DriftCaseRun
	for _, row := range e.Cases {
		c := row.Case
		for _, r := range row.Runs {
			if r.Drift == nil {
				continue
			}
			cr := DriftCaseRun{Scene: scene, Seed: r.Seed, Case: c.Name, Families: c.Families, Clean: c.IsClean(),
				AreaOnly: c.Area != "" && c.Change.IsIdentity() && !c.Other, Other: c.Other, Drop: 100 * r.Drop,
				Figures: map[string]float64{}}
			for _, f := range model.DriftFigures() {
				cr.Figures[f.Key] = f.Value(*r.Drift)
			}
			out = append(out, cr)
		}
	}
	return out
}

// ReadShiftCaseRuns reads the case runs of one `pnec experiment --shift
// --json` output (its drift figures by key) as runs of scene.
func ReadShiftCaseRuns(r io.Reader, scene string) ([]DriftCaseRun, error) {
	var doc struct {
		Cases []struct {
			Name     string            `json:"name"`
			Families []string          `json:"families"`
			Change   model.Radiometric `json:"change"`
			Area     string            `json:"area"`
			Other    bool              `json:"other_scene"`
			Runs     []struct {
				Seed  int64                      `json:"seed"`
				Drop  *float64                   `json:"drop"`
				Drift map[string]json.RawMessage `json:"drift"`
			} `json:"runs"`
		} `json:"cases"`
	}
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("shift experiment JSON: %w", err)
	}
	var out []DriftCaseRun
	for _, c := range doc.Cases {
		for _, r := range c.Runs {
			if r.Drift == nil {
				continue
			}
			cr := DriftCaseRun{Scene: scene, Seed: r.Seed, Case: c.Name, Families: c.Families,
				Clean: c.Area == "" && !c.Other && c.Change.IsIdentity(), AreaOnly: c.Area != "" && c.Change.IsIdentity() && !c.Other,
				Other: c.Other, Drop: math.NaN(), Figures: map[string]float64{}}
			if r.Drop != nil && !c.Other {
				cr.Drop = 100 * *r.Drop
			}
			for _, f := range model.DriftFigures() {
				raw, ok := r.Drift[f.Key]
				if !ok {
					continue
				}
				v := math.NaN() // null: not finite
				if string(raw) != "null" {
					if err := json.Unmarshal(raw, &v); err != nil {
						return nil, fmt.Errorf("shift experiment JSON: %s, seed %d: %s: %w", c.Name, r.Seed, f.Key, err)
					}
				}
				cr.Figures[f.Key] = v
			}
			out = append(out, cr)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("shift experiment JSON: no case run with drift figures")
	}
	return out, nil
}

// The columns of the case-run CSV before the figures.
var caseRunColumns = []string{"scene", "set", "seed", "case", "families", "kind", "drop_points"}

// WriteDriftCaseRuns writes case runs as CSV: scene, seed, case, families
// (+-joined), kind (clean, area, change or other), the OA drop in points
// and every figure of model.DriftFigures (NaN where not measured), 6
// significant digits.
func WriteDriftCaseRuns(w io.Writer, runs []DriftCaseRun) error {
	cw := csv.NewWriter(w)
	head := slices.Clone(caseRunColumns)
	for _, f := range model.DriftFigures() {
		head = append(head, f.Key)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range runs {
		kind := "change"
		switch {
		case r.Clean:
			kind = "clean"
		case r.AreaOnly:
			kind = "area"
		case r.Other:
			kind = "other"
		}
		row := []string{r.Scene, r.Set, strconv.FormatInt(r.Seed, 10), r.Case, strings.Join(r.Families, "+"), kind, num(r.Drop)}
		for _, f := range model.DriftFigures() {
			row = append(row, num(r.Figure(f.Key)))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadDriftCaseRuns reads what WriteDriftCaseRuns wrote.
func ReadDriftCaseRuns(r io.Reader) ([]DriftCaseRun, error) {
	cr := csv.NewReader(r)
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("case runs CSV: %w", err)
	}
	if len(rows) < 2 || len(rows[0]) < len(caseRunColumns) || !slices.Equal(rows[0][:len(caseRunColumns)], caseRunColumns) {
		return nil, fmt.Errorf("case runs CSV: want a header %s,FIGURES... and rows", strings.Join(caseRunColumns, ","))
	}
	keys := rows[0][len(caseRunColumns):]
	var out []DriftCaseRun
	for i, row := range rows[1:] {
		seed, err := strconv.ParseInt(row[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("case runs CSV line %d: seed: %w", i+2, err)
		}
		drop, err := strconv.ParseFloat(row[6], 64)
		if err != nil {
			return nil, fmt.Errorf("case runs CSV line %d: drop: %w", i+2, err)
		}
		r := DriftCaseRun{Scene: row[0], Set: row[1], Seed: seed, Case: row[3], Clean: row[5] == "clean", AreaOnly: row[5] == "area",
			Other: row[5] == "other", Drop: drop, Figures: map[string]float64{}}
		if row[4] != "" {
			r.Families = strings.Split(row[4], "+")
		}
		for j, k := range keys {
			v, err := strconv.ParseFloat(row[len(caseRunColumns)+j], 64)
			if err != nil {
				return nil, fmt.Errorf("case runs CSV line %d: %s: %w", i+2, k, err)
			}
			r.Figures[k] = v
		}
		out = append(out, r)
	}
	return out, nil
}

// The two sets of seeds (DriftCaseRun.Set).
const (
	DriftSetChoose = "choose"
	DriftSetReport = "report"
)

// DriftChooseFamilies are the half of the case families thresholds are
// chosen on (with the choose seeds); the other half (gain, noise, band
// shift, another scene) is left for the report. The halves split what each
// figure might key on: the choosing half has the continuum of tilts (the
// cases that lose 3-30 points), sub-areas (another class mix, which must
// stay ok), offsets and the bands reversed; the report half has band shifts
// (+-1 band must stay ok, +-3 bands lose 1-22 points), gains, noise and a
// scene of other land cover.
var DriftChooseFamilies = []string{FamilyTilt, FamilyClassMix, FamilyOffset, FamilyReverse}

// inChooseHalf reports whether every family of r is in the choosing half
// (the clean scene, of none, is).
func (r DriftCaseRun) inChooseHalf() bool {
	for _, f := range r.Families {
		if !slices.Contains(DriftChooseFamilies, f) {
			return false
		}
	}
	return true
}

// DriftChooseRun reports whether thresholds are chosen on r: a run of the
// choose seeds in the choosing half of the families.
func DriftChooseRun(r DriftCaseRun) bool { return r.Set == DriftSetChoose && r.inChooseHalf() }

// DriftHeldOutRun reports whether r is of the report's held-out cases: a
// run of the report seeds with a family of the other half.
func DriftHeldOutRun(r DriftCaseRun) bool { return r.Set == DriftSetReport && !r.inChooseHalf() }

// DriftMaxFigures is the most figures the chooser judges.
const DriftMaxFigures = 3

// ChooseDriftThresholdsFor chooses the thresholds on the runs of runs
// DriftChooseRun selects.
func ChooseDriftThresholdsFor(runs []DriftCaseRun) (DriftChoice, error) {
	var sel []DriftCaseRun
	for _, r := range runs {
		if DriftChooseRun(r) {
			sel = append(sel, r)
		}
	}
	return ChooseDriftThresholds(sel, DriftMaxFigures)
}

// LegacyDriftThresholds are the verdict's thresholds before issue 33 (pnec
// at 2ebb491): spectral figures only. Reports show them beside the new
// ones, on the same runs.
var LegacyDriftThresholds = model.DriftThresholds{Limits: []model.DriftLimit{
	{Figure: "far_share", Warn: 0.05, Fail: 0.25},
	{Figure: "distance_ratio", Warn: 1.5},
	{Figure: "reliability_ratio", Warn: 0.9, Fail: 0.75},
}}

// DriftTally counts a verdict's outcomes over case runs against the
// targets.
type DriftTally struct {
	Held, HeldFlagged, HeldFailed int // runs that lost at most ShiftTargetPoints; of them warn or fail; of them fail
	Lost, LostOK                  int // runs that lost more than ShiftTargetPoints; of them ok
	Bad, BadOK                    int // runs that lost more than DriftAlarmPoints or are another scene; of them ok
	MustBeOK, MustBeOKFlagged     int // the clean scene and sub-areas alone; of them warn or fail
}

// OKShare is the share of held runs whose verdict is ok.
func (t DriftTally) OKShare() float64 {
	if t.Held == 0 {
		return math.NaN()
	}
	return float64(t.Held-t.HeldFlagged) / float64(t.Held)
}

// Met reports whether the targets hold.
func (t DriftTally) Met() bool {
	return t.Held > 0 && t.OKShare() >= DriftOKShare && t.BadOK == 0 && t.HeldFailed == 0 && t.MustBeOKFlagged == 0
}

// Add counts one run with verdict v.
func (t *DriftTally) Add(r DriftCaseRun, v model.DriftVerdict) {
	flagged := v == model.DriftWarn || v == model.DriftFail
	switch {
	case r.Other:
	case r.held():
		t.Held++
		if flagged {
			t.HeldFlagged++
		}
		if v == model.DriftFail {
			t.HeldFailed++
		}
	default:
		t.Lost++
		if v == model.DriftOK {
			t.LostOK++
		}
	}
	if r.bad() {
		t.Bad++
		if v == model.DriftOK {
			t.BadOK++
		}
	}
	if r.mustBeOK() {
		t.MustBeOK++
		if flagged {
			t.MustBeOKFlagged++
		}
	}
}

// TallyDrift counts the verdicts of t over runs.
func TallyDrift(t model.DriftThresholds, runs []DriftCaseRun) DriftTally {
	var out DriftTally
	for _, r := range runs {
		v, _ := t.Verdict(r.drift())
		out.Add(r, v)
	}
	return out
}

// DriftChoice is what ChooseDriftThresholds chose and why.
type DriftChoice struct {
	Thresholds model.DriftThresholds
	Tally      DriftTally // on the runs it chose on
}

// DriftCandidateFigures are the figures the chooser may judge: those in the
// network's own terms (its features against the prototype bank, its
// reliability gate, its output). The spectral figures (far share, distance
// and reliability ratios, brightness, band shifts) describe the scene in
// its own spectral space, which the default model was trained to see past
// (a band shift puts every pixel beyond the training scene's spread at no
// cost): products report them, the verdict does not judge them.
var DriftCandidateFigures = []string{"feature_far_share", "feature_distance_ratio", "prototype_margin_ratio",
	"uncertainty_ratio", "margin_ratio"}

// DriftMustOKMargin is how far beyond the farthest clean-scene or sub-area
// run a warn limit must lie, in multiples of that run's distance from the
// clean scene's value: room for the clean scenes and sub-areas of models
// not chosen on.
const DriftMustOKMargin = 1.25

// DriftFailFactor is the fail limit's distance beyond the worst value of a
// figure over the runs that held (lost at most ShiftTargetPoints) and the
// clean scene: the limit is that value times DriftFailFactor for a figure
// that rises (divided by it for one that falls), on the log scale of
// ratios and shares alike.
const DriftFailFactor = 1.5

// ChooseDriftThresholds chooses the verdict's limits on runs:
//
//   - warn: the set of at most maxFigures candidate figures
//     (DriftCandidateFigures), and a limit on each, that flags none of the
//     clean scene and sub-areas alone, at most 1 - DriftOKShare of each
//     scene's runs that held (lost at most ShiftTargetPoints), and of the runs that must
//     not be ok (lost more than DriftAlarmPoints, or another scene) the
//     most; among equals the fewest runs that held, then the fewest
//     figures, then the widest margins. Each limit lies at the geometric
//     middle of the interval of limits that flag the same runs.
//   - fail: per warned figure, DriftFailFactor beyond the worst value of
//     any run that held or must be ok, or beyond the warn limit if that is
//     farther.
//
// It fails when no limit flags a bad run within those bounds.
func ChooseDriftThresholds(runs []DriftCaseRun, maxFigures int) (DriftChoice, error) {
	n := len(runs)
	if n == 0 {
		return DriftChoice{}, errors.New("choose drift thresholds: no case run")
	}
	words := (n + 63) / 64
	type bitset []uint64
	newSet := func() bitset { return make(bitset, words) }
	var bad, held, must bitset = newSet(), newSet(), newSet()
	for i, r := range runs {
		if r.bad() {
			bad[i/64] |= 1 << (i % 64)
		}
		if r.held() {
			held[i/64] |= 1 << (i % 64)
		}
		if r.mustBeOK() {
			must[i/64] |= 1 << (i % 64)
		}
	}
	// Per figure, the candidate warn limits: between consecutive distinct
	// values, each with the set of runs it flags. Only limits that flag no
	// run that must be ok are candidates.
	type limit struct {
		figure  int
		lo, hi  float64 // the limits in (lo, hi] (rising) flag the same runs
		flagged bitset
	}
	var cands [][]limit
	figs := make([]model.DriftFigure, len(DriftCandidateFigures))
	for fi, key := range DriftCandidateFigures {
		f, ok := model.DriftFigureByKey(key)
		if !ok {
			return DriftChoice{}, fmt.Errorf("choose drift thresholds: unknown figure %q", key)
		}
		figs[fi] = f
		// Values in the bad direction: rising as they are, falling negated.
		sign := 1.0
		if !f.Rising {
			sign = -1
		}
		var vals, badVals []float64
		for _, r := range runs {
			if v := r.Figure(key); !math.IsNaN(v) && !math.IsInf(v, 0) {
				vals = append(vals, sign*v)
				if r.bad() {
					badVals = append(badVals, sign*v)
				}
			}
		}
		sort.Float64s(vals)
		sort.Float64s(badVals)
		badVals = slices.Compact(badVals)
		// The clean scene's value (the median over its runs) and the
		// farthest of a run that must be ok: a limit lies beyond it by
		// DriftMustOKMargin times its distance from the clean value, so
		// that the clean scene and sub-areas of other models stay ok.
		var clean []float64
		mustWorst := math.Inf(-1)
		for _, r := range runs {
			v := r.Figure(key)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if r.Clean {
				clean = append(clean, sign*v)
			}
			if r.mustBeOK() {
				mustWorst = math.Max(mustWorst, sign*v)
			}
		}
		floor := mustWorst
		if len(clean) > 0 && !math.IsInf(mustWorst, -1) {
			slices.Sort(clean)
			mid := clean[len(clean)/2]
			floor = mid + DriftMustOKMargin*math.Max(0, mustWorst-mid)
		}
		var fl []limit
		// A limit worth trying lies just at a bad run's value: lower, it
		// flags no more bad runs but more others. It flags the same runs
		// anywhere above the next value below it.
		for _, hi := range badVals {
			if hi <= floor {
				continue
			}
			j, _ := slices.BinarySearch(vals, hi)
			lo := math.Inf(-1)
			if j > 0 {
				lo = vals[j-1]
			}
			lo = math.Max(lo, floor)
			set := newSet()
			ok := true
			for i, r := range runs {
				v := r.Figure(key)
				if math.IsNaN(v) || math.IsInf(v, 0) || sign*v >= hi {
					set[i/64] |= 1 << (i % 64)
					if r.mustBeOK() {
						ok = false
					}
				}
			}
			if ok {
				fl = append(fl, limit{figure: fi, lo: lo, hi: hi, flagged: set})
			}
		}
		cands = append(cands, fl)
	}
	count := func(s, mask bitset) int {
		c := 0
		for i := range s {
			c += bits.OnesCount64(s[i] & mask[i])
		}
		return c
	}
	// The runs that held the warn limits may flag, per scene: what keeps
	// DriftOKShare of each scene's ok.
	var scenes []string
	for _, r := range runs {
		if !slices.Contains(scenes, r.Scene) {
			scenes = append(scenes, r.Scene)
		}
	}
	heldOf := make([]bitset, len(scenes))
	budgets := make([]int, len(scenes))
	for si, sc := range scenes {
		heldOf[si] = newSet()
		for i, r := range runs {
			if r.Scene == sc && r.held() {
				heldOf[si][i/64] |= 1 << (i % 64)
			}
		}
		budgets[si] = int(math.Floor((1 - DriftOKShare) * float64(count(heldOf[si], heldOf[si]))))
	}
	within := func(u bitset) bool {
		for si := range scenes {
			if count(u, heldOf[si]) > budgets[si] {
				return false
			}
		}
		return true
	}
	type choice struct {
		limits        []limit
		caught, false int // bad runs flagged, held runs flagged
		margin        float64
	}
	var best *choice
	better := func(c choice) bool {
		switch {
		case best == nil:
			return true
		case c.caught != best.caught:
			return c.caught > best.caught
		case c.false != best.false:
			return c.false < best.false
		case len(c.limits) != len(best.limits):
			return len(c.limits) < len(best.limits)
		}
		return c.margin > best.margin
	}
	// margin is the smallest relative width of the limits' intervals: how
	// far each may move without changing what it flags.
	margin := func(ls []limit) float64 {
		m := math.Inf(1)
		for _, l := range ls {
			w := l.hi - l.lo
			if s := math.Max(math.Abs(l.hi), math.Abs(l.lo)); s > 0 && !math.IsInf(w, 0) {
				w /= s
			}
			m = math.Min(m, w)
		}
		return m
	}
	var search func(start int, chosen []limit, union bitset)
	search = func(start int, chosen []limit, union bitset) {
		if len(chosen) > 0 {
			c := choice{limits: slices.Clone(chosen), caught: count(union, bad), false: count(union, held), margin: margin(chosen)}
			if better(c) {
				best = &c
			}
		}
		if len(chosen) == maxFigures {
			return
		}
		for fi := start; fi < len(cands); fi++ {
			for _, l := range cands[fi] {
				u := newSet()
				for i := range u {
					u[i] = union[i] | l.flagged[i]
				}
				if !within(u) {
					continue // more figures only flag more
				}
				search(fi+1, append(chosen, l), u)
			}
		}
	}
	search(0, nil, newSet())
	if best == nil {
		return DriftChoice{}, fmt.Errorf("choose drift thresholds: no limit flags a run that lost more than %g points without flagging more than %.0f%% of a scene's runs that held, the clean scene or a sub-area alone", DriftAlarmPoints, 100*(1-DriftOKShare))
	}
	var t model.DriftThresholds
	for _, l := range best.limits {
		f := figs[l.figure]
		sign := 1.0
		if !f.Rising {
			sign = -1
		}
		// The middle of (lo, hi], on the log scale when both are positive.
		lo, hi := sign*l.lo, sign*l.hi
		var warn float64
		switch {
		case math.IsInf(lo, 0):
			warn = hi / math.Pow(DriftFailFactor, sign)
		case lo > 0 && hi > 0:
			warn = math.Sqrt(lo * hi)
		default:
			warn = (lo + hi) / 2
		}
		// The worst value of a run that held or must be ok, or the warn
		// limit when that lies beyond it.
		worst := sign * warn
		for _, r := range runs {
			if v := r.Figure(f.Key); (r.held() || r.mustBeOK()) && !math.IsNaN(v) && !math.IsInf(v, 0) {
				worst = math.Max(worst, sign*v)
			}
		}
		fail := sign * worst * math.Pow(DriftFailFactor, sign)
		if fail <= 0 {
			fail = 0 // no fail limit on a figure that reaches 0
		}
		t.Limits = append(t.Limits, model.DriftLimit{Figure: f.Key, Warn: roundSig(warn, 3), Fail: roundSig(fail, 3)})
	}
	// Order the limits as the figures are ordered.
	order := map[string]int{}
	for i, f := range model.DriftFigures() {
		order[f.Key] = i
	}
	slices.SortFunc(t.Limits, func(a, b model.DriftLimit) int { return order[a.Figure] - order[b.Figure] })
	if err := t.Check(); err != nil {
		return DriftChoice{}, err
	}
	return DriftChoice{Thresholds: t, Tally: TallyDrift(t, runs)}, nil
}

// roundSig rounds v to digits significant digits (limits as a person
// would write them; the tally is of the rounded limits).
func roundSig(v float64, digits int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	scale := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

// filterRuns is the runs keep selects.
func filterRuns(runs []DriftCaseRun, keep func(DriftCaseRun) bool) []DriftCaseRun {
	var out []DriftCaseRun
	for _, r := range runs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// DriftTallyRow is one line of the verdict's table: a selection of case
// runs of one scene (or all) and its tally.
type DriftTallyRow struct {
	Scene, Runs string // the scene ("all": both) and which runs
	Tally       DriftTally
}

// DriftTallies tallies t over runs per scene and over all, for the
// selections: the choose runs, the held-out runs and every report run.
func DriftTallies(t model.DriftThresholds, runs []DriftCaseRun) []DriftTallyRow {
	var scenes []string
	for _, r := range runs {
		if !slices.Contains(scenes, r.Scene) {
			scenes = append(scenes, r.Scene)
		}
	}
	sels := []struct {
		name string
		keep func(DriftCaseRun) bool
	}{
		{"chosen on", DriftChooseRun},
		{"held out", DriftHeldOutRun},
		{"report seeds, every case", func(r DriftCaseRun) bool { return r.Set == DriftSetReport }},
	}
	var out []DriftTallyRow
	for _, sel := range sels {
		for _, sc := range append(scenes, "all") {
			rs := filterRuns(runs, func(r DriftCaseRun) bool { return sel.keep(r) && (sc == "all" || r.Scene == sc) })
			if len(rs) == 0 {
				continue
			}
			out = append(out, DriftTallyRow{Scene: sc, Runs: sel.name, Tally: TallyDrift(t, rs)})
		}
	}
	return out
}

// WriteDriftTallyTable writes rows as a markdown table.
func WriteDriftTallyTable(w io.Writer, rows []DriftTallyRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| scene | case runs | lost <= %g points | of them warn or fail | of them fail | lost > %g | of them ok | lost > %g or another scene | of them ok | clean scene and halves alone | of them warn or fail | targets |\n", ShiftTargetPoints, ShiftTargetPoints, DriftAlarmPoints)
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		t := r.Tally
		met := "met"
		if !t.Met() {
			met = "missed"
		}
		share := "-"
		if t.Held > 0 {
			share = fmt.Sprintf("%.0f%%", 100*(1-t.OKShare()))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d (%s) | %d | %d | %d | %d | %d | %d | %d | %s |\n", r.Scene, r.Runs, t.Held, t.HeldFlagged,
			share, t.HeldFailed, t.Lost, t.LostOK, t.Bad, t.BadOK, t.MustBeOK, t.MustBeOKFlagged, met)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDriftChoice writes the chosen limits, then the tallies of the choice
// and of LegacyDriftThresholds over runs.
func WriteDriftChoice(w io.Writer, c DriftChoice, runs []DriftCaseRun) error {
	var b strings.Builder
	fmt.Fprintf(&b, "chosen on %d case runs (choose seeds; families %s and the clean scene), at most %d figures, fail at %g times the worst run that held:\n",
		len(filterRuns(runs, DriftChooseRun)), strings.Join(DriftChooseFamilies, ", "), DriftMaxFigures, DriftFailFactor)
	for _, l := range c.Thresholds.Limits {
		fmt.Fprintf(&b, "  %-24s warn %-8g fail %g\n", l.Figure, l.Warn, l.Fail)
	}
	fmt.Fprintf(&b, "\nthe verdict chosen:\n\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if err := WriteDriftTallyTable(w, DriftTallies(c.Thresholds, runs)); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nthe verdict before (spectral figures only):\n\n"); err != nil {
		return err
	}
	return WriteDriftTallyTable(w, DriftTallies(LegacyDriftThresholds, runs))
}
