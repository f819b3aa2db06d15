package geo

import (
	"math"
	"slices"
	"testing"
)

func TestParseNumberList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
		err  bool
	}{
		{"{ 400.5, 410 , 420}", []float64{400.5, 410, 420}, false},
		{"0.45,0.55\n,0.65", []float64{0.45, 0.55, 0.65}, false},
		{"{}", []float64{}, false},
		{"{1, x}", nil, true},
	} {
		got, err := parseNumberList(tc.in)
		if (err != nil) != tc.err || (!tc.err && !slices.Equal(got, tc.want)) {
			t.Errorf("%q: got %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestToNM(t *testing.T) {
	for _, tc := range []struct {
		vals []float64
		unit string
		want []float64
	}{
		{[]float64{450, 2500}, "Nanometers", []float64{450, 2500}},
		{[]float64{0.45, 2.5}, "Micrometers", []float64{450, 2500}},
		{[]float64{0.45, 2.5}, "um", []float64{450, 2500}},
		{[]float64{0.45, 2.5}, "", []float64{450, 2500}},       // no unit, small values: micrometres
		{[]float64{450, 2500}, "", []float64{450, 2500}},       // no unit, large values: nanometres
		{[]float64{10000}, "cm-1", []float64{1000}},            // wavenumber
		{[]float64{0.00045}, "mm", []float64{450}},             //
		{[]float64{450, 900}, "furlongs", []float64{450, 900}}, // unknown unit: magnitude rule
	} {
		got := toNM(tc.vals, tc.unit)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Errorf("%v %q: got %v, want %v", tc.vals, tc.unit, got, tc.want)
				break
			}
		}
	}
}

// FuzzParseNumberList checks that any header text gives numbers or an
// error, never a panic, and that formatted lists parse back.
func FuzzParseNumberList(f *testing.F) {
	f.Add("{ 400.5, 410 , 420}")
	f.Add("{1e3,\n-2,NaN}")
	f.Add("}{,,")
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := parseNumberList(s)
		if err != nil {
			return
		}
		back, err := parseNumberList(formatNumberList(vals))
		if err != nil || len(back) != len(vals) {
			t.Fatalf("%q -> %v -> %v (%v)", s, vals, back, err)
		}
		for i := range vals {
			if back[i] != vals[i] && !(math.IsNaN(back[i]) && math.IsNaN(vals[i])) {
				t.Fatalf("round trip %v -> %v", vals, back)
			}
		}
	})
}
