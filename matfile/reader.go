package matfile

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strings"
)

// Sentinel errors; callers branch on them with errors.Is.
var (
	// ErrV73 means the file is a MATLAB v7.3 MAT-file, which is an HDF5
	// file: GDAL's HDF5 driver reads its arrays as HDF5:"file.mat"://VAR.
	ErrV73 = errors.New("MATLAB v7.3 (HDF5) MAT-file")
	// ErrNotMAT means the file is not a MATLAB level 5 MAT-file.
	ErrNotMAT = errors.New("not a MATLAB 5 MAT-file")
	// ErrFormat means the file is damaged or truncated.
	ErrFormat = errors.New("malformed MAT-file")
	// ErrNoVariable means the requested variable is not in the file.
	ErrNoVariable = errors.New("no such variable")
	// ErrUnsupported means the variable exists but cannot be decoded as a
	// real numeric array (complex, sparse, struct, cell, char, ...).
	ErrUnsupported = errors.New("unsupported array")
	// ErrTooLarge means an array has more elements than MaxElements.
	ErrTooLarge = errors.New("array too large")
)

// MaxElements caps the number of elements of one decoded array (default
// 2^30, i.e. 4 GiB of float32), whatever the file declares.
var MaxElements = 1 << 30

// maxInflateRatio bounds how much a deflate stream can expand (deflate's
// theoretical maximum is 1032:1); a compressed element that declares more
// decompressed bytes than this allows is corrupt, so nothing is allocated
// for it.
const maxInflateRatio = 1040

// MAT v5 data types (miXXX).
const (
	miINT8       = 1
	miUINT8      = 2
	miINT16      = 3
	miUINT16     = 4
	miINT32      = 5
	miUINT32     = 6
	miSINGLE     = 7
	miDOUBLE     = 9
	miINT64      = 12
	miUINT64     = 13
	miMATRIX     = 14
	miCOMPRESSED = 15
	miUTF8       = 16
	miUTF16      = 17
	miUTF32      = 18
)

// MATLAB array classes (mxXXX_CLASS).
const (
	mxCELL     = 1
	mxSTRUCT   = 2
	mxOBJECT   = 3
	mxCHAR     = 4
	mxSPARSE   = 5
	mxDOUBLE   = 6
	mxSINGLE   = 7
	mxINT8     = 8
	mxUINT8    = 9
	mxINT16    = 10
	mxUINT16   = 11
	mxINT32    = 12
	mxUINT32   = 13
	mxINT64    = 14
	mxUINT64   = 15
	mxFUNCTION = 16
	mxOPAQUE   = 17
)

var classNames = map[byte]string{
	mxCELL: "cell", mxSTRUCT: "struct", mxOBJECT: "object", mxCHAR: "char",
	mxSPARSE: "sparse", mxDOUBLE: "double", mxSINGLE: "single",
	mxINT8: "int8", mxUINT8: "uint8", mxINT16: "int16", mxUINT16: "uint16",
	mxINT32: "int32", mxUINT32: "uint32", mxINT64: "int64", mxUINT64: "uint64",
	mxFUNCTION: "function", mxOPAQUE: "opaque",
}

// typeSize is the byte size of a numeric miXXX type, 0 for others.
func typeSize(t uint32) int {
	switch t {
	case miINT8, miUINT8:
		return 1
	case miINT16, miUINT16:
		return 2
	case miINT32, miUINT32, miSINGLE:
		return 4
	case miDOUBLE, miINT64, miUINT64:
		return 8
	}
	return 0
}

const (
	flagComplex = 0x08
	flagLogical = 0x02
	maxDims     = 64   // far above anything MATLAB writes; bounds the dims element
	maxNameLen  = 4096 // MATLAB names are at most 63 characters
)

// matFile is an open MAT-file.
type matFile struct {
	path  string // for messages
	f     io.ReaderAt
	close func() error
	size  int64
	order binary.ByteOrder
	big   bool
}

func openMAT(path string) (*matFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	m, err := newMAT(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	m.close = f.Close
	return m, nil
}

// newMAT reads the header of a MAT-file held in r (size bytes), named path
// in messages.
func newMAT(path string, r io.ReaderAt, size int64) (*matFile, error) {
	m := &matFile{path: path, f: r, size: size}
	if err := m.readHeader(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func (m *matFile) Close() error {
	if m.close == nil {
		return nil
	}
	return m.close()
}

var hdf5Signature = []byte("\x89HDF\r\n\x1a\n")

func (m *matFile) readHeader() error {
	var h [128]byte
	n, err := m.f.ReadAt(h[:], 0)
	if n >= len(hdf5Signature) && bytes.Equal(h[:len(hdf5Signature)], hdf5Signature) {
		return fmt.Errorf("%w (an HDF5 file); GDAL's HDF5 driver reads it as HDF5:%q://VAR", ErrV73, m.path)
	}
	if n < 128 {
		if err == nil || err == io.EOF {
			return fmt.Errorf("%w: file has %d bytes, shorter than the 128-byte header", ErrNotMAT, n)
		}
		return err
	}
	switch string(h[126:128]) {
	case "IM":
		m.order, m.big = binary.LittleEndian, false
	case "MI":
		m.order, m.big = binary.BigEndian, true
	default:
		if m.isHDF5() {
			return fmt.Errorf("%w; GDAL's HDF5 driver reads it as HDF5:%q://VAR", ErrV73, m.path)
		}
		return fmt.Errorf("%w: no endian indicator in the header (MAT v4 or not a MAT-file)", ErrNotMAT)
	}
	version := m.order.Uint16(h[124:126])
	if version == 0x0200 || m.isHDF5() {
		return fmt.Errorf("%w; GDAL's HDF5 driver reads it as HDF5:%q://VAR", ErrV73, m.path)
	}
	if version != 0x0100 {
		return fmt.Errorf("%w: header version 0x%04x, want 0x0100", ErrNotMAT, version)
	}
	return nil
}

// isHDF5 reports whether an HDF5 superblock signature is at offset 512
// (where MATLAB v7.3 puts it, after its 512-byte user block).
func (m *matFile) isHDF5() bool {
	var sig [8]byte
	n, _ := m.f.ReadAt(sig[:], 512)
	return n == len(sig) && bytes.Equal(sig[:], hdf5Signature)
}

// elem reads the bytes of one data element, never past its declared end.
type elem struct {
	r     io.Reader
	n     int64 // bytes left in the element
	order binary.ByteOrder
	big   bool
}

func (e *elem) readFull(p []byte) error {
	if int64(len(p)) > e.n {
		return fmt.Errorf("%w: element needs %d more bytes, only %d declared", ErrFormat, len(p), e.n)
	}
	k, err := io.ReadFull(e.r, p)
	e.n -= int64(k)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("%w: truncated (%w)", ErrFormat, err)
		}
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return nil
}

func (e *elem) skip(k int64) error {
	if k > e.n {
		k = e.n
	}
	got, err := io.CopyN(io.Discard, e.r, k)
	e.n -= got
	if err != nil {
		return fmt.Errorf("%w: truncated (%w)", ErrFormat, err)
	}
	return nil
}

// pad skips the padding that aligns a subelement of n bytes to 8 bytes; a
// missing final padding is tolerated.
func (e *elem) pad(n int64) error {
	if r := n % 8; r != 0 {
		return e.skip(8 - r)
	}
	return nil
}

// tag is a data element tag. For the small data element format, the payload
// (at most 4 bytes) is in data.
type tag struct {
	typ   uint32
	n     int64
	small bool
	data  [4]byte
}

func (e *elem) readTag() (tag, error) {
	var b [8]byte
	if err := e.readFull(b[:]); err != nil {
		return tag{}, err
	}
	w := e.order.Uint32(b[:4])
	if w>>16 != 0 {
		// Small data element: type in the low 16 bits, byte count in the high.
		t := tag{typ: w & 0xffff, n: int64(w >> 16), small: true}
		if t.n > 4 {
			return tag{}, fmt.Errorf("%w: small data element declares %d bytes (at most 4)", ErrFormat, t.n)
		}
		copy(t.data[:], b[4:])
		return t, nil
	}
	return tag{typ: w, n: int64(e.order.Uint32(b[4:]))}, nil
}

// payload returns a short subelement's bytes (at most max).
func (e *elem) payload(t tag, max int64, what string) ([]byte, error) {
	if t.small {
		return t.data[:t.n], nil
	}
	if t.n > max || t.n > e.n {
		return nil, fmt.Errorf("%w: %s declares %d bytes (limit %d, %d left in the element)", ErrFormat, what, t.n, max, e.n)
	}
	p := make([]byte, t.n)
	if err := e.readFull(p); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := e.pad(t.n); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}

// matrix is the decoded header of a miMATRIX element.
type matrix struct {
	VarInfo
	classID byte
	logical bool
	numel   int
}

// readMatrixHeader reads array flags, dimensions and name.
func (e *elem) readMatrixHeader() (matrix, error) {
	var mx matrix
	t, err := e.readTag()
	if err != nil {
		return mx, fmt.Errorf("array flags: %w", err)
	}
	if t.typ != miUINT32 || t.n != 8 {
		return mx, fmt.Errorf("%w: array flags element has type %d and %d bytes, want miUINT32 of 8", ErrFormat, t.typ, t.n)
	}
	flags, err := e.payload(t, 8, "array flags")
	if err != nil {
		return mx, err
	}
	w := e.order.Uint32(flags[:4])
	mx.classID = byte(w)
	fl := byte(w >> 8)
	mx.Complex = fl&flagComplex != 0
	mx.logical = fl&flagLogical != 0
	name, ok := classNames[mx.classID]
	if !ok {
		return mx, fmt.Errorf("%w: unknown array class %d", ErrFormat, mx.classID)
	}
	if mx.logical && mx.classID == mxUINT8 {
		name = "logical"
	}
	mx.Class = name

	t, err = e.readTag()
	if err != nil {
		return mx, fmt.Errorf("dimensions: %w", err)
	}
	if t.typ != miINT32 {
		return mx, fmt.Errorf("%w: dimensions element has type %d, want miINT32", ErrFormat, t.typ)
	}
	db, err := e.payload(t, 4*maxDims, "dimensions")
	if err != nil {
		return mx, err
	}
	if len(db)%4 != 0 || len(db) < 8 {
		return mx, fmt.Errorf("%w: dimensions element has %d bytes, want 4 per dimension and at least 2", ErrFormat, len(db))
	}
	mx.Dims = make([]int, len(db)/4)
	numel := uint64(1)
	for i := range mx.Dims {
		d := int32(e.order.Uint32(db[4*i:]))
		if d < 0 {
			return mx, fmt.Errorf("%w: negative dimension %d", ErrFormat, d)
		}
		mx.Dims[i] = int(d)
		hi, lo := bits.Mul64(numel, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return mx, fmt.Errorf("%w: dimensions %v overflow", ErrFormat, mx.Dims)
		}
		numel = lo
	}
	mx.numel = int(numel)

	t, err = e.readTag()
	if err != nil {
		return mx, fmt.Errorf("array name: %w", err)
	}
	if t.typ != miINT8 && t.typ != miUINT8 && t.typ != miUTF8 {
		return mx, fmt.Errorf("%w: array name element has type %d, want miINT8", ErrFormat, t.typ)
	}
	nb, err := e.payload(t, maxNameLen, "array name")
	if err != nil {
		return mx, err
	}
	mx.Name = strings.TrimRight(string(nb), "\x00")
	return mx, nil
}

// sink receives decoded values: vals are elements k0, k0+1, ... of the
// array in column-major order.
type sink func(k0 int, vals []float32)

// chunkBytes is the size of raw reads; a multiple of every type size.
const chunkBytes = 64 << 10

// readReal decodes the real part of a numeric matrix whose header was just
// read, passing the values to the sink that mk makes.
func (e *elem) readReal(mx matrix, mk func(matrix) (sink, error)) error {
	t, err := e.readTag()
	if err != nil {
		return fmt.Errorf("real part: %w", err)
	}
	size := typeSize(t.typ)
	if size == 0 {
		return fmt.Errorf("%w: real part has data type %d, not a numeric type", ErrFormat, t.typ)
	}
	if t.n != int64(mx.numel)*int64(size) {
		return fmt.Errorf("%w: real part has %d bytes, want %d (%d elements of %d bytes)", ErrFormat, t.n, int64(mx.numel)*int64(size), mx.numel, size)
	}
	if !t.small && t.n > e.n {
		return fmt.Errorf("%w: real part declares %d bytes, only %d left in the element", ErrFormat, t.n, e.n)
	}
	// Only now, with the size checked against the bytes that remain, may the
	// caller allocate for the array.
	put, err := mk(mx)
	if err != nil {
		return err
	}
	if t.small {
		var v [4]float32
		convert(v[:mx.numel], t.data[:t.n], t.typ, e.big)
		put(0, v[:mx.numel])
		return nil
	}
	raw := make([]byte, min(int64(chunkBytes), t.n))
	vals := make([]float32, len(raw)/size)
	k := 0
	for left := t.n; left > 0; {
		b := raw[:min(int64(len(raw)), left)]
		if err := e.readFull(b); err != nil {
			return fmt.Errorf("real part: %w", err)
		}
		cnt := len(b) / size
		convert(vals[:cnt], b, t.typ, e.big)
		put(k, vals[:cnt])
		k += cnt
		left -= int64(len(b))
	}
	return e.pad(t.n)
}

// convert decodes len(dst) values of on-disk type typ from src.
func convert(dst []float32, src []byte, typ uint32, big bool) {
	if big {
		// Swap in place to little-endian so that one set of loops serves both orders.
		swapBytes(src[:len(dst)*typeSize(typ)], typeSize(typ))
	}
	le := binary.LittleEndian
	switch typ {
	case miINT8:
		for i := range dst {
			dst[i] = float32(int8(src[i]))
		}
	case miUINT8:
		for i := range dst {
			dst[i] = float32(src[i])
		}
	case miINT16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = float32(int16(le.Uint16(src[2*i:])))
		}
	case miUINT16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = float32(le.Uint16(src[2*i:]))
		}
	case miINT32:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = float32(int32(le.Uint32(src[4*i:])))
		}
	case miUINT32:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = float32(le.Uint32(src[4*i:]))
		}
	case miSINGLE:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case miDOUBLE:
		src = src[:8*len(dst)]
		for i := range dst {
			dst[i] = float32(math.Float64frombits(le.Uint64(src[8*i:])))
		}
	case miINT64:
		src = src[:8*len(dst)]
		for i := range dst {
			dst[i] = float32(int64(le.Uint64(src[8*i:])))
		}
	case miUINT64:
		src = src[:8*len(dst)]
		for i := range dst {
			dst[i] = float32(le.Uint64(src[8*i:]))
		}
	}
}

func swapBytes(b []byte, size int) {
	switch size {
	case 2:
		for i := 0; i+1 < len(b); i += 2 {
			b[i], b[i+1] = b[i+1], b[i]
		}
	case 4:
		for i := 0; i+3 < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], binary.BigEndian.Uint32(b[i:]))
		}
	case 8:
		for i := 0; i+7 < len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], binary.BigEndian.Uint64(b[i:]))
		}
	}
}

// visit calls fn for each top-level variable with its header read and e
// positioned at the array's data; fn returns stop=true to end the walk.
func (m *matFile) visit(fn func(mx matrix, e *elem) (stop bool, err error)) error {
	pos := int64(128)
	for pos < m.size {
		var b [8]byte
		if m.size-pos < 8 {
			// MATLAB pads nothing at the end; a few stray bytes are damage.
			return fmt.Errorf("%s: %w: %d stray bytes at offset %d", m.path, ErrFormat, m.size-pos, pos)
		}
		if _, err := m.f.ReadAt(b[:], pos); err != nil {
			return fmt.Errorf("%s: read offset %d: %w", m.path, pos, err)
		}
		typ := m.order.Uint32(b[:4])
		n := int64(m.order.Uint32(b[4:]))
		if n > m.size-pos-8 {
			return fmt.Errorf("%s: %w: element at offset %d declares %d bytes, only %d left in the file (truncated?)", m.path, ErrFormat, pos, n, m.size-pos-8)
		}
		sec := io.NewSectionReader(m.f, pos+8, n)
		var e *elem
		switch typ {
		case miMATRIX:
			e = &elem{r: bufio.NewReaderSize(sec, int(min(n, 1<<20))), n: n, order: m.order, big: m.big}
		case miCOMPRESSED:
			zr, err := zlib.NewReader(bufio.NewReaderSize(sec, int(min(n, 256<<10))))
			if err != nil {
				return fmt.Errorf("%s: %w: compressed element at offset %d: %w", m.path, ErrFormat, pos, err)
			}
			bound := n*maxInflateRatio + 64
			e = &elem{r: zr, n: bound, order: m.order, big: m.big}
			t, err := e.readTag()
			if err != nil {
				return fmt.Errorf("%s: compressed element at offset %d: %w", m.path, pos, err)
			}
			if t.small || t.typ != miMATRIX {
				// MATLAB compresses only arrays; anything else is skipped.
				pos += 8 + n
				continue
			}
			if t.n > e.n {
				return fmt.Errorf("%s: %w: compressed element at offset %d declares %d bytes, more than %d compressed bytes can hold", m.path, ErrFormat, pos, t.n, n)
			}
			e.n = t.n
		default:
			// Not an array (MATLAB writes none at top level): skip it.
			pos += 8 + n
			continue
		}
		if e.n > 0 {
			mx, err := e.readMatrixHeader()
			if err != nil {
				return fmt.Errorf("%s: variable at offset %d: %w", m.path, pos, err)
			}
			stop, err := fn(mx, e)
			if err != nil || stop {
				return err
			}
		}
		pos += 8 + n
	}
	return nil
}

// Variables lists the top-level variables of the MAT-file at path, in file
// order, decoding only their headers.
func Variables(path string) ([]VarInfo, error) {
	m, err := openMAT(path)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.variables()
}

func (m *matFile) variables() ([]VarInfo, error) {
	var vars []VarInfo
	err := m.visit(func(mx matrix, _ *elem) (bool, error) {
		vars = append(vars, mx.VarInfo)
		return false, nil
	})
	return vars, err
}

func isNumeric(class byte) bool { return class >= mxDOUBLE && class <= mxUINT64 }

func numel(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// describe lists variables as "name (class d1xd2...)" for error messages.
func describe(vars []VarInfo) string {
	s := make([]string, len(vars))
	for i, v := range vars {
		s[i] = fmt.Sprintf("%s (%s %s)", v.Name, v.Class, dimString(v.Dims))
	}
	return strings.Join(s, ", ")
}

func dimString(dims []int) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		s[i] = fmt.Sprint(d)
	}
	return strings.Join(s, "x")
}

// resolveName picks the variable to read: name itself, or for "" the only
// numeric (or logical) array with more than one element.
func (m *matFile) resolveName(name string) (string, error) {
	path := m.path
	if name != "" {
		return name, nil
	}
	vars, err := m.variables()
	if err != nil {
		return "", err
	}
	cands := candidates(vars)
	switch len(cands) {
	case 1:
		return cands[0], nil
	case 0:
		return "", fmt.Errorf("%s: no numeric array among the variables: %s", path, describe(vars))
	}
	return "", fmt.Errorf("%s: several numeric arrays, name one (FILE.mat:VAR): %s", path, describe(vars))
}

// candidates lists the real numeric (or logical) arrays with more than one element.
func candidates(vars []VarInfo) []string {
	var c []string
	for _, v := range vars {
		if isNumericClass(v.Class) && !v.Complex && numel(v.Dims) > 1 {
			c = append(c, v.Name)
		}
	}
	return c
}

// DefaultVariable returns the variable that ReadArray and ReadImage read
// when given no name: the only real numeric (or logical) array with more
// than one element; "" when there is none or several.
func DefaultVariable(vars []VarInfo) string {
	if c := candidates(vars); len(c) == 1 {
		return c[0]
	}
	return ""
}

func isNumericClass(c string) bool {
	switch c {
	case "double", "single", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "logical":
		return true
	}
	return false
}

// readVar finds variable name and decodes its real part through put, which
// is made once the header is known (so that it can allocate).
func (m *matFile) readVar(name string, mk func(mx matrix) (sink, error)) (matrix, error) {
	path := m.path
	var found *matrix
	var names []VarInfo
	err := m.visit(func(mx matrix, e *elem) (bool, error) {
		names = append(names, mx.VarInfo)
		if mx.Name != name {
			return false, nil
		}
		found = &mx
		switch {
		case mx.classID == mxSPARSE:
			return true, fmt.Errorf("%s: variable %q: %w: sparse arrays are not supported (save it with full())", path, name, ErrUnsupported)
		case !isNumeric(mx.classID):
			return true, fmt.Errorf("%s: variable %q: %w: class %s is not a numeric array", path, name, ErrUnsupported, mx.Class)
		case mx.Complex:
			return true, fmt.Errorf("%s: variable %q: %w: complex arrays are not supported", path, name, ErrUnsupported)
		case mx.numel > MaxElements:
			return true, fmt.Errorf("%s: variable %q: %w: %s is %d elements, more than the limit %d", path, name, ErrTooLarge, dimString(mx.Dims), mx.numel, MaxElements)
		}
		if err := e.readReal(mx, mk); err != nil {
			return true, fmt.Errorf("%s: variable %q: %w", path, name, err)
		}
		return true, nil
	})
	if err != nil {
		return matrix{}, err
	}
	if found == nil {
		return matrix{}, fmt.Errorf("%s: %w %q; the file has: %s", path, ErrNoVariable, name, describe(names))
	}
	return *found, nil
}

// ReadArray reads the numeric (or logical) array called name from the
// MAT-file at path. With name "", it reads the only numeric array with more
// than one element and fails, listing the variables, when there are several.
func ReadArray(path, name string) (Array, error) {
	m, err := openMAT(path)
	if err != nil {
		return Array{}, err
	}
	defer m.Close()
	return m.readArray(name)
}

func (m *matFile) readArray(name string) (Array, error) {
	name, err := m.resolveName(name)
	if err != nil {
		return Array{}, err
	}
	var data []float32
	mx, err := m.readVar(name, func(mx matrix) (sink, error) {
		data = make([]float32, mx.numel)
		return func(k0 int, v []float32) { copy(data[k0:], v) }, nil
	})
	if err != nil {
		return Array{}, err
	}
	return Array{Name: mx.Name, Class: mx.Class, Dims: mx.Dims, Data: data}, nil
}

// imageShape maps MATLAB dims to rows, cols, bands: 2-D arrays are one band,
// 3-D arrays are rows x cols x bands; trailing singleton dimensions are ignored.
func imageShape(dims []int) (rows, cols, bands int, err error) {
	d := dims
	for len(d) > 2 && d[len(d)-1] == 1 {
		d = d[:len(d)-1]
	}
	switch len(d) {
	case 2:
		return d[0], d[1], 1, nil
	case 3:
		return d[0], d[1], d[2], nil
	}
	return 0, 0, 0, fmt.Errorf("%w: %d-D array %s is not an image (want 2-D or 3-D)", ErrUnsupported, len(d), dimString(dims))
}

// Image returns the array as an image: rows x cols x bands (bands = 1 for a
// 2-D array), pixels row-major and pixel-interleaved:
// pixels[(r*cols+c)*bands+b] is MATLAB's a(r+1, c+1, b+1).
func (a Array) Image() (rows, cols, bands int, pixels []float32, err error) {
	rows, cols, bands, err = imageShape(a.Dims)
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("variable %q: %w", a.Name, err)
	}
	if len(a.Data) != rows*cols*bands {
		return 0, 0, 0, nil, fmt.Errorf("variable %q: %d values for dimensions %s", a.Name, len(a.Data), dimString(a.Dims))
	}
	pixels = make([]float32, len(a.Data))
	for g0 := 0; g0 < bands; g0 += 16 {
		g1 := min(g0+16, bands)
		interleave(pixels, a.Data[g0*rows*cols:], rows, cols, bands, g0, g1)
	}
	return rows, cols, bands, pixels, nil
}

// bandGroupSink returns a sink that gathers the column-major values of a few
// bands at a time (at most 16 bands or 64 MiB) and then interleaves them into
// pixels, so that each pixel's cache line is written once per group rather
// than once per band.
func bandGroupSink(pixels []float32, rows, cols, bands int) sink {
	plane := rows * cols
	if plane == 0 || bands == 0 {
		return func(int, []float32) {}
	}
	group := max(1, min(16, bands, (16<<20)/plane))
	buf := make([]float32, group*plane)
	g0 := 0 // first band of the group being gathered
	return func(k0 int, v []float32) {
		for len(v) > 0 {
			g1 := min(g0+group, bands)
			end := g1 * plane
			n := copy(buf[k0-g0*plane:end-g0*plane], v)
			v = v[n:]
			k0 += n
			if k0 == end {
				interleave(pixels, buf, rows, cols, bands, g0, g1)
				g0 = g1
			}
		}
	}
}

// interleave writes bands g0..g1-1, held column-major one plane after the
// other in src, into the pixel-interleaved dst.
func interleave(dst, src []float32, rows, cols, bands, g0, g1 int) {
	plane := rows * cols
	n := g1 - g0
	for c := 0; c < cols; c++ {
		for r := 0; r < rows; r++ {
			s := r + rows*c
			d := dst[(r*cols+c)*bands+g0 : (r*cols+c)*bands+g1]
			for j := range n {
				d[j] = src[s+plane*j]
			}
		}
	}
}

// ReadImage reads the 2-D or 3-D array called name ("" = the only numeric
// array) straight into the layout of Array.Image, without a column-major
// copy: peak memory is one float32 image plus a buffer of at most 16 bands.
func ReadImage(path, name string) (rows, cols, bands int, pixels []float32, err error) {
	m, err := openMAT(path)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	defer m.Close()
	return m.readImage(name)
}

func (m *matFile) readImage(name string) (rows, cols, bands int, pixels []float32, err error) {
	name, err = m.resolveName(name)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	_, err = m.readVar(name, func(mx matrix) (sink, error) {
		rows, cols, bands, err = imageShape(mx.Dims)
		if err != nil {
			return nil, err
		}
		pixels = make([]float32, mx.numel)
		return bandGroupSink(pixels, rows, cols, bands), nil
	})
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return rows, cols, bands, pixels, nil
}

// scalarInt reads a positive integer scalar variable.
func (m *matFile) scalarInt(name string) (int, error) {
	path := m.path
	a, err := m.readArray(name)
	if err != nil {
		return 0, err
	}
	if len(a.Data) != 1 {
		return 0, fmt.Errorf("%s: variable %q is %s, want a scalar", path, name, dimString(a.Dims))
	}
	v := a.Data[0]
	if v < 1 || v != float32(math.Trunc(float64(v))) || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s: variable %q is %v, want a positive integer", path, name, v)
	}
	return int(v), nil
}

// IsUnmixing reports whether vars hold the unmixing layout read by
// ReadUnmixing: Y (bands x pixels) with scalars nRow and nCol.
func IsUnmixing(vars []VarInfo) bool {
	_, _, ok := UnmixingSize(vars)
	return ok
}

// unmixingSizeNames are the pairs of scalars the unmixing benchmarks name
// the image's rows and columns by: nRow and nCol (JasperRidge2_R198.mat),
// lines and cols (other benchmark files).
var unmixingSizeNames = [][2]string{{"nRow", "nCol"}, {"lines", "cols"}}

// UnmixingSize names the scalars giving the rows and columns of a file of
// the unmixing layout: a numeric Y beside one pair of unmixingSizeNames;
// ok is false for other files.
func UnmixingSize(vars []VarInfo) (rowVar, colVar string, ok bool) {
	has := map[string]bool{}
	for _, v := range vars {
		if isNumericClass(v.Class) {
			has[v.Name] = true
		}
	}
	if !has["Y"] {
		return "", "", false
	}
	for _, p := range unmixingSizeNames {
		if has[p[0]] && has[p[1]] {
			return p[0], p[1], true
		}
	}
	return "", "", false
}

// ReadUnmixing reads the layout of spectral-unmixing files such as
// JasperRidge2_R198.mat: Y is bands x pixels, the pixels column-major over an
// nRow x nCol image, with scalars nRow and nCol. It returns the image in the
// layout of Array.Image (row-major, pixel-interleaved).
func ReadUnmixing(path string) (rows, cols, bands int, pixels []float32, err error) {
	m, err := openMAT(path)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	defer m.Close()
	return m.readUnmixing()
}

func (m *matFile) readUnmixing() (rows, cols, bands int, pixels []float32, err error) {
	vars, err := m.variables()
	if err != nil {
		return 0, 0, 0, nil, err
	}
	rowVar, colVar, ok := UnmixingSize(vars)
	if !ok {
		return 0, 0, 0, nil, fmt.Errorf("%s: %w: no Y beside nRow and nCol (or lines and cols)", m.path, ErrUnsupported)
	}
	if rows, err = m.scalarInt(rowVar); err != nil {
		return 0, 0, 0, nil, err
	}
	if cols, err = m.scalarInt(colVar); err != nil {
		return 0, 0, 0, nil, err
	}
	_, err = m.readVar("Y", func(mx matrix) (sink, error) {
		d := mx.Dims
		if len(d) != 2 || d[1] != rows*cols {
			return nil, fmt.Errorf("%w: Y is %s, want bands x %d pixels (%s %d x %s %d)", ErrUnsupported, dimString(d), rows*cols, rowVar, rows, colVar, cols)
		}
		bands = d[0]
		if bands == 0 {
			return nil, fmt.Errorf("%w: Y has no bands", ErrUnsupported)
		}
		pixels = make([]float32, mx.numel)
		// Element k of Y is band k%bands of pixel p=k/bands, p = r + rows*c.
		return func(k0 int, v []float32) {
			for len(v) > 0 {
				p, b := k0/bands, k0%bands
				r, c := p%rows, p/rows
				n := copy(pixels[(r*cols+c)*bands+b:(r*cols+c+1)*bands], v)
				v = v[n:]
				k0 += n
			}
		}, nil
	})
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return rows, cols, bands, pixels, nil
}
