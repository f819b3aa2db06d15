package matfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/matwrite"
)

// writeTemp writes b to a file in a test temp dir and returns its path.
func writeTemp(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// seq returns n values start, start+step, ...
func seq(n int, start, step float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = start + float64(i)*step
	}
	return v
}

func TestRoundTripStoredTypes(t *testing.T) {
	types := []struct {
		name  string
		typ   uint32
		class byte
		start float64
		step  float64
	}{
		{"double-as-int8", miINT8, mxDOUBLE, -100, 7},
		{"double-as-uint8", miUINT8, mxDOUBLE, 0, 9},
		{"double-as-int16", miINT16, mxDOUBLE, -30000, 2000},
		{"double-as-uint16", miUINT16, mxDOUBLE, 0, 2100},
		{"int32", miINT32, mxINT32, -2e9, 1.5e8},
		{"uint32", miUINT32, mxUINT32, 0, 1.5e8},
		{"single", miSINGLE, mxSINGLE, -1.5, 0.25},
		{"double", miDOUBLE, mxDOUBLE, -1e3, 123.25},
		{"int64", miINT64, mxINT64, -1 << 40, 1 << 36},
		{"uint64", miUINT64, mxUINT64, 0, 1 << 36},
		{"uint8", miUINT8, mxUINT8, 0, 11},
	}
	dims := []int{3, 4, 2}
	for _, tt := range types {
		for _, big := range []bool{false, true} {
			for _, comp := range []bool{false, true} {
				name := fmt.Sprintf("%s/big=%v/compressed=%v", tt.name, big, comp)
				t.Run(name, func(t *testing.T) {
					data := seq(24, tt.start, tt.step)
					path := writeTemp(t, "a.mat", matwrite.Encode(big, comp,
						matwrite.Var{Name: "s", Class: mxDOUBLE, Dims: []int{1, 1}, Type: miUINT8, Data: []float64{5}},
						matwrite.Var{Name: "cube", Class: tt.class, Dims: dims, Type: tt.typ, Data: data}))
					a, err := ReadArray(path, "")
					if err != nil {
						t.Fatal(err)
					}
					if a.Name != "cube" || !reflect.DeepEqual(a.Dims, dims) || a.Class != classNames[tt.class] {
						t.Fatalf("got %s %s %v, want cube %s %v", a.Name, a.Class, a.Dims, classNames[tt.class], dims)
					}
					for i, v := range data {
						if a.Data[i] != float32(v) {
							t.Fatalf("Data[%d] = %v, want %v", i, a.Data[i], float32(v))
						}
					}
					s, err := ReadArray(path, "s")
					if err != nil || len(s.Data) != 1 || s.Data[0] != 5 {
						t.Fatalf("scalar s: got %v, %v; want [5]", s.Data, err)
					}
					// Image and ReadImage agree with the column-major definition.
					r, c, b, px, err := a.Image()
					if err != nil || r != 3 || c != 4 || b != 2 {
						t.Fatalf("Image: got %dx%dx%d %v, want 3x4x2", r, c, b, err)
					}
					r2, c2, b2, px2, err := ReadImage(path, "cube")
					if err != nil || r2 != r || c2 != c || b2 != b {
						t.Fatalf("ReadImage: got %dx%dx%d %v, want 3x4x2", r2, c2, b2, err)
					}
					for i := 0; i < 3; i++ {
						for j := 0; j < 4; j++ {
							for k := 0; k < 2; k++ {
								want := float32(data[i+3*(j+4*k)])
								if got := px[(i*4+j)*2+k]; got != want {
									t.Fatalf("Image (%d,%d,%d) = %v, want %v", i, j, k, got, want)
								}
								if got := px2[(i*4+j)*2+k]; got != want {
									t.Fatalf("ReadImage (%d,%d,%d) = %v, want %v", i, j, k, got, want)
								}
							}
						}
					}
				})
			}
		}
	}
}

func TestVariablesSkipsStructAndCell(t *testing.T) {
	inner := matwrite.Var{Class: mxDOUBLE, Dims: []int{2, 2}, Type: miDOUBLE, Data: seq(4, 1, 1)}
	for _, comp := range []bool{false, true} {
		t.Run(fmt.Sprint("compressed=", comp), func(t *testing.T) {
			path := writeTemp(t, "s.mat", matwrite.Encode(false, comp,
				matwrite.Var{Name: "Region", Class: mxSTRUCT, Dims: []int{1, 1}, Fields: []matwrite.Var{{Name: "x", Class: mxDOUBLE, Dims: []int{2, 2}, Type: miDOUBLE, Data: seq(4, 1, 1)}}},
				matwrite.Var{Name: "cood", Class: mxCELL, Dims: []int{2, 1}, Cells: []matwrite.Var{inner, inner}},
				matwrite.Var{Name: "mask", Class: mxUINT8, Logical: true, Dims: []int{2, 3}, Type: miUINT8, Data: []float64{1, 0, 1, 1, 0, 0}},
				matwrite.Var{Name: "z", Class: mxDOUBLE, Complex: true, Dims: []int{2, 2}, Type: miDOUBLE, Data: seq(4, 0, 1)},
			))
			vars, err := Variables(path)
			if err != nil {
				t.Fatal(err)
			}
			want := []VarInfo{
				{Name: "Region", Class: "struct", Dims: []int{1, 1}},
				{Name: "cood", Class: "cell", Dims: []int{2, 1}},
				{Name: "mask", Class: "logical", Dims: []int{2, 3}},
				{Name: "z", Class: "double", Dims: []int{2, 2}, Complex: true},
			}
			if !reflect.DeepEqual(vars, want) {
				t.Fatalf("got %+v, want %+v", vars, want)
			}
			// The logical array is the only real numeric array, so "" picks it.
			a, err := ReadArray(path, "")
			if err != nil || a.Name != "mask" || !reflect.DeepEqual(a.Data, []float32{1, 0, 1, 1, 0, 0}) {
				t.Fatalf("ReadArray(\"\"): got %+v, %v; want mask", a, err)
			}
			for _, tc := range []struct{ name, want string }{
				{"Region", "class struct is not a numeric array"},
				{"cood", "class cell is not a numeric array"},
				{"z", "complex arrays are not supported"},
			} {
				_, err := ReadArray(path, tc.name)
				if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.name) {
					t.Errorf("ReadArray(%q): got %v, want ErrUnsupported naming the file, variable and %q", tc.name, err, tc.want)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	good := matwrite.Encode(false, false,
		matwrite.Var{Name: "a", Class: mxDOUBLE, Dims: []int{2, 3}, Type: miUINT16, Data: seq(6, 0, 1)},
		matwrite.Var{Name: "b", Class: mxDOUBLE, Dims: []int{2, 3}, Type: miUINT16, Data: seq(6, 0, 1)})
	v73 := make([]byte, 600)
	copy(v73, "MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 .")
	v73[124], v73[125], v73[126], v73[127] = 0x00, 0x02, 'I', 'M'
	copy(v73[512:], hdf5Signature)
	sparse := matwrite.Encode(false, false, matwrite.Var{Name: "sp", Class: mxSPARSE, Dims: []int{2, 2}, Type: miDOUBLE, Data: seq(4, 0, 1)})
	badSize := matwrite.Encode(false, false, matwrite.Var{Name: "a", Class: mxDOUBLE, Dims: []int{2, 3}, Type: miUINT16, Data: seq(5, 0, 1)})
	v4 := make([]byte, 200)
	cases := []struct {
		name    string
		file    []byte
		varName string
		is      error
		want    string
	}{
		{"v7.3", v73, "", ErrV73, `HDF5:"`},
		{"v4", v4, "", ErrNotMAT, "endian"},
		{"short", good[:50], "", ErrNotMAT, "shorter than the 128-byte header"},
		{"truncated", good[:len(good)-9], "b", ErrFormat, "truncated?"},
		{"several", good, "", nil, "several numeric arrays"},
		{"missing var", good, "nope", ErrNoVariable, "a (double 2x3), b (double 2x3)"},
		{"sparse", sparse, "sp", ErrUnsupported, "sparse"},
		{"size mismatch", badSize, "a", ErrFormat, "want 12"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "e.mat", tc.file)
			_, err := ReadArray(path, tc.varName)
			if err == nil {
				t.Fatal("got no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("got %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %q, want it to name the file and contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("got a multi-line error %q", err)
			}
		})
	}
	if _, err := Variables(filepath.Join(t.TempDir(), "absent.mat")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: got %v, want os.ErrNotExist", err)
	}
}

func TestReadUnmixingSynthetic(t *testing.T) {
	const bands, rows, cols = 3, 4, 5
	y := make([]float64, bands*rows*cols)
	for p := 0; p < rows*cols; p++ {
		for b := 0; b < bands; b++ {
			y[b+bands*p] = float64(1000*b + p) // p = r + rows*c
		}
	}
	for _, comp := range []bool{false, true} {
		path := writeTemp(t, "u.mat", matwrite.Encode(true, comp,
			matwrite.Var{Name: "Y", Class: mxDOUBLE, Dims: []int{bands, rows * cols}, Type: miUINT16, Data: y},
			matwrite.Var{Name: "nRow", Class: mxDOUBLE, Dims: []int{1, 1}, Type: miUINT8, Data: []float64{rows}},
			matwrite.Var{Name: "nCol", Class: mxDOUBLE, Dims: []int{1, 1}, Type: miUINT8, Data: []float64{cols}}))
		vars, err := Variables(path)
		if err != nil || !IsUnmixing(vars) {
			t.Fatalf("IsUnmixing: got false (%v), want true", err)
		}
		r, c, b, px, err := ReadUnmixing(path)
		if err != nil || r != rows || c != cols || b != bands {
			t.Fatalf("got %dx%dx%d %v, want %dx%dx%d", r, c, b, err, rows, cols, bands)
		}
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				for k := 0; k < bands; k++ {
					if got, want := px[(i*cols+j)*bands+k], float32(1000*k+i+rows*j); got != want {
						t.Fatalf("pixel (%d,%d) band %d = %v, want %v", i, j, k, got, want)
					}
				}
			}
		}
	}
}

func TestMaxElements(t *testing.T) {
	path := writeTemp(t, "m.mat", matwrite.Encode(false, true, matwrite.Var{Name: "a", Class: mxDOUBLE, Dims: []int{10, 10}, Type: miUINT8, Data: seq(100, 0, 1)}))
	old := MaxElements
	MaxElements = 99
	defer func() { MaxElements = old }()
	if _, err := ReadArray(path, "a"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	MaxElements = 100
	if _, err := ReadArray(path, "a"); err != nil {
		t.Fatalf("at the limit: got %v, want nil", err)
	}
}

// TestDeclaredSizesChecked: size fields that the data cannot back are
// rejected before anything is allocated for them.
func TestDeclaredSizesChecked(t *testing.T) {
	// Dimensions of 2^30 elements with an empty real part.
	hugeDims := matwrite.Encode(false, true, matwrite.Var{Name: "a", Class: mxDOUBLE, Dims: []int{1 << 15, 1 << 15}, Type: miUINT8})
	// A compressed element whose inner tag declares 2 GiB.
	lie := matwrite.Encode(false, true, matwrite.Var{Name: "a", Class: mxDOUBLE, Dims: []int{2, 2}, Type: miUINT8, Data: seq(4, 0, 1)})
	{
		w := matwrite.NewWriter(false)
		el := w.Matrix(matwrite.Var{Name: "a", Class: mxDOUBLE, Dims: []int{1 << 14, 1 << 15}, Type: miUINT8, Data: nil})
		binary.LittleEndian.PutUint32(el[4:], 1<<31)
		lie = append(lie[:128:128], w.Compressed(el)...)
	}
	// An uncompressed element whose real part declares more than the file holds.
	long := matwrite.Encode(false, false, matwrite.Var{Name: "a", Class: mxDOUBLE, Dims: []int{4, 4}, Type: miUINT8, Data: seq(16, 0, 1)})
	// Header 128, matrix tag 8, flags 16, dims tag 8 -> dims at 160; name 8 -> real tag at 176.
	binary.LittleEndian.PutUint32(long[160:], 1<<14)
	binary.LittleEndian.PutUint32(long[164:], 1<<14)
	binary.LittleEndian.PutUint32(long[180:], 1<<28)
	for _, tc := range []struct {
		name string
		file []byte
	}{{"huge dims", hugeDims}, {"inflated tag", lie}, {"long real part", long}} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "big.mat", tc.file)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ReadArray(path, "a")
			runtime.ReadMemStats(&after)
			t.Logf("error: %v", err)
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("got %v, want ErrFormat", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("allocated %d bytes, want under 8 MiB", alloc)
			}
		})
	}
}
