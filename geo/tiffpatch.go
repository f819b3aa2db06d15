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
	size := st.Size()
	var hdr [16]byte
	if _, err := f.ReadAt(hdr[:8], 0); err != nil {
		return fmt.Errorf("read TIFF header: %w", err)
	}
	var bo binary.ByteOrder
	switch string(hdr[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return errors.New("not a TIFF file")
	}
	big := false
	var next uint64
	switch bo.Uint16(hdr[2:4]) {
	case 42:
		next = uint64(bo.Uint32(hdr[4:8]))
	case 43:
		big = true
		if _, err := f.ReadAt(hdr[:16], 0); err != nil {
			return fmt.Errorf("read BigTIFF header: %w", err)
		}
		next = bo.Uint64(hdr[8:16])
	default:
		return errors.New("not a TIFF file")
	}
	entrySize, countSize, inline := 12, 2, 4
	if big {
		entrySize, countSize, inline = 20, 8, 8
	}
	for n := 0; next != 0 && n < tiffMaxIFDs; n++ {
		if next >= uint64(size) {
			return fmt.Errorf("IFD offset %d beyond the end of the file", next)
		}
		cb := make([]byte, countSize)
		if _, err := f.ReadAt(cb, int64(next)); err != nil {
			return fmt.Errorf("read IFD at %d: %w", next, err)
		}
		var count uint64
		if big {
			count = bo.Uint64(cb)
		} else {
			count = uint64(bo.Uint16(cb))
		}
		if count > 65535 {
			return fmt.Errorf("IFD at %d has %d entries", next, count)
		}
		entries := make([]byte, int(count)*entrySize)
		if _, err := f.ReadAt(entries, int64(next)+int64(countSize)); err != nil {
			return fmt.Errorf("read IFD at %d: %w", next, err)
		}
		for i := 0; i < int(count); i++ {
			e := entries[i*entrySize : (i+1)*entrySize]
			if bo.Uint16(e[0:2]) != tiffTagExtraSamples || bo.Uint16(e[2:4]) != tiffTypeShort {
				continue
			}
			var nval uint64
			if big {
				nval = bo.Uint64(e[4:12])
			} else {
				nval = uint64(bo.Uint32(e[4:8]))
			}
			if nval == 0 || nval > tiffMaxExtraSampleCount {
				continue
			}
			valOff := int64(next) + int64(countSize) + int64(i*entrySize) + int64(entrySize-inline)
			if nval*2 > uint64(inline) {
				vb := e[entrySize-inline:]
				if big {
					valOff = int64(bo.Uint64(vb))
				} else {
					valOff = int64(bo.Uint32(vb))
				}
			}
			if valOff < 0 || valOff+int64(nval*2) > size {
				return fmt.Errorf("ExtraSamples values at %d lie outside the file", valOff)
			}
			zeros := make([]byte, nval*2) // tiffExtraSampleUnspec (0) in either byte order
			if _, err := f.WriteAt(zeros, valOff); err != nil {
				return fmt.Errorf("patch ExtraSamples: %w", err)
			}
		}
		nb := make([]byte, inline)
		if _, err := f.ReadAt(nb, int64(next)+int64(countSize)+int64(count)*int64(entrySize)); err != nil {
			return fmt.Errorf("read next IFD offset: %w", err)
		}
		if big {
			next = bo.Uint64(nb)
		} else {
			next = uint64(bo.Uint32(nb))
		}
	}
	return f.Sync()
}
