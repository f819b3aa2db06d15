package grid

import (
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"
)

func TestFootprint(t *testing.T) {
	gt := [6]float64{500000, 2, 0, 4200000, 0, -2} // 2 m pixels, north up
	r := Rect{Col: 10, Row: 20, Cols: 30, Rows: 40}
	poly := r.Footprint(gt)
	if len(poly) != 1 || len(poly[0]) != 5 || !poly[0].Closed() {
		t.Fatalf("got %v, want one closed ring of 5 points", poly)
	}
	if got, want := planar.Area(poly), 60.0*80.0; got != want {
		t.Errorf("got area %v m², want %v", got, want)
	}
	if got := poly[0].Orientation(); got != orb.CCW {
		t.Errorf("got orientation %v, want CCW", got)
	}
	wantBound := orb.Bound{Min: orb.Point{500020, 4200000 - 120}, Max: orb.Point{500080, 4200000 - 40}}
	if got := poly.Bound(); got != wantBound {
		t.Errorf("got bound %v, want %v", got, wantBound)
	}
}
