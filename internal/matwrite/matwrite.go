// Package matwrite writes MATLAB level 5 MAT-files for the tests, fuzz
// seeds and benchmarks of packages matfile and importer and for
// bench/cmd/matcube: every stored type, both byte orders, compressed or not,
// structs and cells. It is not a general MAT writer.
package matwrite

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// MAT v5 data types (miXXX) and array classes (mxXXX), as in the format
// specification.
const (
	MiINT8       = 1
	MiUINT8      = 2
	MiINT16      = 3
	MiUINT16     = 4
	MiINT32      = 5
	MiUINT32     = 6
	MiSINGLE     = 7
	MiDOUBLE     = 9
	MiINT64      = 12
	MiUINT64     = 13
	MiMATRIX     = 14
	MiCOMPRESSED = 15

	MxCELL   = 1
	MxSTRUCT = 2
	MxCHAR   = 4
	MxSPARSE = 5
	MxDOUBLE = 6
	MxSINGLE = 7
	MxINT8   = 8
	MxUINT8  = 9
	MxINT16  = 10
	MxUINT16 = 11
	MxINT32  = 12
	MxUINT32 = 13
	MxINT64  = 14
	MxUINT64 = 15

	flagComplex = 0x08
	flagLogical = 0x02
)

// TypeSize is the byte size of a numeric miXXX type.
func TypeSize(t uint32) int {
	switch t {
	case MiINT8, MiUINT8:
		return 1
	case MiINT16, MiUINT16:
		return 2
	case MiINT32, MiUINT32, MiSINGLE:
		return 4
	case MiDOUBLE, MiINT64, MiUINT64:
		return 8
	}
	return 0
}

// Var is one variable to write.
type Var struct {
	Name    string
	Class   byte // MxXXX
	Dims    []int
	Type    uint32    // on-disk MiXXX type of the real part
	Data    []float64 // values, column-major; converted to Type
	Logical bool
	Complex bool // write an imaginary part (zeros)
	// Fields (struct) or Cells (cell): nested arrays, written with empty names.
	Fields []Var
	Cells  []Var
}

// Writer encodes elements in one byte order.
type Writer struct {
	order binary.ByteOrder
	big   bool
}

// Encode returns a MAT-file holding vars, big- or little-endian, each
// variable in a MiCOMPRESSED element when compress is set.
func Encode(big, compress bool, vars ...Var) []byte {
	w := NewWriter(big)
	var out bytes.Buffer
	out.Write(w.Header())
	for _, v := range vars {
		el := w.Matrix(v)
		if !compress {
			out.Write(el)
			continue
		}
		out.Write(w.Compressed(el))
	}
	return out.Bytes()
}

// NewWriter returns a writer for big- or little-endian files.
func NewWriter(big bool) Writer {
	if big {
		return Writer{order: binary.BigEndian, big: true}
	}
	return Writer{order: binary.LittleEndian}
}

// Compressed wraps an element in a miCOMPRESSED element.
func (w Writer) Compressed(el []byte) []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(el)
	zw.Close()
	return append(w.Tag(MiCOMPRESSED, z.Len()), z.Bytes()...)
}

// Header returns the 128-byte file header.
func (w Writer) Header() []byte {
	big := w.big
	hdr := make([]byte, 128)
	copy(hdr, "MATLAB 5.0 MAT-file, Platform: test, Created by: pnec matfile tests")
	for i := 67; i < 116; i++ {
		hdr[i] = ' '
	}
	w.order.PutUint16(hdr[124:], 0x0100)
	if big {
		copy(hdr[126:], "MI")
	} else {
		copy(hdr[126:], "IM")
	}
	return hdr
}

// Tag encodes a data element tag.
func (w Writer) Tag(typ uint32, n int) []byte {
	b := make([]byte, 8)
	w.order.PutUint32(b, typ)
	w.order.PutUint32(b[4:], uint32(n))
	return b
}

// sub encodes a subelement, in the small format when it fits in 4 bytes.
func (w Writer) sub(typ uint32, payload []byte) []byte {
	if len(payload) <= 4 && len(payload) > 0 {
		b := make([]byte, 8)
		w.order.PutUint32(b, uint32(len(payload))<<16|typ)
		copy(b[4:], payload)
		return b
	}
	b := w.Tag(typ, len(payload))
	b = append(b, payload...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// Encode converts vals to on-disk type typ.
func (w Writer) Encode(typ uint32, vals []float64) []byte {
	b := make([]byte, len(vals)*TypeSize(typ))
	for i, v := range vals {
		switch typ {
		case MiINT8:
			b[i] = byte(int8(v))
		case MiUINT8:
			b[i] = byte(v)
		case MiINT16:
			w.order.PutUint16(b[2*i:], uint16(int16(v)))
		case MiUINT16:
			w.order.PutUint16(b[2*i:], uint16(v))
		case MiINT32:
			w.order.PutUint32(b[4*i:], uint32(int32(v)))
		case MiUINT32:
			w.order.PutUint32(b[4*i:], uint32(v))
		case MiSINGLE:
			w.order.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case MiDOUBLE:
			w.order.PutUint64(b[8*i:], math.Float64bits(v))
		case MiINT64:
			w.order.PutUint64(b[8*i:], uint64(int64(v)))
		case MiUINT64:
			w.order.PutUint64(b[8*i:], uint64(v))
		}
	}
	return b
}

// Matrix encodes a whole MiMATRIX element (tag included).
func (w Writer) Matrix(v Var) []byte {
	var body []byte
	flags := make([]byte, 8)
	fl := uint32(v.Class)
	if v.Logical {
		fl |= flagLogical << 8
	}
	if v.Complex {
		fl |= flagComplex << 8
	}
	w.order.PutUint32(flags, fl)
	body = append(body, w.sub(MiUINT32, flags)...)
	dims := make([]byte, 4*len(v.Dims))
	for i, d := range v.Dims {
		w.order.PutUint32(dims[4*i:], uint32(d))
	}
	body = append(body, w.sub(MiINT32, dims)...)
	if v.Name == "" {
		body = append(body, w.Tag(MiINT8, 0)...)
	} else {
		body = append(body, w.sub(MiINT8, []byte(v.Name))...)
	}
	switch v.Class {
	case MxSTRUCT:
		const fieldLen = 32
		fl := make([]byte, 4)
		w.order.PutUint32(fl, fieldLen)
		body = append(body, w.sub(MiINT32, fl)...)
		names := make([]byte, fieldLen*len(v.Fields))
		for i, f := range v.Fields {
			copy(names[fieldLen*i:], f.Name)
		}
		body = append(body, w.sub(MiINT8, names)...)
		for _, f := range v.Fields {
			f.Name = ""
			body = append(body, w.Matrix(f)...)
		}
	case MxCELL:
		for _, c := range v.Cells {
			c.Name = ""
			body = append(body, w.Matrix(c)...)
		}
	default:
		body = append(body, w.sub(v.Type, w.Encode(v.Type, v.Data))...)
		if v.Complex {
			body = append(body, w.sub(v.Type, w.Encode(v.Type, make([]float64, len(v.Data))))...)
		}
	}
	return append(w.Tag(MiMATRIX, len(body)), body...)
}

// WriteCube writes a MAT-file holding one rows x cols x bands array called
// name, class double stored as type typ (MiUINT16 or MiINT16), compressed or
// not, streaming band by band so that the whole cube is never in memory as
// float64. Values are smooth spectra times a per-pixel brightness plus noise
// (deterministic for a seed), which compress about as well as real scenes.
func WriteCube(out io.Writer, name string, rows, cols, bands int, typ uint32, compress bool, seed uint64) error {
	w := NewWriter(false)
	if typ != MiUINT16 && typ != MiINT16 {
		return fmt.Errorf("WriteCube: stored type %d: want MiUINT16 or MiINT16", typ)
	}
	n := rows * cols * bands
	dataBytes := 2 * n
	head := w.headerOnly(Var{Name: name, Class: MxDOUBLE, Dims: []int{rows, cols, bands}})
	pad := (8 - dataBytes%8) % 8
	body := len(head) + 8 + dataBytes + pad
	var dst io.Writer = out
	var zw *zlib.Writer
	if _, err := out.Write(w.Header()); err != nil {
		return err
	}
	if compress {
		// The compressed length is unknown until the end: buffer the
		// compressed stream (a fraction of the raw size).
		var z bytes.Buffer
		zw, _ = zlib.NewWriterLevel(&z, zlib.DefaultCompression)
		dst = zw
		if err := writeCubeBody(w, dst, head, rows, cols, bands, typ, body, dataBytes, pad, seed); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if _, err := out.Write(w.Tag(MiCOMPRESSED, z.Len())); err != nil {
			return err
		}
		_, err := out.Write(z.Bytes())
		return err
	}
	return writeCubeBody(w, dst, head, rows, cols, bands, typ, body, dataBytes, pad, seed)
}

func writeCubeBody(w Writer, dst io.Writer, head []byte, rows, cols, bands int, typ uint32, body, dataBytes, pad int, seed uint64) error {
	if _, err := dst.Write(w.Tag(MiMATRIX, body)); err != nil {
		return err
	}
	if _, err := dst.Write(head); err != nil {
		return err
	}
	if _, err := dst.Write(w.Tag(typ, dataBytes)); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d6174))
	bright := make([]float64, rows*cols)
	for i := range bright {
		r, c := i%rows, i/rows
		bright[i] = 0.6 + 0.3*math.Sin(float64(r)/37)*math.Cos(float64(c)/23) + 0.05*rng.Float64()
	}
	buf := make([]byte, 2*rows*cols)
	for b := 0; b < bands; b++ {
		spec := 3000 + 1500*math.Sin(float64(b)/9)
		for i := range bright {
			v := spec*bright[i] + 40*rng.NormFloat64()
			w.order.PutUint16(buf[2*i:], uint16(int16(v)))
			if typ == MiUINT16 {
				w.order.PutUint16(buf[2*i:], uint16(max(v, 0)))
			}
		}
		if _, err := dst.Write(buf); err != nil {
			return err
		}
	}
	_, err := dst.Write(make([]byte, pad))
	return err
}

// headerOnly encodes the flags, dimensions and name subelements of v.
func (w Writer) headerOnly(v Var) []byte {
	flags := make([]byte, 8)
	w.order.PutUint32(flags, uint32(v.Class))
	out := w.sub(MiUINT32, flags)
	dims := make([]byte, 4*len(v.Dims))
	for i, d := range v.Dims {
		w.order.PutUint32(dims[4*i:], uint32(d))
	}
	out = append(out, w.sub(MiINT32, dims)...)
	return append(out, w.sub(MiINT8, []byte(v.Name))...)
}
