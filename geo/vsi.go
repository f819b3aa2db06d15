package geo

/*
#cgo pkg-config: gdal
#define _LARGEFILE64_SOURCE 1
#include <stdlib.h>
#include <cpl_vsi.h>
#include <cpl_string.h>

// pnec_vsi_kind is 0 when path does not exist, 1 for a file, 2 for a directory.
static int pnec_vsi_kind(const char *path) {
	VSIStatBufL st;
	if (VSIStatL(path, &st) != 0) return 0;
	return VSI_ISDIR(st.st_mode) ? 2 : 1;
}
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

// vsiExists reports whether a file or directory exists at path (local or a
// GDAL virtual path such as /vsizip/).
func vsiExists(path string) bool {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return C.pnec_vsi_kind(cp) != 0
}

// vsiIsDir reports whether path is a directory (a folder inside a ZIP too).
func vsiIsDir(path string) bool {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return C.pnec_vsi_kind(cp) == 2
}

// vsiReadDir lists the names in the directory path (nil when it is none).
func vsiReadDir(path string) []string {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	list := C.VSIReadDir(cp)
	if list == nil {
		return nil
	}
	defer C.CSLDestroy(list)
	var out []string
	for p := list; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		n := C.GoString(*p)
		if n != "." && n != ".." {
			out = append(out, n)
		}
	}
	return out
}

// vsiReadFile reads the whole (small) file at path, at most maxBytes.
func vsiReadFile(path string, maxBytes int64) ([]byte, error) {
	cp, cm := C.CString(path), C.CString("rb")
	defer C.free(unsafe.Pointer(cp))
	defer C.free(unsafe.Pointer(cm))
	f := C.VSIFOpenL(cp, cm)
	if f == nil {
		return nil, fmt.Errorf("open %s: %w", path, os.ErrNotExist)
	}
	defer C.VSIFCloseL(f)
	var out []byte
	buf := C.malloc(1 << 16)
	defer C.free(buf)
	for {
		n := C.VSIFReadL(buf, 1, 1<<16, f)
		out = append(out, unsafe.Slice((*byte)(buf), int(n))...)
		if int64(len(out)) > maxBytes {
			return nil, fmt.Errorf("read %s: larger than %d bytes", path, maxBytes)
		}
		if n < 1<<16 {
			return out, nil
		}
	}
}
