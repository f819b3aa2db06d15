package evaluation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/internal/shareddata"
	"github.com/pnec/pnec/matfile"
	"github.com/pnec/pnec/model"
)

// TestShiftSalinasA runs the acquisition-shift protocol on SalinasA's fixed
// split with the default model, one seed (the tables in
// docs/acquisitions.md and BENCHMARKS.md are 5 seeds, both scenes and
// encoders: make bench-acquisitions). It checks the drift verdict's targets
// that one seed can (ok on at least 90% of the runs that lost at most 3
// points and fail on none of them; neither warn nor fail on the clean scene
// and its halves; warn or fail on every run that lost more than 10 points
// and on the other scene: between 5 and 10 points this seed's verdict missed
// 3 runs, 5.5-7.3 points, which bench/acquisitions.md counts) and guards the robustness:
// clean OA >= 97% and no target change costing more than 10 points: a
// guard against losing the robustness (the paper's input without
// augmentation loses 50-70), not the 3-point target, which is over 5 seeds
// (make bench-acquisitions). One seed is much noisier: with the default
// (paper) encoder a -10% wave-shaped tilt cost 0.76-8.41 points over the
// five seeds 202501-202505, 8.41 with this test's.
func TestShiftSalinasA(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the default model on SalinasA (about a minute alone): skipped with -short")
	}
	data, err := shareddata.Find(".")
	if err != nil {
		t.Skipf("real data not found (%v)", err)
	}
	read := func(file, name string) (int, int, int, []float32) {
		a, err := matfile.ReadArray(filepath.Join(data, file), name)
		if err != nil {
			t.Fatal(err)
		}
		r, c, b, px, err := a.Image()
		if err != nil {
			t.Fatal(err)
		}
		return r, c, b, px
	}
	rows, cols, bands, px := read("SalinasA/SalinasA_corrected.mat", "salinasA_corrected")
	s := model.Scene{Rows: rows, Cols: cols, Bands: bands, Data: px}
	toLabels := func(v []float32) []int32 {
		out := make([]int32, len(v))
		for i, x := range v {
			out[i] = int32(x)
		}
		return out
	}
	_, _, _, gt := read("SalinasA/SalinasA_gt.mat", "salinasA_gt")
	_, _, _, split := read("SalinasA/SalinasA_train_seed12345.mat", "train")
	jr, jc, jb, jpx, err := matfile.ReadUnmixing(filepath.Join(data, "JasperRidge/JasperRidge2_R198.mat"))
	if err != nil {
		t.Fatal(err)
	}
	other := model.Scene{Rows: jr, Cols: jc, Bands: jb, Data: jpx}
	exp, err := RunShift(context.Background(), s, toLabels(gt), ShiftOptions{
		Runs: 1, Train: model.TrainOptions{TrainMask: toLabels(split), Backend: "go"}, Eval: EvalOptions{Backend: "go"},
		Other: &other, OtherName: "JasperRidge",
	})
	if err != nil {
		t.Fatal(err)
	}
	clean := exp.Clean()
	worst, _ := exp.WorstTarget()
	dc := exp.DriftCheck()
	t.Logf("clean OA %.2f%%, largest target drop %.2f points (%s), drift: ok on %d of %d runs that held (%d fail), %d of %d runs that lost more than %g points ok, %d of %d clean and halves flagged",
		100*clean.OA.Mean, 100*worst.Drop.Mean, worst.Case.Name, dc.Held-dc.HeldFlagged, dc.Held, dc.HeldFailed, dc.BadOK, dc.Bad, DriftAlarmPoints, dc.MustBeOKFlagged, dc.MustBeOK)
	if dc.OKShare() < DriftOKShare || dc.HeldFailed > 0 || dc.MustBeOKFlagged > 0 {
		t.Errorf("drift verdict: ok on %.0f%% of the runs that held, %d of them fail, %d clean scene or halves flagged; want >= %.0f%%, 0, 0",
			100*dc.OKShare(), dc.HeldFailed, dc.MustBeOKFlagged, 100*DriftOKShare)
	}
	for _, r := range exp.Cases {
		for _, run := range r.Runs {
			if run.Drift != nil && run.Drift.Verdict == drift.OK && (r.Case.Other || 100*run.Drop > 10) {
				t.Errorf("%s: lost %.2f points, verdict ok (%+v)", r.Case.Name, 100*run.Drop, run.Drift)
			}
		}
	}
	if clean.OA.Mean < 0.97 {
		t.Errorf("clean OA %.2f%%, want >= 97%%", 100*clean.OA.Mean)
	}
	if 100*worst.Drop.Mean > 10 {
		t.Errorf("%s costs %.2f points, want <= 10 for one seed", worst.Case.Name, 100*worst.Drop.Mean)
	}
}
