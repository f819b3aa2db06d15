package geo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// TIFF tag and values used by unmarkAlpha.
const (
	tiffTagExtraSamples     = 338
	tiffTypeShort           = 3
	tiffMaxIFDs             = 4096
	tiffMaxExtraSampleCount = 1024
)

// unmarkAlpha rewrites, in place, every ExtraSamples value of the TIFF at
// path to "unspecified". GDAL 3.6 marks the second sample of a paletted
// TIFF as (unassociated) alpha whatever the source says, and GIS software
// would then draw the reliability band as transparency. The values are
// patched where they are, so the file's size and layout (COG ordering)
// stay as they were.
func unmarkAlpha(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	t, next, err := readTIFFHeader(f, st.Size())
	if err != nil {
		return err
	}
	for n := 0; next != 0 && n < tiffMaxIFDs; n++ {
		if next, err = t.unmarkIFD(next); err != nil {
			return err
		}
	}
	return f.Sync()
}

// tiffPatcher is an open TIFF or BigTIFF file's byte order and IFD entry
// layout, for unmarkAlpha.
type tiffPatcher struct {
	f    *os.File
	size int64 // bytes
	bo   binary.ByteOrder
	big  bool // BigTIFF: 8-byte counts, offsets and inline values
	// entrySize is an IFD entry's bytes, countSize an IFD's entry count's,
	// inline the bytes of an entry's value field (and of an offset).
	entrySize, countSize, inline int
}

// readTIFFHeader reads f's byte order and TIFF or BigTIFF version and
// returns the offset of its first IFD.
func readTIFFHeader(f *os.File, size int64) (tiffPatcher, uint64, error) {
	var hdr [16]byte
	if _, err := f.ReadAt(hdr[:8], 0); err != nil {
		return tiffPatcher{}, 0, fmt.Errorf("read TIFF header: %w", err)
	}
	t := tiffPatcher{f: f, size: size, entrySize: 12, countSize: 2, inline: 4}
	switch string(hdr[:2]) {
	case "II":
		t.bo = binary.LittleEndian
	case "MM":
		t.bo = binary.BigEndian
	default:
		return tiffPatcher{}, 0, errors.New("not a TIFF file")
	}
	var next uint64
	switch t.bo.Uint16(hdr[2:4]) {
	case 42:
		next = uint64(t.bo.Uint32(hdr[4:8]))
	case 43:
		t.big = true
		if _, err := f.ReadAt(hdr[:16], 0); err != nil {
			return tiffPatcher{}, 0, fmt.Errorf("read BigTIFF header: %w", err)
		}
		next = t.bo.Uint64(hdr[8:16])
	default:
		return tiffPatcher{}, 0, errors.New("not a TIFF file")
	}
	if t.big {
		t.entrySize, t.countSize, t.inline = 20, 8, 8
	}
	return t, next, nil
}

// offset decodes an offset (or a value count): 8 bytes in a BigTIFF, 4 in
// a TIFF.
func (t tiffPatcher) offset(b []byte) uint64 {
	if t.big {
		return t.bo.Uint64(b)
	}
	return uint64(t.bo.Uint32(b))
}

// unmarkIFD zeroes the ExtraSamples values of the IFD at offset next and
// returns the offset of the IFD after it (0 for none).
func (t tiffPatcher) unmarkIFD(next uint64) (uint64, error) {
	if next >= uint64(t.size) {
		return 0, fmt.Errorf("IFD offset %d beyond the end of the file", next)
	}
	cb := make([]byte, t.countSize)
	if _, err := t.f.ReadAt(cb, int64(next)); err != nil {
		return 0, fmt.Errorf("read IFD at %d: %w", next, err)
	}
	var count uint64
	if t.big {
		count = t.bo.Uint64(cb)
	} else {
		count = uint64(t.bo.Uint16(cb))
	}
	if count > 65535 {
		return 0, fmt.Errorf("IFD at %d has %d entries", next, count)
	}
	entries := make([]byte, int(count)*t.entrySize)
	if _, err := t.f.ReadAt(entries, int64(next)+int64(t.countSize)); err != nil {
		return 0, fmt.Errorf("read IFD at %d: %w", next, err)
	}
	for i := 0; i < int(count); i++ {
		entryAt := int64(next) + int64(t.countSize) + int64(i*t.entrySize)
		if err := t.unmarkEntry(entries[i*t.entrySize:(i+1)*t.entrySize], entryAt); err != nil {
			return 0, err
		}
	}
	nb := make([]byte, t.inline)
	if _, err := t.f.ReadAt(nb, int64(next)+int64(t.countSize)+int64(count)*int64(t.entrySize)); err != nil {
		return 0, fmt.Errorf("read next IFD offset: %w", err)
	}
	return t.offset(nb), nil
}

// unmarkEntry zeroes the values of IFD entry e (at file offset entryAt)
// when it is an ExtraSamples entry of SHORTs, inline or elsewhere in the
// file.
func (t tiffPatcher) unmarkEntry(e []byte, entryAt int64) error {
	if t.bo.Uint16(e[0:2]) != tiffTagExtraSamples || t.bo.Uint16(e[2:4]) != tiffTypeShort {
		return nil
	}
	nval := t.offset(e[4:])
	if nval == 0 || nval > tiffMaxExtraSampleCount {
		return nil
	}
	valOff := entryAt + int64(t.entrySize-t.inline)
	if nval*2 > uint64(t.inline) {
		valOff = int64(t.offset(e[t.entrySize-t.inline:]))
	}
	if valOff < 0 || valOff+int64(nval*2) > t.size {
		return fmt.Errorf("ExtraSamples values at %d lie outside the file", valOff)
	}
	zeros := make([]byte, nval*2) // tiffExtraSampleUnspec (0) in either byte order
	if _, err := t.f.WriteAt(zeros, valOff); err != nil {
		return fmt.Errorf("patch ExtraSamples: %w", err)
	}
	return nil
}
