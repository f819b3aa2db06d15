package matfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pnec/pnec/matfile/internal/matwrite"
)

// Pavia University's size: 610 x 340 pixels, 103 bands.
const paviaRows, paviaCols, paviaBands = 610, 340, 103

// writeCubeFile writes a Pavia-sized double cube stored as typ into dir.
func writeCubeFile(tb testing.TB, dir string, typ uint32, compress bool) string {
	tb.Helper()
	p := filepath.Join(dir, fmt.Sprintf("cube_%d_%v.mat", typ, compress))
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := matwrite.WriteCube(w, "cube", paviaRows, paviaCols, paviaBands, typ, compress, 1); err != nil {
		tb.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkReadPaviaSized reads a 610x340x103 double cube stored as uint16
// or int16, compressed or not. B/op is what one read allocates (the float32
// cube itself is 85 MB); the budget is 2 s and 3x the cube's size.
func BenchmarkReadPaviaSized(b *testing.B) {
	dir := b.TempDir()
	for _, tc := range []struct {
		name     string
		typ      uint32
		compress bool
	}{
		{"uint16-compressed", matwrite.MiUINT16, true},
		{"int16-compressed", matwrite.MiINT16, true},
		{"int16-uncompressed", matwrite.MiINT16, false},
	} {
		path := writeCubeFile(b, dir, tc.typ, tc.compress)
		b.Run("ReadImage/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(4 * paviaRows * paviaCols * paviaBands)
			for b.Loop() {
				r, c, n, px, err := ReadImage(path, "cube")
				if err != nil || r != paviaRows || c != paviaCols || n != paviaBands || len(px) != r*c*n {
					b.Fatalf("got %dx%dx%d %v", r, c, n, err)
				}
			}
		})
		b.Run("ReadArray+Image/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(4 * paviaRows * paviaCols * paviaBands)
			for b.Loop() {
				a, err := ReadArray(path, "cube")
				if err != nil {
					b.Fatal(err)
				}
				if _, _, _, _, err := a.Image(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPaviaSizedBudget checks the budget for a Pavia-sized cube
// stored as compressed uint16: under 2 s and under 3x the float32 cube's
// size allocated. Skipped with -short (it writes a 40 MB file).
func TestPaviaSizedBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a Pavia-sized cube; skipped with -short")
	}
	path := writeCubeFile(t, t.TempDir(), matwrite.MiUINT16, true)
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, _, _, err := ReadImage(path, "cube"); err != nil {
				b.Fatal(err)
			}
		}
	})
	cube := int64(4 * paviaRows * paviaCols * paviaBands)
	t.Logf("ReadImage Pavia-sized uint16 compressed: %v/op, %d B/op (cube %d B)", res.T/time.Duration(res.N), res.AllocedBytesPerOp(), cube)
	if per := res.T / time.Duration(res.N); per.Seconds() > 2 {
		t.Errorf("read took %v, want under 2 s", per)
	}
	if a := res.AllocedBytesPerOp(); a > 3*cube {
		t.Errorf("allocated %d bytes, want under 3x the cube (%d)", a, 3*cube)
	}
}
