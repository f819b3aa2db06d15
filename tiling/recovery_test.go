package tiling

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// naiveRecover is the O(k^2) oracle: for every valid pixel, the mean of the
// valid in-scene pixels of its window, blended with the pixel itself.
func naiveRecover(prob []float32, valid []bool, rows, cols, classes int, p Recovery) []float32 {
	out := make([]float32, len(prob))
	h := p.Window / 2
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			i := r*cols + c
			if valid != nil && !valid[i] {
				continue
			}
			sum := make([]float64, classes)
			n := 0
			for rr := r - h; rr <= r+h; rr++ {
				for cc := c - h; cc <= c+h; cc++ {
					if rr < 0 || cc < 0 || rr >= rows || cc >= cols {
						continue
					}
					j := rr*cols + cc
					if valid != nil && !valid[j] {
						continue
					}
					n++
					for k := 0; k < classes; k++ {
						sum[k] += float64(prob[j*classes+k])
					}
				}
			}
			for k := 0; k < classes; k++ {
				out[i*classes+k] = float32((1-p.Eta)*float64(prob[i*classes+k]) + p.Eta*sum[k]/float64(n))
			}
		}
	}
	return out
}

func randomProb(rng *rand.Rand, pixels, classes int) []float32 {
	p := make([]float32, pixels*classes)
	for i := 0; i < pixels; i++ {
		s := float32(0)
		for k := 0; k < classes; k++ {
			v := rng.Float32()
			p[i*classes+k] = v
			s += v
		}
		for k := 0; k < classes; k++ {
			p[i*classes+k] /= s
		}
	}
	return p
}

func randomValid(rng *rand.Rand, n int, frac float64) []bool {
	v := make([]bool, n)
	for i := range v {
		v[i] = rng.Float64() >= frac
	}
	return v
}

func maxAbsDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func TestRecoverMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		rows, cols, classes int
		p                   Recovery
		invalidFrac         float64
		nilValid            bool
	}{
		{1, 1, 3, Recovery{9, 1}, 0, true},
		{7, 5, 4, Recovery{9, 1}, 0.2, false},
		{13, 17, 6, Recovery{9, 1}, 0.1, false},
		{13, 17, 6, Recovery{11, 0.85}, 0.3, false},
		{20, 3, 2, Recovery{13, 1}, 0, true},
		{31, 29, 5, Recovery{3, 0.5}, 0.5, false},
		{9, 40, 9, Recovery{1, 1}, 0.1, false},
		{9, 40, 9, Recovery{5, 0}, 0.1, false},
		{16, 16, 3, Recovery{7, 1}, 1, false}, // nothing valid
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%dx%dx%d_k%d_eta%g_inv%g", tc.rows, tc.cols, tc.classes, tc.p.Window, tc.p.Eta, tc.invalidFrac)
		t.Run(name, func(t *testing.T) {
			prob := randomProb(rng, tc.rows*tc.cols, tc.classes)
			var valid []bool
			if !tc.nilValid {
				valid = randomValid(rng, tc.rows*tc.cols, tc.invalidFrac)
			}
			got := Recover(prob, valid, tc.rows, tc.cols, tc.classes, tc.p)
			want := naiveRecover(prob, valid, tc.rows, tc.cols, tc.classes, tc.p)
			if d := maxAbsDiff(got, want); d > 1e-6 {
				t.Fatalf("max |got-want| = %g, want <= 1e-6", d)
			}
			// Valid outputs stay distributions; invalid ones are zero.
			for i := 0; i < tc.rows*tc.cols; i++ {
				s := 0.0
				for k := 0; k < tc.classes; k++ {
					s += float64(got[i*tc.classes+k])
				}
				if valid != nil && !valid[i] {
					if s != 0 {
						t.Fatalf("invalid pixel %d: got sum %g, want 0", i, s)
					}
				} else if math.Abs(s-1) > 1e-5 {
					t.Fatalf("valid pixel %d: got sum %g, want 1", i, s)
				}
			}
		})
	}
}

// TestRecoverRegionStitches checks the tiling contract: recovering strips and
// 2-D blocks with a Halo-wide margin reproduces the whole-scene result.
func TestRecoverRegionStitches(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows, cols, classes := 37, 23, 4
	p := Recovery{Window: 9, Eta: 0.85}
	prob := randomProb(rng, rows*cols, classes)
	valid := randomValid(rng, rows*cols, 0.15)
	whole := Recover(prob, valid, rows, cols, classes, p)
	h := p.Halo()
	t.Run("rows", func(t *testing.T) {
		for _, strip := range []int{1, 5, 10, 37} {
			for r0 := 0; r0 < rows; r0 += strip {
				r1 := min(r0+strip, rows)
				in0, in1 := max(r0-h, 0), min(r1+h, rows)
				got, err := RecoverRows(prob[in0*cols*classes:in1*cols*classes], valid[in0*cols:in1*cols],
					in0, in1-in0, cols, classes, r0, r1-r0, p)
				if err != nil {
					t.Fatal(err)
				}
				want := whole[r0*cols*classes : r1*cols*classes]
				if d := maxAbsDiff(got, want); d > 1e-6 {
					t.Fatalf("strip %d rows %d..%d: max diff %g", strip, r0, r1, d)
				}
			}
		}
	})
	t.Run("blocks", func(t *testing.T) {
		tile := 8
		for r0 := 0; r0 < rows; r0 += tile {
			for c0 := 0; c0 < cols; c0 += tile {
				out := Rect{Row: r0, Col: c0, Rows: min(tile, rows-r0), Cols: min(tile, cols-c0)}
				in := Rect{Row: max(r0-h, 0), Col: max(c0-h, 0)}
				in.Rows = min(r0+out.Rows+h, rows) - in.Row
				in.Cols = min(c0+out.Cols+h, cols) - in.Col
				bp := make([]float32, 0, in.Rows*in.Cols*classes)
				bv := make([]bool, 0, in.Rows*in.Cols)
				for r := in.Row; r < in.Row+in.Rows; r++ {
					bp = append(bp, prob[(r*cols+in.Col)*classes:(r*cols+in.Col+in.Cols)*classes]...)
					bv = append(bv, valid[r*cols+in.Col:r*cols+in.Col+in.Cols]...)
				}
				got, err := RecoverRegion(bp, bv, in, out, classes, p)
				if err != nil {
					t.Fatal(err)
				}
				for r := 0; r < out.Rows; r++ {
					want := whole[((r0+r)*cols+c0)*classes : ((r0+r)*cols+c0+out.Cols)*classes]
					if d := maxAbsDiff(got[r*out.Cols*classes:(r+1)*out.Cols*classes], want); d > 1e-6 {
						t.Fatalf("block %v row %d: max diff %g", out, r, d)
					}
				}
			}
		}
	})
}

func TestRecoverRegionErrors(t *testing.T) {
	p := Recovery{Window: 3, Eta: 1}
	prob := make([]float32, 4*4*2)
	cases := []struct {
		name    string
		prob    []float32
		valid   []bool
		in, out Rect
		p       Recovery
	}{
		{"even window", prob, nil, Rect{Rows: 4, Cols: 4}, Rect{Rows: 4, Cols: 4}, Recovery{Window: 4, Eta: 1}},
		{"eta above 1", prob, nil, Rect{Rows: 4, Cols: 4}, Rect{Rows: 4, Cols: 4}, Recovery{Window: 3, Eta: 1.5}},
		{"eta NaN", prob, nil, Rect{Rows: 4, Cols: 4}, Rect{Rows: 4, Cols: 4}, Recovery{Window: 3, Eta: math.NaN()}},
		{"short prob", prob[:5], nil, Rect{Rows: 4, Cols: 4}, Rect{Rows: 4, Cols: 4}, p},
		{"short valid", prob, make([]bool, 3), Rect{Rows: 4, Cols: 4}, Rect{Rows: 4, Cols: 4}, p},
		{"out outside in", prob, nil, Rect{Row: 2, Rows: 4, Cols: 4}, Rect{Row: 0, Rows: 4, Cols: 4}, p},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := RecoverRegion(tc.prob, tc.valid, tc.in, tc.out, 2, tc.p); err == nil {
				t.Fatal("got nil error, want one")
			}
		})
	}
}

func TestArgmax(t *testing.T) {
	prob := []float32{0.2, 0.5, 0.3, 0.4, 0.4, 0.2, 0, 0, 0}
	got := Argmax(prob, 3)
	want := []int{1, 0, -1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pixel %d: got %d, want %d", i, got[i], want[i])
		}
	}
}

func BenchmarkRecover(b *testing.B) {
	// Pavia University's size with its 9 classes and the default window.
	rows, cols, classes := 610, 340, 9
	rng := rand.New(rand.NewPCG(5, 6))
	prob := randomProb(rng, rows*cols, classes)
	valid := randomValid(rng, rows*cols, 0.05)
	for _, k := range []int{9, 13} {
		b.Run(fmt.Sprintf("PaviaU_k%d", k), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(prob) * 4))
			for b.Loop() {
				Recover(prob, valid, rows, cols, classes, Recovery{Window: k, Eta: 1})
			}
		})
	}
}
