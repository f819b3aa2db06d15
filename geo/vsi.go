package geo

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <cpl_vsi.h>
*/
import "C"

import (
	"fmt"
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
