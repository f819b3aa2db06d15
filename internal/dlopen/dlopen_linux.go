//go:build linux && cgo

package dlopen

// #cgo LDFLAGS: -ldl
// #include <dlfcn.h>
// #include <stdlib.h>
//
// static void *pnec_dlopen(const char *path) { return dlopen(path, RTLD_NOW | RTLD_GLOBAL); }
// static const char *pnec_dlerror(void) { return dlerror(); }
import "C"

import (
	"errors"
	"unsafe"
)

// Global loads the shared library path (a full path, or a soname the
// dynamic loader finds) into the process for good: later lookups of its
// soname, by dlopen or a library's dependencies, find this copy.
func Global(path string) error {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	if h := C.pnec_dlopen(cs); h == nil {
		return errors.New(C.GoString(C.pnec_dlerror()))
	}
	return nil
}
