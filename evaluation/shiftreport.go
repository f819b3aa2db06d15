package evaluation

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/model"
)

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
	// The figures the verdict judges, then the verdicts.
	limits := drift.DefaultThresholds.Limits
	hdr := "case\tset\tOA %\tdrop\tmax drop\t"
	for _, l := range limits {
		hdr += l.Figure + "\t"
	}
	fmt.Fprintln(tw, hdr+"drift verdicts\t")
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
		figs := ""
		for _, l := range limits {
			v := math.NaN()
			if st, ok := r.Figures[l.Figure]; ok {
				v = st.Mean
			}
			figs += num3(v) + "\t"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s%s%s\t\n", r.Case.Name, set, pm(r.OA, 100, 2), points(r.Drop.Mean), points(r.MaxDrop),
			figs, verdictCounts(r.Verdicts), mark)
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
		fmt.Fprintf(&b, "drift verdicts over %d case runs: ok on %d of %d runs that lost at most %g points (%.0f%%; target %.0f%%), fail on %d of them (target 0); ok on %d of %d runs that lost more than %g points or are another scene (target 0); warn or fail on %d of %d runs of the clean scene and its halves (target 0): %s\n",
			dc.Runs, dc.Held-dc.HeldFlagged, dc.Held, ShiftTargetPoints, 100*dc.OKShare(), 100*DriftOKShare, dc.HeldFailed, dc.BadOK, dc.Bad, DriftAlarmPoints, dc.MustBeOKFlagged, dc.MustBeOK, verdict)
	}
	if d := e.Disjoint; d != nil {
		fmt.Fprintf(&b, "spatially disjoint split (trained on the %s, %d px per class drawn there): OA %s on the %s's test pixels, %s on the %s (random split of the whole scene: %s)\n",
			d.TrainArea, e.TrainPerClass, pm(d.SameHalf, 100, 2), d.TrainArea, pm(d.OtherHalf, 100, 2), d.TestArea, pm(clean.OA, 100, 2))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictCounts writes drift verdict counts as "ok 4, warn 1".
func verdictCounts(v map[drift.Verdict]int) string {
	var parts []string
	for _, k := range []drift.Verdict{drift.OK, drift.Warn, drift.Fail, drift.Unknown} {
		if v[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, v[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func num3(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
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
	type runJSON struct {
		Seed       int64          `json:"seed"`
		OA         jsonNum        `json:"oa"`
		RefOA      jsonNum        `json:"clean_oa_same_pixels"`
		Drop       jsonNum        `json:"drop"`
		TestPixels int            `json:"test_pixels"`
		Drift      map[string]any `json:"drift,omitempty"`
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
				rj.Drift = driftJSON(*d)
			}
			cj.Runs = append(cj.Runs, rj)
		}
		out.Cases = append(out.Cases, cj)
	}
	dc := e.DriftCheck()
	out.DriftCheck = map[string]any{"case_runs": dc.Runs, "missed": dc.BadOK, "false_alarms": dc.MustBeOKFlagged, "met": dc.Met(),
		"must_alarm": dc.Bad, "must_be_ok": dc.MustBeOK, "held": dc.Held, "held_flagged": dc.HeldFlagged, "held_failed": dc.HeldFailed,
		"ok_share_target": DriftOKShare, "alarm_points": DriftAlarmPoints, "target_points": ShiftTargetPoints,
		"thresholds": drift.DefaultThresholds.Limits}
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

// driftJSON is a run's drift as JSON: the verdict, its reasons, the mean
// reliability and every scalar figure under its key (drift.Figures;
// NaN as null), what ChooseDriftThresholds reads back.
func driftJSON(d drift.Report) map[string]any {
	out := map[string]any{"verdict": string(d.Verdict), "reliability": jsonNum(d.Reliability), "valid_cells": d.ValidCells}
	if len(d.Reasons) > 0 {
		out["reasons"] = d.Reasons
	}
	for _, f := range drift.Figures() {
		out[f.Key] = jsonNum(f.Value(d))
	}
	return out
}
