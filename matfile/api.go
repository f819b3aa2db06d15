package matfile

// API contract: the synth, model and cmd packages call these; keep the names
// and meanings stable. The functions are in reader.go: Variables, ReadArray,
// Array.Image, ReadImage, ReadUnmixing, IsUnmixing, DefaultVariable, and the
// sentinel errors ErrV73, ErrNotMAT, ErrFormat, ErrNoVariable,
// ErrUnsupported, ErrTooLarge.

// VarInfo describes one top-level variable of a MAT-file.
type VarInfo struct {
	Name string
	// Class is the MATLAB class: "double", "single", "int8", "uint8",
	// "int16", "uint16", "int32", "uint32", "int64", "uint64", "logical",
	// "char", "struct", "cell", "object", "sparse", "function" or "opaque".
	Class string
	// Dims are the MATLAB dimensions (at least 2), first dimension = rows.
	Dims []int
	// Complex is true when the array has an imaginary part.
	Complex bool
}

// Array is a decoded numeric (or logical/char) array.
type Array struct {
	Name  string
	Class string
	Dims  []int
	// Data holds the real part in MATLAB column-major order: element
	// (i0, i1, i2) is at i0 + Dims[0]*(i1 + Dims[1]*i2). Values are converted
	// to float32 from whatever type is stored on disk.
	Data []float32
}
