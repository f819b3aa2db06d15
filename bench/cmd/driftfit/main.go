// Command driftfit chooses the drift verdict's thresholds on the
// acquisition-shift protocol (docs/acquisitions.md) and reports them on case runs not
// used to choose them:
//
//	go run ./bench/cmd/driftfit -cases bench/drift-cases.csv \
//	    "SalinasA|choose=sal_choose.json" "JasperRidge|choose=jas_choose.json" \
//	    "SalinasA|report=sal.json" "JasperRidge|report=jas.json" \
//	    "SalinasA|confirm=sal_confirm.json" "JasperRidge|confirm=jas_confirm.json" \
//	    "SalinasA|blind=sal_blind.json" "JasperRidge|blind=jas_blind.json"
//
// Each argument is SCENE|SET=FILE, the JSON of a `pnec experiment --shift
// --json` run of the default model; SET is choose (seeds used to choose),
// report (other seeds), confirm or blind (seeds of models trained after
// the 4-point and the 3.5-point aim were set: every case of them is
// reported). The case runs of every file go to the -cases CSV
// (the record the thresholds are chosen from); without file arguments the
// CSV is read instead. The thresholds are chosen on the choose seeds' runs
// of the choosing half of the case families (evaluation.DriftChooseRun)
// and reported on the report seeds' runs of the other half, of all
// cases, and on every case of the confirm and blind seeds; -check exits 1 when drift.DefaultThresholds differ from the
// choice. -judge tallies drift.DefaultThresholds on the runs instead
// of choosing: for the record of models they were not chosen on (the
// fused decision's, bench/drift-cases-fused.csv).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/evaluation"
	"github.com/pnec/pnec/internal/tempfiles"
)

func main() {
	casesPath := flag.String("cases", "bench/drift-cases.csv", "case-run `CSV` to write (with JSON arguments) or read")
	check := flag.Bool("check", false, "exit 1 when drift.DefaultThresholds are not the choice")
	judge := flag.Bool("judge", false, "tally drift.DefaultThresholds on the runs instead of choosing: for a record of models the limits were not chosen on (bench/drift-cases-fused.csv)")
	figures := flag.String("figures", "", "comma-separated `KEYS` of the figures to choose from (default: evaluation.DriftCandidateFigures)")
	families := flag.String("families", "", "comma-separated case `FAMILIES` to choose on (default: evaluation.DriftChooseFamilies)")
	flag.Parse()
	if *figures != "" {
		evaluation.DriftCandidateFigures = strings.Split(*figures, ",")
	}
	if *families != "" {
		evaluation.DriftChooseFamilies = strings.Split(*families, ",")
	}
	var runs []evaluation.DriftCaseRun
	if flag.NArg() > 0 {
		for _, arg := range flag.Args() {
			key, file, ok := strings.Cut(arg, "=")
			scene, set, ok2 := strings.Cut(key, "|")
			if !ok || !ok2 || (set != evaluation.DriftSetChoose && set != evaluation.DriftSetReport && set != evaluation.DriftSetConfirm && set != evaluation.DriftSetBlind) {
				fail(fmt.Errorf("%q: want SCENE|SET=FILE with SET choose, report, confirm or blind", arg))
			}
			f, err := os.Open(file)
			if err != nil {
				fail(err)
			}
			rs, err := evaluation.ReadShiftCaseRuns(f, scene)
			f.Close()
			if err != nil {
				fail(fmt.Errorf("%s: %w", file, err))
			}
			for i := range rs {
				rs[i].Set = set
			}
			runs = append(runs, rs...)
		}
		var buf bytes.Buffer
		if err := evaluation.WriteDriftCaseRuns(&buf, runs); err != nil {
			fail(err)
		}
		if err := tempfiles.WriteFile(*casesPath, buf.Bytes(), 0o644); err != nil {
			fail(err)
		}
	} else {
		var err error
		if runs, err = evaluation.ReadDriftCaseRunsFile(*casesPath); err != nil {
			fail(err)
		}
	}
	if *judge {
		rows := evaluation.JudgedDriftTallies(drift.DefaultThresholds, runs)
		fmt.Printf("drift.DefaultThresholds on %d case runs none of which they were chosen on:\n", len(runs))
		for _, l := range drift.DefaultThresholds.Limits {
			fmt.Printf("  %-24s warn %-8g fail %g\n", l.Figure, l.Warn, l.Fail)
		}
		fmt.Println()
		if err := evaluation.WriteDriftTallyTable(os.Stdout, rows); err != nil {
			fail(err)
		}
		return
	}
	choice, err := evaluation.ChooseDriftThresholdsFor(runs)
	if err != nil {
		fail(err)
	}
	if err := evaluation.WriteDriftChoice(os.Stdout, choice, runs); err != nil {
		fail(err)
	}
	if *check && !choice.Thresholds.Equal(drift.DefaultThresholds) {
		fmt.Fprintf(os.Stderr, "driftfit: drift.DefaultThresholds %+v are not the choice %+v\n", drift.DefaultThresholds.Limits, choice.Thresholds.Limits)
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "driftfit: "+err.Error())
	os.Exit(1)
}
