package drift

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestDriftVerdictNotFinite: a figure that could not be measured is never
// ok (a degenerate radiometry gave NaN figures and ok):
// fail when the verdict judges it, warn otherwise; each limit fails and
// warns at its value, in the figure's direction.
func TestDriftVerdictNotFinite(t *testing.T) {
	th := Thresholds{Limits: []Limit{{Figure: "feature_far_share", Warn: 0.1, Fail: 0.5}, {Figure: "margin_ratio", Warn: 0.8}}}
	if err := th.Check(); err != nil {
		t.Fatal(err)
	}
	fine := Report{ValidPixels: 10, ValidCells: 2, FarShare: 0.5, DistanceRatio: 3, ReliabilityRatio: 0.5, FeatureFarShare: 0.01,
		FeatureDistanceRatio: 1, PrototypeMarginRatio: 1, UncertaintyRatio: 1, MarginRatio: 1, BrightnessRatio: 1}
	for _, tc := range []struct {
		name string
		set  func(*Report)
		want Verdict
	}{
		{"every figure finite", func(*Report) {}, OK},
		{"judged figure NaN", func(d *Report) { d.FeatureFarShare = math.NaN() }, Fail},
		{"judged figure +Inf", func(d *Report) { d.MarginRatio = math.Inf(1) }, Fail},
		{"other figure NaN", func(d *Report) { d.BrightnessRatio = math.NaN() }, Warn},
		{"other figure NaN, spectral", func(d *Report) { d.ReliabilityRatio = math.NaN() }, Warn},
		{"at the warn limit", func(d *Report) { d.FeatureFarShare = 0.1 }, Warn},
		{"at the fail limit", func(d *Report) { d.FeatureFarShare = 0.5 }, Fail},
		{"falling figure at its limit", func(d *Report) { d.MarginRatio = 0.8 }, Warn},
		{"falling figure above its limit", func(d *Report) { d.MarginRatio = 0.81 }, OK},
	} {
		d := fine
		tc.set(&d)
		v, reasons := th.Verdict(d)
		if v != tc.want || (v == OK) != (len(reasons) == 0) {
			t.Errorf("%s: verdict %s %q, want %s", tc.name, v, reasons, tc.want)
		}
	}
	if v, _ := th.Verdict(Report{}); v != Unknown {
		t.Errorf("no valid pixel: %s, want unknown", v)
	}
	for _, bad := range []Thresholds{
		{Limits: []Limit{{Figure: "nonsense", Warn: 1}}},
		{Limits: []Limit{{Figure: "margin_ratio", Warn: 0.8, Fail: 0.9}}},
		{Limits: []Limit{{Figure: "far_share", Warn: 0.5, Fail: 0.1}}},
		{Limits: []Limit{{Figure: "far_share"}}},
		{Limits: []Limit{{Figure: "far_share", Warn: 0.1}, {Figure: "far_share", Fail: 0.5}}},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("thresholds %+v passed the check", bad.Limits)
		}
	}
	if err := DefaultThresholds.Check(); err != nil {
		t.Errorf("DefaultThresholds: %v", err)
	}
}

// TestDriftVerdictBandShift: a scene whose bands the probe finds shifted
// by more than BandShiftBands either way is at least warn, with a reason
// naming the shift; within it, or with no such rule, the verdict is the
// limits' alone. A negative or infinite rule is refused.
func TestDriftVerdictBandShift(t *testing.T) {
	fine := Report{ValidPixels: 10, ValidCells: 2, FarShare: 0.5, DistanceRatio: 3, ReliabilityRatio: 0.5, FeatureFarShare: 0.01,
		FeatureDistanceRatio: 1, PrototypeMarginRatio: 1, UncertaintyRatio: 1, MarginRatio: 1, BrightnessRatio: 1}
	limits := []Limit{{Figure: "feature_far_share", Warn: 0.1, Fail: 0.5}}
	for _, tc := range []struct {
		name  string
		rule  float64
		shift float64
		far   float64
		want  Verdict
	}{
		{"no shift", 1, 0, 0.01, OK},
		{"at the rule", 1, -1, 0.01, OK},
		{"beyond it", 1, 1.5, 0.01, Warn},
		{"beyond it, the other way", 1, -3, 0.01, Warn},
		{"beyond it, a limit fails", 1, 3, 0.6, Fail},
		{"no rule", 0, 3, 0.01, OK},
	} {
		th := Thresholds{Limits: limits, BandShiftBands: tc.rule}
		if err := th.Check(); err != nil {
			t.Fatal(err)
		}
		d := fine
		d.RecalibrationBandShift, d.FeatureFarShare = tc.shift, tc.far
		v, reasons := th.Verdict(d)
		if v != tc.want {
			t.Errorf("%s: verdict %s %q, want %s", tc.name, v, reasons, tc.want)
		}
		named := slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(r, "bands") })
		if beyond := tc.rule > 0 && math.Abs(tc.shift) > tc.rule; named != beyond {
			t.Errorf("%s: reasons %q, want the band shift named %v", tc.name, reasons, beyond)
		}
	}
	for _, bad := range []float64{-1, math.Inf(1), math.NaN()} {
		if err := (Thresholds{Limits: limits, BandShiftBands: bad}).Check(); err == nil {
			t.Errorf("band shift rule %g passed the check", bad)
		}
	}
}
