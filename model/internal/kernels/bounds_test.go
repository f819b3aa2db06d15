package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// canaryBits is the pattern every value around (and, for inputs, inside)
// a kernel's slices holds before the call: a NaN no kernel computes.
const canaryBits = 0x7fc0beef

// guardValues is how many values sit on each side of a guarded slice: a
// whole AVX-512 vector and more, so a full-width store past either end
// lands on them.
const guardValues = 64

// guarded is a slice of n values inside a buffer with guardValues canaries
// on each side; the slice's capacity ends with it.
type guarded struct {
	buf []float32
	n   int
}

func newGuarded(n int) guarded {
	g := guarded{buf: make([]float32, n+2*guardValues), n: n}
	for i := range g.buf {
		g.buf[i] = math.Float32frombits(canaryBits)
	}
	return g
}

func (g guarded) s() []float32 { return g.buf[guardValues : guardValues+g.n : guardValues+g.n] }

// fill sets the slice's values from f.
func (g guarded) fill(f func() float32) guarded {
	for i := range g.s() {
		g.s()[i] = f()
	}
	return g
}

// snapshot copies the whole buffer, canaries included.
func (g guarded) snapshot() []float32 { return append([]float32(nil), g.buf...) }

// checkGuards reports the first canary on either side that changed.
func (g guarded) checkGuards() error {
	for i, v := range g.buf {
		if i >= guardValues && i < guardValues+g.n {
			continue
		}
		if math.Float32bits(v) != canaryBits {
			return fmt.Errorf("value %d past the slice's %s changed to %v", distance(i, g.n), side(i), v)
		}
	}
	return nil
}

// unchanged reports the first value of an input buffer that differs from
// its snapshot.
func (g guarded) unchanged(before []float32) error {
	for i, v := range g.buf {
		if math.Float32bits(v) != math.Float32bits(before[i]) {
			return fmt.Errorf("input value %d (of %d with guards) changed from %v to %v", i, len(g.buf), before[i], v)
		}
	}
	return nil
}

func side(i int) string {
	if i < guardValues {
		return "start"
	}
	return "end"
}

func distance(i, n int) int {
	if i < guardValues {
		return guardValues - i
	}
	return i - guardValues - n + 1
}

// TestKernelsStayInsideTheirSlices runs every kernel that writes through
// SIMD stores or hand-written assembly (sgemm and its micro-kernel, Dots8,
// DotsSIMD, Dots4SIMD, MaxInto, SpanMax, Combine) on slices with canaries on each
// side and checks that no value outside the outputs changes, inputs
// included, over shapes at and around the kernels' block edges. A store
// past a slice's end would overwrite the next object on the Go heap; a
// pointer so overwritten is what "found bad pointer in Go heap" reports
// (issue 46 item 17).
func TestKernelsStayInsideTheirSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 17))
	val := func() float32 { return float32(rng.NormFloat64()) }
	check := func(t *testing.T, what string, outs []guarded, ins []guarded, before [][]float32) {
		t.Helper()
		for i, o := range outs {
			if err := o.checkGuards(); err != nil {
				t.Errorf("%s: output %d: %v", what, i, err)
			}
		}
		for i, in := range ins {
			if err := in.unchanged(before[i]); err != nil {
				t.Errorf("%s: input %d: %v", what, i, err)
			}
		}
	}
	snap := func(gs ...guarded) [][]float32 {
		out := make([][]float32, len(gs))
		for i, g := range gs {
			out[i] = g.snapshot()
		}
		return out
	}

	t.Run("sgemm", func(t *testing.T) {
		for _, m := range []int{1, 7, 8, 9, 17} {
			for _, n := range []int{1, 31, 32, 33, 65} {
				for _, k := range []int{1, 2, 3, gemmKC, gemmKC + 1} {
					for _, transA := range []bool{false, true} {
						for _, accum := range []bool{false, true} {
							ldc := n + 3
							rsA, csA := k, 1
							if transA {
								rsA, csA = 1, m
							}
							a := newGuarded(m * k).fill(val)
							b := newGuarded((k-1)*n + n).fill(val)
							c := newGuarded((m-1)*ldc + n).fill(val)
							// C's gaps between rows must stay as they are too.
							gaps := c.snapshot()
							before := snap(a, b)
							sgemm(m, n, k, a.s(), rsA, csA, b.s(), n, c.s(), ldc, accum)
							what := fmt.Sprintf("m %d n %d k %d transposed A %v accum %v", m, n, k, transA, accum)
							check(t, what, []guarded{c}, []guarded{a, b}, before)
							for i := 0; i < m-1; i++ {
								for j := n; j < ldc; j++ {
									at := guardValues + i*ldc + j
									if math.Float32bits(c.buf[at]) != math.Float32bits(gaps[at]) {
										t.Fatalf("%s: C's gap value row %d column %d changed", what, i, j)
									}
								}
							}
						}
					}
				}
			}
		}
	})

	t.Run("dots", func(t *testing.T) {
		padding := DotsPadding()
		for _, bands := range []int{1, 2, 3, 103, 224} {
			for _, padded := range []int{padding, 4 * padding} {
				unitT := newGuarded(bands * padded).fill(val)
				s := newGuarded(bands).fill(val)
				dots := newGuarded(padded).fill(val)
				before := snap(unitT, s)
				DotsSIMD(unitT.s(), padded, s.s(), dots.s())
				what := fmt.Sprintf("DotsSIMD %d bands %d references", bands, padded)
				check(t, what, []guarded{dots}, []guarded{unitT, s}, before)

				var px, out [4][]float32
				var pxg, outg [4]guarded
				for p := range 4 {
					pxg[p] = newGuarded(bands).fill(val)
					outg[p] = newGuarded(padded).fill(val)
					px[p], out[p] = pxg[p].s(), outg[p].s()
				}
				before = snap(unitT, pxg[0], pxg[1], pxg[2], pxg[3])
				Dots4SIMD(unitT.s(), padded, &px, &out)
				check(t, "Dots4SIMD "+what[9:], outg[:], []guarded{unitT, pxg[0], pxg[1], pxg[2], pxg[3]}, before)

				if !HaveDots8(padded) {
					continue
				}
				table := Dots8Table(unitT.s(), padded, bands)
				tab := newGuarded(len(table))
				copy(tab.s(), table)
				for _, pixels := range []int{8, 16, 40} {
					sp := newGuarded(pixels * bands).fill(val)
					d := newGuarded(pixels * padded).fill(val)
					before := snap(tab, sp)
					Dots8(tab.s(), padded, bands, sp.s(), d.s())
					check(t, fmt.Sprintf("Dots8 %d bands %d references %d pixels", bands, padded, pixels), []guarded{d}, []guarded{tab, sp}, before)
				}
			}
		}
	})

	t.Run("elementwise", func(t *testing.T) {
		for n := 0; n <= 41; n++ {
			dst := newGuarded(n).fill(val)
			src := newGuarded(n).fill(val)
			before := snap(src)
			MaxInto(dst.s(), src.s())
			check(t, fmt.Sprintf("MaxInto %d values", n), []guarded{dst}, []guarded{src}, before)

			for _, maxLen := range []int{3, 16, 21} {
				spans := randomSpans(rng, n, maxLen)
				dst := newGuarded(len(spans)).fill(val)
				before := snap(src)
				SpanMax(dst.s(), src.s(), spans)
				check(t, fmt.Sprintf("SpanMax %d values in spans %v", n, spans), []guarded{dst}, []guarded{src}, before)
			}

			for _, two := range []bool{false, true} {
				dst := newGuarded(n).fill(val)
				b0 := newGuarded(n).fill(val)
				b1 := newGuarded(n).fill(val)
				coef := newGuarded(n).fill(val)
				before := snap(b0, b1, coef)
				var b1s []float32
				if two {
					b1s = b1.s()
				}
				Combine(dst.s(), b0.s(), b1s, 0.5, coef.s())
				check(t, fmt.Sprintf("Combine %d values, two bases %v", n, two), []guarded{dst}, []guarded{b0, b1, coef}, before)
			}
		}
	})
}
