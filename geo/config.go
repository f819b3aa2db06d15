package geo

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <cpl_conv.h>
#include <gdal.h>
#include <cpl_error.h>

static void pnecEmitError(const char *msg) { CPLError(CE_Failure, CPLE_AppDefined, "%s", msg); }
*/
import "C"

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/airbusgeo/godal"

	"github.com/pnec/pnec/internal/resources"
)

var registerOnce sync.Once

// register makes every GDAL driver available and applies pnec's resource
// policy to the process (resources.Start: GDAL's decoding threads, glibc's
// malloc), so that a library program gets the command's settings too;
// called before any dataset is opened or created.
func register() {
	registerDrivers()
	resources.Start(Knobs{})
}

// registerDrivers registers GDAL's drivers, which also loads GDAL's
// configuration file (whose options the policy reads).
func registerDrivers() { registerOnce.Do(godal.RegisterAll) }

// Drivers are registered when the process starts, as GDAL's own tools do;
// the resource policy is applied by the command, or by register.
func init() { registerDrivers() }

// QuietMessages stops GDAL from printing messages that arrive outside a
// call of this package (those inside are captured and returned as errors,
// or dropped as harmless warnings): GDAL's default handler writes them to
// stderr as "ERROR 1: ..." or "Warning 1: ..." around the command's one
// line (a PROJ database warning while a CRS is looked up lazily, say).
// pnec calls it unless --verbose is given.
func QuietMessages() {
	register()
	// Not CPLSetErrorHandler(CPLQuietErrorHandler): that would also drop
	// the counting of worker-thread failures that fails a product write
	// (failures.go).
	quietFailureHandler()
}

// emitGDALError reports msg as a GDAL failure outside any call of this
// package, as GDAL's own threads and lazy initialisations do (for tests).
func emitGDALError(msg string) {
	cm := C.CString(msg)
	defer C.free(unsafe.Pointer(cm))
	C.pnecEmitError(cm)
}

// SetConfig applies GDAL configuration options given as KEY=VALUE (e.g.
// "GDAL_CACHEMAX=512", "AWS_NO_SIGN_REQUEST=YES") process-wide, as
// gdal's --config does. An entry without '=' or with an empty key is an
// error naming the entry, and nothing is applied then. An empty VALUE
// unsets the option.
func SetConfig(kv []string) error {
	keys := make([]string, len(kv))
	vals := make([]string, len(kv))
	for i, e := range kv {
		k, v, ok := strings.Cut(e, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\n") {
			return fmt.Errorf("config option %q: want KEY=VALUE (e.g. GDAL_CACHEMAX=512)", e)
		}
		keys[i], vals[i] = k, v
	}
	for i := range keys {
		setConfigValue(keys[i], vals[i])
	}
	return nil
}

// withThreadConfig runs fn with the GDAL configuration option key set to
// value on this thread only (CPLSetThreadLocalConfigOption), so that other
// goroutines' GDAL work (another job of a batch) keeps its own; the
// goroutine stays on its thread meanwhile.
func withThreadConfig(key, value string, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ck, cv := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(ck))
	defer C.free(unsafe.Pointer(cv))
	C.CPLSetThreadLocalConfigOption(ck, cv)
	defer C.CPLSetThreadLocalConfigOption(ck, nil)
	return fn()
}

// ConfigValue returns the current value of a GDAL configuration option ("" when unset).
func ConfigValue(key string) string {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	v := C.CPLGetConfigOption(ck, nil)
	if v == nil {
		return ""
	}
	return C.GoString(v)
}

// GDALVersion returns the GDAL library version, e.g. "3.6.2".
func GDALVersion() string {
	v := godal.Version()
	return fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Revision())
}

// setUnitTypes sets the unit type of bands of the raster file at path
// (units[i] for band i+1; "" leaves a band alone): godal has no call for it.
// The file must not be open elsewhere for writing.
func setUnitTypes(path string, units []string) error {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	ds := C.GDALOpenEx(cp, C.GDAL_OF_RASTER|C.GDAL_OF_UPDATE, nil, nil, nil)
	if ds == nil {
		return fmt.Errorf("open %s for update", path)
	}
	var failed error
	for i, u := range units {
		if u == "" {
			continue
		}
		b := C.GDALGetRasterBand(ds, C.int(i+1))
		if b == nil {
			failed = fmt.Errorf("%s has no band %d", path, i+1)
			break
		}
		cu := C.CString(u)
		e := C.GDALSetRasterUnitType(b, cu)
		C.free(unsafe.Pointer(cu))
		if e != C.CE_None {
			failed = fmt.Errorf("set unit type of band %d of %s", i+1, path)
			break
		}
	}
	C.GDALClose(ds) // void before GDAL 3.7; the stage is read back next
	return failed
}

// DecodeThreads is the number of threads GDAL decodes compressed blocks
// with: GDAL_NUM_THREADS as a number, or every core for ALL_CPUS (pnec's
// default); 1 when unset or not understood.
func DecodeThreads() int {
	register() // the policy's default, also before any dataset is opened
	v := strings.TrimSpace(ConfigValue("GDAL_NUM_THREADS"))
	if strings.EqualFold(v, "ALL_CPUS") {
		return runtime.NumCPU()
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return n
	}
	return 1
}
