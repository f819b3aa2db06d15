package matfile

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pnec/pnec/internal/matwrite"
)

// fuzzSeeds are small valid files in every storage variant, plus a few real
// files when ../shared/data is present.
func fuzzSeeds(f *testing.F) {
	for _, b := range seedFiles() {
		f.Add(b)
	}
}

func seedFiles() [][]byte {
	seeds := syntheticSeeds()
	root, err := os.Getwd()
	if err != nil {
		return seeds
	}
	for _, rel := range []string{"SalinasA/SalinasA_gt.mat", "JasperRidge/JasperRidge_train_seed12345.mat", "IndianPines/indian_pines_corrected_gt.mat"} {
		if b, err := os.ReadFile(filepath.Join(root, "..", "..", "shared", "data", rel)); err == nil {
			seeds = append(seeds, b)
		}
	}
	return seeds
}

// syntheticSeeds are small files from matwrite in every storage variant.
func syntheticSeeds() [][]byte {
	var seeds [][]byte
	cube := matwrite.Var{Name: "cube", Class: mxDOUBLE, Dims: []int{3, 4, 2}, Type: miINT16, Data: seq(24, -5, 3)}
	inner := matwrite.Var{Class: mxDOUBLE, Dims: []int{1, 2}, Type: miDOUBLE, Data: []float64{1.5, 2}}
	others := []matwrite.Var{
		{Name: "Y", Class: mxDOUBLE, Dims: []int{2, 6}, Type: miUINT16, Data: seq(12, 0, 100)},
		{Name: "nRow", Class: mxDOUBLE, Dims: []int{1, 1}, Type: miUINT8, Data: []float64{2}},
		{Name: "nCol", Class: mxDOUBLE, Dims: []int{1, 1}, Type: miUINT8, Data: []float64{3}},
		{Name: "s", Class: mxSTRUCT, Dims: []int{1, 1}, Fields: []matwrite.Var{{Name: "f", Class: mxDOUBLE, Dims: []int{1, 2}, Type: miDOUBLE, Data: []float64{1, 2}}}},
		{Name: "c", Class: mxCELL, Dims: []int{1, 2}, Cells: []matwrite.Var{inner, inner}},
		{Name: "m", Class: mxUINT8, Logical: true, Dims: []int{2, 2}, Type: miUINT8, Data: []float64{1, 0, 0, 1}},
		{Name: "z", Class: mxSINGLE, Complex: true, Dims: []int{1, 2}, Type: miSINGLE, Data: []float64{1, 2}},
	}
	for _, big := range []bool{false, true} {
		for _, comp := range []bool{false, true} {
			seeds = append(seeds, matwrite.Encode(big, comp, cube), matwrite.Encode(big, comp, others...))
		}
	}
	return seeds
}

// FuzzRead decodes arbitrary bytes as a MAT-file through every entry point:
// errors are fine, panics and allocations beyond what the input's size can
// justify are not, and whatever decodes must be self-consistent.
func FuzzRead(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(checkDecode)
}

// TestTruncatedAndCorrupted runs every seed cut at every length and with
// every byte inverted through the same checks as FuzzRead.
func TestTruncatedAndCorrupted(t *testing.T) {
	for i, seed := range syntheticSeeds() {
		for n := 0; n < len(seed); n++ {
			checkDecode(t, seed[:n])
			c := bytes.Clone(seed)
			c[n] ^= 0xff
			checkDecode(t, c)
		}
		if t.Failed() {
			t.Fatalf("seed %d failed", i)
		}
	}
}

func checkDecode(t *testing.T, data []byte) {
	{
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := newMAT("fuzz.mat", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		vars, _ := m.variables()
		for _, v := range vars {
			if len(v.Dims) < 2 {
				t.Fatalf("variable %q has dims %v, want at least 2", v.Name, v.Dims)
			}
			a, err := m.readArray(v.Name)
			if err == nil {
				// An empty name asks for the default array, which may be another one.
				if (v.Name != "" && a.Name != v.Name) || len(a.Data) != numel(a.Dims) {
					t.Fatalf("variable %q: %d values for dims %v", v.Name, len(a.Data), a.Dims)
				}
				if r, c, b, px, err := a.Image(); err == nil && len(px) != r*c*b {
					t.Fatalf("Image: %d pixels for %dx%dx%d", len(px), r, c, b)
				}
			}
			if r, c, b, px, err := m.readImage(v.Name); err == nil && len(px) != r*c*b {
				t.Fatalf("ReadImage: %d pixels for %dx%dx%d", len(px), r, c, b)
			}
		}
		if r, c, b, px, err := m.readUnmixing(); err == nil && len(px) != r*c*b {
			t.Fatalf("ReadUnmixing: %d pixels for %dx%dx%d", len(px), r, c, b)
		}
		runtime.ReadMemStats(&after)
		// Each read may allocate at most what the bytes can inflate to, as
		// float32, plus fixed buffers (chunks, bufio, zlib state).
		limit := uint64(len(vars)+2) * (4<<20 + 2*4*maxInflateRatio*uint64(len(data)))
		if got := after.TotalAlloc - before.TotalAlloc; got > limit {
			t.Fatalf("allocated %d bytes for a %d-byte input (limit %d)", got, len(data), limit)
		}
	}
}
