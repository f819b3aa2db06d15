package drift

import (
	"testing"

	"github.com/pnec/pnec/tiling"
)

// TestProbeWindows: a scene that fits is its own window; a larger one
// gets the centred window first, then others over a 3x3 grid, each
// ProbeSide a side, inside the scene, on the stride grid; the choice
// takes the first with enough valid pixels, else the one with the most.
func TestProbeWindows(t *testing.T) {
	if w := ProbeWindows(83, 86); len(w) != 1 || w[0] != (tiling.Rect{Rows: 83, Cols: 86}) {
		t.Errorf("83x86 scene: windows %v, want the scene", w)
	}
	ws := ProbeWindows(610, 340)
	if len(ws) != 9 || ws[0] != (tiling.Rect{Row: 256, Col: 120, Rows: ProbeSide, Cols: ProbeSide}) {
		t.Fatalf("610x340 scene: windows %v, want 9, the centred one first", ws)
	}
	for _, w := range ws {
		if w.Row%GridStride != 0 || w.Col%GridStride != 0 || w.Row < 0 || w.Col < 0 || w.Row+w.Rows > 610 || w.Col+w.Cols > 340 {
			t.Errorf("window %v off the stride grid or outside the scene", w)
		}
	}
	if ws := ProbeWindows(40, 500); len(ws) != 3 || ws[0].Rows != 40 || ws[0].Cols != ProbeSide {
		t.Errorf("40x500 scene: windows %v, want 3 along the row", ws)
	}
	full := ProbeSide * ProbeSide
	for _, tc := range []struct {
		valid []int
		want  int
	}{
		{[]int{full, full}, 0},
		{[]int{full / 4, full / 2, full}, 1},
		{[]int{full / 4, full / 3, 10}, 1},
		{[]int{0, 0, 0}, -1},
	} {
		if got := ChooseProbeWindow(ws, tc.valid); got != tc.want {
			t.Errorf("valid pixels %v: window %d, want %d", tc.valid, got, tc.want)
		}
	}
}

// TestNearestValid: the valid pixel nearest the centre, whatever the
// order and pieces rows come in (ties to the first in row-major order);
// ProbeCandidates adds the window around it, which holds it, last.
func TestNearestValid(t *testing.T) {
	const rows, cols = 900, 900
	inside := func(r, c int) bool { return r-c >= 130 && r-c < 170 }
	feed := func(order []int, piece int) NearestValid {
		v := NewNearestValid(rows, cols)
		valid := make([]bool, cols)
		for _, r := range order {
			for c := range cols {
				valid[c] = inside(r, c)
			}
			for c0 := 0; c0 < cols; c0 += piece {
				n := min(piece, cols-c0)
				v.AddRow(r, c0, n, valid[c0:c0+n])
			}
		}
		return v
	}
	down := make([]int, rows)
	up := make([]int, rows)
	for i := range rows {
		down[i], up[i] = i, rows-1-i
	}
	a, b := feed(down, cols), feed(up, 256)
	ra, ca, oka := a.Nearest()
	rb, cb, okb := b.Nearest()
	// |2r-899|^2 + |2c-899|^2 is least on r-c = 130 at r = 514, c = 384
	// and r = 515, c = 385 alike (both 129^2 + 131^2 in half pixels); the
	// first in row-major order wins.
	if !oka || !okb || ra != 514 || ca != 384 || rb != ra || cb != ca {
		t.Errorf("nearest valid (%d,%d,%v) top down, (%d,%d,%v) bottom up in pieces: want (514,384) both", ra, ca, oka, rb, cb, okb)
	}
	ws := ProbeCandidates(rows, cols, a)
	if len(ws) != len(ProbeWindows(rows, cols))+1 {
		t.Fatalf("candidates %v: want the grid's and one more", ws)
	}
	if w := ws[len(ws)-1]; ra < w.Row || ra >= w.Row+w.Rows || ca < w.Col || ca >= w.Col+w.Cols || w.Rows != ProbeSide || w.Cols != ProbeSide {
		t.Errorf("last candidate %v does not hold (%d,%d)", w, ra, ca)
	}

	all := NewNearestValid(83, 86) // rows with no mask: the centre
	for r := range 83 {
		all.AddRow(r, 0, 86, nil)
	}
	if r, c, ok := all.Nearest(); !ok || r != 41 || c != 42 {
		t.Errorf("all valid 83x86: nearest (%d,%d,%v), want (41,42)", r, c, ok)
	}
	if ws := ProbeCandidates(83, 86, all); len(ws) != 1 {
		t.Errorf("83x86: candidates %v, want the scene alone", ws)
	}
	if _, _, ok := NewNearestValid(10, 10).Nearest(); ok {
		t.Error("no rows added: want none found")
	}
}
