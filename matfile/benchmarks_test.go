package matfile

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/matwrite"
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

// benchDir holds the benchmark cubes, written once per test binary (with
// -count 5 the benchmark function runs 5 times) and removed by TestMain.
var (
	benchMu    sync.Mutex
	benchDir   string
	benchFiles = map[string]string{}
)

func benchCube(b *testing.B, typ uint32, compress bool) string {
	benchMu.Lock()
	defer benchMu.Unlock()
	key := fmt.Sprint(typ, compress)
	if p, ok := benchFiles[key]; ok {
		return p
	}
	if benchDir == "" {
		d, err := os.MkdirTemp("", "matfile-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	p := writeCubeFile(b, benchDir, typ, compress)
	benchFiles[key] = p
	return p
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// BenchmarkReadPaviaSized reads a 610x340x103 double cube stored as uint16
// or int16, compressed or not. B/op is what one read allocates (the float32
// cube itself is 85 MB); the budget is 2 s and 3x the cube's size.
func BenchmarkReadPaviaSized(b *testing.B) {
	for _, tc := range []struct {
		name     string
		typ      uint32
		compress bool
	}{
		{"uint16-compressed", matwrite.MiUINT16, true},
		{"int16-uncompressed", matwrite.MiINT16, false},
	} {
		path := benchCube(b, tc.typ, tc.compress)
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
// size allocated. Time is the process's CPU time (user+system), which other
// jobs on a shared machine inflate far less than wall time. Skipped with
// -short (it writes a 33 MB file).
func TestPaviaSizedBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a Pavia-sized cube; skipped with -short")
	}
	path := writeCubeFile(t, t.TempDir(), matwrite.MiUINT16, true)
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var before, after runtime.MemStats
	const reads = 3
	runtime.GC()
	runtime.ReadMemStats(&before)
	c0, w0 := cpu(), time.Now()
	for range reads {
		if _, _, _, _, err := ReadImage(path, "cube"); err != nil {
			t.Fatal(err)
		}
	}
	perCPU, perWall := (cpu()-c0)/reads, time.Since(w0)/reads
	runtime.ReadMemStats(&after)
	alloc := int64(after.TotalAlloc-before.TotalAlloc) / reads
	cube := int64(4 * paviaRows * paviaCols * paviaBands)
	t.Logf("ReadImage 610x340x103 uint16 compressed: %v CPU, %v wall per read; %d bytes allocated (float32 cube %d)", perCPU, perWall, alloc, cube)
	if perCPU > 2*time.Second {
		t.Errorf("read took %v of CPU time, want under 2 s", perCPU)
	}
	if alloc > 3*cube {
		t.Errorf("allocated %d bytes, want under 3x the cube (%d)", alloc, 3*cube)
	}
}
