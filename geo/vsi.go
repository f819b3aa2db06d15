package geo

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <cpl_vsi.h>
*/
import "C"

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unsafe"
)

// vsiRename renames a GDAL virtual file (e.g. under /vsimem/), where
// os.Rename cannot reach.
func vsiRename(from, to string) error {
	cf, ct := C.CString(from), C.CString(to)
	defer C.free(unsafe.Pointer(cf))
	defer C.free(unsafe.Pointer(ct))
	if C.VSIRename(cf, ct) != 0 {
		return fmt.Errorf("rename %s to %s failed", from, to)
	}
	return nil
}

// vsiUnlink removes a GDAL virtual file, ignoring a missing one.
func vsiUnlink(path string) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	C.VSIUnlink(cp)
}

// vsiBase is the last element of a GDAL virtual path.
func vsiBase(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

// vsiUpload copies the local file from to the GDAL virtual path to (any
// writable /vsi file system: /vsimem/, /vsis3/, /vsigs/, /vsiaz/ ...). On
// object stores the object appears only when the upload completes at close,
// so readers never see part of it. A missing local file is fs.ErrNotExist.
func vsiUpload(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	ct, cm := C.CString(to), C.CString("wb")
	defer C.free(unsafe.Pointer(ct))
	defer C.free(unsafe.Pointer(cm))
	dst := C.VSIFOpenL(ct, cm)
	if dst == nil {
		return fmt.Errorf("upload %s: cannot open it for writing", to)
	}
	buf := C.malloc(1 << 20)
	defer C.free(buf)
	chunk := unsafe.Slice((*byte)(buf), 1<<20)
	for {
		n, rerr := src.Read(chunk)
		if n > 0 && C.VSIFWriteL(buf, 1, C.size_t(n), dst) != C.size_t(n) {
			C.VSIFCloseL(dst)
			vsiUnlink(to)
			return fmt.Errorf("upload %s: write failed", to)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			C.VSIFCloseL(dst)
			vsiUnlink(to)
			return fmt.Errorf("upload %s: read %s: %w", to, from, rerr)
		}
	}
	if C.VSIFCloseL(dst) != 0 {
		vsiUnlink(to)
		return fmt.Errorf("upload %s: closing (completing the upload) failed", to)
	}
	return nil
}
