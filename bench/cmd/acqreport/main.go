// Command acqreport renders the acquisition-shift tables (bench/acquisitions.md)
// from the JSON of `pnec experiment --shift --json` runs:
//
//	go run ./bench/cmd/acqreport -out bench/acquisitions.md -commands CMDS.txt \
//	    "SalinasA|cell|default=sal_cell.json" "SalinasA|cell|reference input=sal_cell_ref.json" ...
//
// Each argument is SCENE|ENCODER|VARIANT=FILE, or SCENE|ENCODER|VARIANT|nodrift=FILE
// for a run whose drift verdicts are left out (made by a pnec whose verdict
// differs from the one reported). The report has a summary row per run set,
// the largest drop per family of changes, and every case; with -drift-cases
// (the case-run record bench/cmd/driftfit writes), the drift verdict against
// the OA drop, by the chosen limits and by the spectral figures alone,
// per scene.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/evaluation"
	"github.com/pnec/pnec/internal/tempfiles"
)

// stat is a mean and standard deviation (null in JSON: NaN).
type stat struct {
	Mean *float64 `json:"mean"`
	Std  *float64 `json:"std"`
}

func (s stat) mean() float64 {
	if s.Mean == nil {
		return math.NaN()
	}
	return *s.Mean
}

func (s stat) std() float64 {
	if s.Std == nil {
		return math.NaN()
	}
	return *s.Std
}

type driftRun struct {
	Verdict          string   `json:"verdict"`
	FarShare         *float64 `json:"far_share"`
	ReliabilityRatio *float64 `json:"reliability_ratio"`
}

type caseRun struct {
	Seed  int64     `json:"seed"`
	OA    *float64  `json:"oa"`
	Drop  *float64  `json:"drop"`
	Drift *driftRun `json:"drift"`
}

type shiftCase struct {
	Name     string    `json:"name"`
	Families []string  `json:"families"`
	Target   bool      `json:"target"`
	Strong   bool      `json:"strong"`
	Other    bool      `json:"other_scene"`
	OA       stat      `json:"oa"`
	Drop     stat      `json:"drop"`
	MaxDrop  *float64  `json:"max_drop"`
	Runs     []caseRun `json:"runs"`
}

type experiment struct {
	Size      []int `json:"scene_rows_cols_bands"`
	Backend   string
	FirstSeed int64 `json:"first_seed"`
	Runs      int   `json:"runs"`
	Config    struct {
		Epochs  int
		Encoder string
		Input   string
		Augment struct {
			Prob, Gain, Tilt, Offset, Noise, BandShift, CleanTail float64
			ImageNorm                                             bool
		}
	} `json:"config"`
	TrainSeconds stat        `json:"train_seconds"`
	Cases        []shiftCase `json:"cases"`
	Disjoint     *struct {
		TrainArea string `json:"train_area"`
		TestArea  string `json:"test_area"`
		SameHalf  stat   `json:"oa_same_half"`
		OtherHalf stat   `json:"oa_other_half"`
	} `json:"disjoint_split"`
	DriftCheck struct {
		CaseRuns    int  `json:"case_runs"`
		Missed      int  `json:"missed"`
		MustAlarm   int  `json:"must_alarm"`
		FalseAlarms int  `json:"false_alarms"`
		MustBeOK    int  `json:"must_be_ok"`
		Held        *int `json:"held"`
		HeldFlagged int  `json:"held_flagged"`
		HeldFailed  int  `json:"held_failed"`
		Met         bool `json:"met"`
	} `json:"drift_check"`
}

type set struct {
	scene, encoder, variant string
	noDrift                 bool
	exp                     experiment
}

func main() {
	out := flag.String("out", "bench/acquisitions.md", "markdown `FILE` to write")
	commands := flag.String("commands", "", "`FILE` of the commands that made the JSON (quoted in the report)")
	note := flag.String("note", "", "a line on the machine and conditions")
	driftCases := flag.String("drift-cases", "", "case-run `CSV` of the default model (bench/cmd/driftfit): the drift verdict's table")
	flag.StringVar(&reportTitle, "title", reportTitle, "the report's `HEADING`")
	flag.BoolVar(&judged, "judged", false, "the -drift-cases record is of models the limits were not chosen on (driftfit -judge): say so, and name its choose seeds' rows for what they are")
	flag.Parse()
	var driftRuns []evaluation.DriftCaseRun
	if *driftCases != "" {
		var err error
		if driftRuns, err = evaluation.ReadDriftCaseRunsFile(*driftCases); err != nil {
			fail(err)
		}
	}
	var sets []set
	for _, arg := range flag.Args() {
		key, file, ok := strings.Cut(arg, "=")
		parts := strings.Split(key, "|")
		noDrift := len(parts) == 4 && parts[3] == "nodrift"
		if !ok || (len(parts) != 3 && !noDrift) {
			fail(fmt.Errorf("%q: want SCENE|ENCODER|VARIANT=FILE or SCENE|ENCODER|VARIANT|nodrift=FILE", arg))
		}
		b, err := os.ReadFile(file)
		if err != nil {
			fail(err)
		}
		var e experiment
		if err := json.Unmarshal(b, &e); err != nil {
			fail(fmt.Errorf("%s: %w", file, err))
		}
		sets = append(sets, set{parts[0], parts[1], parts[2], noDrift, e})
	}
	if len(sets) == 0 {
		fail(fmt.Errorf("no SCENE|ENCODER|VARIANT=FILE given"))
	}
	var cmds string
	if *commands != "" {
		b, err := os.ReadFile(*commands)
		if err != nil {
			fail(err)
		}
		cmds = strings.TrimSpace(string(b))
	}
	md := render(sets, cmds, *note)
	if len(driftRuns) > 0 {
		md += renderDrift(driftRuns)
	}
	if err := tempfiles.WriteFile(*out, []byte(md), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "acqreport: "+err.Error())
	os.Exit(1)
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", 100*v)
}

func pm(s stat) string {
	if math.IsNaN(s.mean()) {
		return "-"
	}
	return fmt.Sprintf("%.2f ± %.2f", 100*s.mean(), 100*s.std())
}

func f(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// targetPoints is the robustness target (evaluation.ShiftTargetPoints).
const targetPoints = 3.0

func render(sets []set, cmds, note string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", reportTitle)
	fmt.Fprintf(&b, "Each model is trained on the scene's fixed split (`*_train_seed12345`) and scored, after the AvgPool recovery, on the test pixels of the same scene changed as a new acquisition would be; the drop is the clean scene's OA on the same pixels minus the changed scene's, in points, as the mean over runs. Target cases (T): gain 0.85-1.15, tilt +-10%%, offset +-3%%, +-1 band, a sub-area (another class mix) and their pairwise combinations, each at most %g points. Strong cases (S) check the drift verdict only. What the changes are and what the drift verdict means: [docs/acquisitions.md](../docs/acquisitions.md).\n\n", targetPoints)
	if note != "" {
		fmt.Fprintf(&b, "%s\n\n", note)
	}
	fmt.Fprintf(&b, "Generated %s by `go run ./bench/cmd/acqreport` from the JSON of the commands below.\n\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	if cmds != "" {
		fmt.Fprintf(&b, "```sh\n%s\n```\n\n", cmds)
	}
	renderSummary(&b, sets)
	renderModels(&b, sets)
	renderFamilies(&b, sets)
	renderCases(&b, sets)
	return b.String()
}

// renderSummary writes the summary table: a row per run set.
func renderSummary(b *strings.Builder, sets []set) {
	fmt.Fprintf(b, "### Summary\n\n")
	fmt.Fprintf(b, "| scene | encoder | model | runs | clean OA %% | largest target drop (case) | target cases above %g points | disjoint split: OA same half / other half %% | drift: warn or fail on runs that lost <= %g points (fail) / ok on runs that lost > 5 or another scene / warn or fail on the clean scene and halves | train s per run |\n", targetPoints, targetPoints)
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range sets {
		b.WriteString(summaryRow(s))
	}
}

// summaryRow is run set s's summary: its clean OA, its largest target
// drop, the target cases above the target, the disjoint split and the
// drift check.
func summaryRow(s set) string {
	e := s.exp
	var clean shiftCase
	worst := shiftCase{}
	worstDrop := math.Inf(-1)
	above := 0
	targets := 0
	for _, c := range e.Cases {
		if c.Name == "clean" {
			clean = c
		}
		if c.Target {
			targets++
			if d := c.Drop.mean(); d > worstDrop {
				worstDrop, worst = d, c
			}
			if 100*c.Drop.mean() > targetPoints {
				above++
			}
		}
	}
	dj := "-"
	if e.Disjoint != nil {
		dj = fmt.Sprintf("%s / %s (%s -> %s)", pm(e.Disjoint.SameHalf), pm(e.Disjoint.OtherHalf), e.Disjoint.TrainArea, e.Disjoint.TestArea)
	}
	dc := "-"
	if d := e.DriftCheck; d.CaseRuns > 0 && d.Held != nil && !s.noDrift {
		dc = fmt.Sprintf("%d of %d (%d) / %d of %d / %d of %d", d.HeldFlagged, *d.Held, d.HeldFailed, d.Missed, d.MustAlarm, d.FalseAlarms, d.MustBeOK)
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %s | %s (%s) | %d of %d | %s | %s | %.0f |\n", s.scene, s.encoder, s.variant, e.Runs, pm(clean.OA),
		pct(worstDrop), worst.Name, above, targets, dj, dc, e.TrainSeconds.mean())
}

// renderModels writes the line describing each model variant once: its
// input, augmentation and epochs.
func renderModels(b *strings.Builder, sets []set) {
	fmt.Fprintf(b, "\nModels: ")
	seen := map[string]bool{}
	for _, s := range sets {
		if seen[s.variant] {
			continue
		}
		seen[s.variant] = true
		c := s.exp.Config
		aug := "off"
		if a := c.Augment; a.Prob > 0 {
			norm := "clean-scene GroupNorm statistics"
			if a.ImageNorm {
				norm = "per-image GroupNorm statistics"
			}
			aug = fmt.Sprintf("p=%g, gain %g, tilt %g, offset %g, noise %g, shift %g bands, clean tail %g, %s", a.Prob, a.Gain, a.Tilt, a.Offset, a.Noise, a.BandShift, a.CleanTail, norm)
		}
		input := c.Input
		if input == "" {
			input = "stretch"
		}
		fmt.Fprintf(b, "*%s*: input `%s`, augmentation %s, %d epochs. ", s.variant, input, aug, c.Epochs)
	}
	fmt.Fprintf(b, "\n\n")
}

// caseFamily is the kind of change a case makes: its one family,
// "pairs" for a combination, "strong" for a strong case.
func caseFamily(c shiftCase) string {
	switch {
	case c.Strong:
		return "strong"
	case len(c.Families) > 1:
		return "pairs"
	case len(c.Families) == 1:
		return c.Families[0]
	}
	return ""
}

// renderSetColumns writes a table's header: the first columns, then a
// column per run set.
func renderSetColumns(b *strings.Builder, sets []set, first, rule string) {
	fmt.Fprintf(b, "%s", first)
	for _, s := range sets {
		fmt.Fprintf(b, " %s %s %s |", s.scene, s.encoder, s.variant)
	}
	fmt.Fprintf(b, "\n%s", rule)
	for range sets {
		fmt.Fprintf(b, "---|")
	}
	fmt.Fprintln(b)
}

// renderFamilies writes the largest mean drop per kind of change, over
// all cases and over target cases only (cases on another scene left out).
func renderFamilies(b *strings.Builder, sets []set) {
	families := []string{"gain", "tilt", "offset", "noise", "band-shift", "class-mix", "pairs", "strong"}
	fmt.Fprintf(b, "### Largest mean drop per kind of change (points; T = target cases only)\n\n")
	renderSetColumns(b, sets, "| kind |", "|---|")
	for _, fam := range families {
		for _, targetOnly := range []bool{true, false} {
			label := fam
			if targetOnly {
				label += " (T)"
			}
			row := fmt.Sprintf("| %s |", label)
			any := false
			for _, s := range sets {
				worst := math.Inf(-1)
				name := ""
				for _, c := range s.exp.Cases {
					if caseFamily(c) != fam || (targetOnly && !c.Target) || c.Other {
						continue
					}
					if d := c.Drop.mean(); d > worst {
						worst, name = d, c.Name
					}
				}
				if math.IsInf(worst, -1) {
					row += " - |"
					continue
				}
				any = true
				row += fmt.Sprintf(" %s (%s) |", pct(worst), name)
			}
			if any {
				fmt.Fprintln(b, row)
			}
		}
	}
	fmt.Fprintln(b)
}

// renderCases writes every case's mean drop per run set, with the runs'
// drift verdicts.
func renderCases(b *strings.Builder, sets []set) {
	fmt.Fprintf(b, "### Every case: mean drop in points (drift verdicts of the runs: ok/warn/fail)\n\n")
	renderSetColumns(b, sets, "| case | set |", "|---|---|")
	names, kind := caseNames(sets)
	for _, n := range names {
		label := n
		if strings.HasPrefix(n, "other scene: ") {
			label = "other scene"
		}
		fmt.Fprintf(b, "| %s | %s |", label, kind[n])
		for _, s := range sets {
			b.WriteString(caseCell(s, n))
		}
		fmt.Fprintln(b)
	}
}

// caseNames lists the cases of all run sets once, in the order of their
// first appearance's index, with their kind (T target, S strong).
func caseNames(sets []set) ([]string, map[string]string) {
	names := []string{}
	kind := map[string]string{}
	index := map[string]int{}
	for _, s := range sets {
		for i, c := range s.exp.Cases {
			if _, ok := kind[c.Name]; !ok {
				names = append(names, c.Name)
				index[c.Name] = i
				switch {
				case c.Target:
					kind[c.Name] = "T"
				case c.Strong:
					kind[c.Name] = "S"
				default:
					kind[c.Name] = ""
				}
			}
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return index[names[i]] < index[names[j]] })
	return names, kind
}

// caseCell is case n's cell in run set s's column: its mean drop and the
// tally of its runs' drift verdicts (empty when s has no such case).
func caseCell(s set, n string) string {
	cell := " |"
	for _, c := range s.exp.Cases {
		if c.Name != n {
			continue
		}
		counts := map[string]int{}
		for _, r := range c.Runs {
			if r.Drift != nil && !s.noDrift {
				counts[r.Drift.Verdict]++
			}
		}
		v := ""
		if len(counts) > 0 {
			v = fmt.Sprintf(" (%d/%d/%d)", counts["ok"], counts["warn"], counts["fail"])
		}
		cell = fmt.Sprintf(" %s%s |", pct(c.Drop.mean()), v)
	}
	return cell
}

// reportTitle is the report's level-2 heading (-title).
var reportTitle = "New acquisitions: the acquisition-shift protocol (pnec experiment --shift)"

// judged says the drift record's runs were none of them chosen on
// (-judged).
var judged bool

// tallies is evaluation.DriftTallies, or JudgedDriftTallies for a judged
// record.
func tallies(t drift.Thresholds, runs []evaluation.DriftCaseRun) []evaluation.DriftTallyRow {
	if judged {
		return evaluation.JudgedDriftTallies(t, runs)
	}
	return evaluation.DriftTallies(t, runs)
}

// renderDrift is the drift verdict against the OA drop: the limits of
// drift.DefaultThresholds, then per scene the tallies of the verdict
// and of the verdict by the spectral figures alone on the same case runs.
func renderDrift(runs []evaluation.DriftCaseRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### The drift verdict against the OA drop (default model: paper encoder, shape input, augmentation)\n\n")
	fmt.Fprintf(&b, "Case runs counted by the OA points they lost. Targets (issue 33): `ok` on at least %.0f%% of the runs that lost at most %g points; `warn` or `fail` on every run that lost more than %g (and on another scene), `fail` only on runs that lost more than %g; neither on the clean scene nor on a half of it alone. ", 100*evaluation.DriftOKShare, evaluation.ShiftTargetPoints, evaluation.DriftAlarmPoints, evaluation.ShiftTargetPoints)
	fmt.Fprintf(&b, "The limits are chosen by `go run ./bench/cmd/driftfit` on the choose seeds' runs of the case families %s (and the clean scene); *held out* are the report seeds' runs of the other families (gain, noise, band shift, another scene, and pairs with one of them), *report seeds, every case* all runs of the report seeds, none of which was used to choose (the choosing rule's aim, runs that lost more than %g points, was set after the report seeds' results of an earlier aim were seen), *confirm seeds, every case* all runs of models first trained after the 4-point aim was set, *blind seeds, every case* all runs of models first trained after the aim of %g points (first tried on the confirm seeds) was set.\n\n", strings.Join(evaluation.DriftChooseFamilies, ", "), evaluation.DriftChooseAlarmPoints, evaluation.DriftChooseAlarmPoints)
	fmt.Fprintf(&b, "Limits (`drift.DefaultThresholds`):")
	for _, l := range drift.DefaultThresholds.Limits {
		fmt.Fprintf(&b, " `%s`", l.Figure)
		if l.Warn > 0 {
			fmt.Fprintf(&b, " warn at %g", l.Warn)
		}
		if l.Fail > 0 {
			fmt.Fprintf(&b, " fail at %g", l.Fail)
		}
		fmt.Fprintf(&b, ";")
	}
	fmt.Fprintf(&b, " and fail wherever a judged figure is not finite.\n\n")
	fmt.Fprintf(&b, "After (the verdict products now carry):\n\n")
	if judged {
		fmt.Fprintf(&b, "These models decide fused (the default since issue 45); the limits were chosen on the network's decision's record (bench/drift-cases.csv), so none of these runs was chosen on.\n\n")
	}
	_ = evaluation.WriteDriftTallyTable(&b, tallies(drift.DefaultThresholds, runs))
	own, n := evaluation.ChangeOwnLoss(runs)
	fmt.Fprintf(&b, "\nThe same verdict with the %d runs of a change on a half counted by what the change itself lost (the run's drop less that of the same half unchanged, same model: `evaluation.ChangeOwnLoss`). The protocol counts a half's own loss (another class mix; a half alone must stay `ok`) against the whole scene's OA, so a change that costs the half little can pass the 5-point mark; this view shows what the verdict answers for:\n\n", n)
	_ = evaluation.WriteDriftTallyTable(&b, tallies(drift.DefaultThresholds, own))
	renderCatchAll(&b, runs)
	fmt.Fprintf(&b, "\nBefore (spectral figures only, the limits of pnec at 2ebb491), on the same runs:\n\n")
	_ = evaluation.WriteDriftTallyTable(&b, tallies(evaluation.LegacyDriftThresholds, runs))
	return b.String()
}

// catchAllFigure is the figure renderCatchAll lowers: the probe's share,
// the one that flags the runs the verdict leaves ok on the protocol's
// count.
const catchAllFigure = "recalibration_change_share"

// renderCatchAll is what meeting the protocol's own count with the
// probe's share alone would cost: per scene and seed set (and over all
// four sets), the warn limit on catchAllFigure that flags every run that
// lost more than DriftAlarmPoints (evaluation.CatchAllWarn), and the share
// of the runs that held left ok at it beside the products' limits.
func renderCatchAll(b *strings.Builder, runs []evaluation.DriftCaseRun) {
	def, _ := drift.DefaultThresholds.Limit(catchAllFigure)
	fmt.Fprintf(b, "\nOn the protocol's own count, what flagging every run that lost more than %g points would take from one limit: the warn limit on `%s` (products: %g) that flags them all beside the other limits, and the runs that held (lost at most %g points) still `ok` at it (target %.0f%%):\n\n",
		evaluation.DriftAlarmPoints, catchAllFigure, def.Warn, evaluation.ShiftTargetPoints, 100*evaluation.DriftOKShare)
	fmt.Fprintf(b, "| scene | seeds | runs that lost > %g points (or another scene) left ok | warn limit that flags them all | held runs ok at the products' limits | held runs ok at that limit |\n|---|---|---|---|---|---|\n", evaluation.DriftAlarmPoints)
	const allSets = "all four"
	sets := []string{evaluation.DriftSetChoose, evaluation.DriftSetReport, evaluation.DriftSetConfirm, evaluation.DriftSetBlind, allSets}
	var scenes []string // in the order the runs give them
	for _, r := range runs {
		if !slices.Contains(scenes, r.Scene) {
			scenes = append(scenes, r.Scene)
		}
	}
	for _, sc := range scenes {
		for _, set := range sets {
			var rs []evaluation.DriftCaseRun
			for _, r := range runs {
				if r.Scene == sc && (r.Set == set || set == allSets) {
					rs = append(rs, r)
				}
			}
			if len(rs) == 0 {
				continue
			}
			before := evaluation.TallyDrift(drift.DefaultThresholds, rs)
			t, err := evaluation.CatchAllWarn(drift.DefaultThresholds, catchAllFigure, rs)
			if err != nil {
				fail(err)
			}
			after := evaluation.TallyDrift(t, rs)
			l, _ := t.Limit(catchAllFigure)
			fmt.Fprintf(b, "| %s | %s | %d of %d | %.4g | %s%% | %s%% |\n", sc, set, before.BadOK, before.Bad, l.Warn, pct(before.OKShare()), pct(after.OKShare()))
		}
	}
}
