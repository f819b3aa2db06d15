package geo

/*
#cgo pkg-config: gdal
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <dlfcn.h>
#include <pthread.h>
#include <gdal.h>
#include <cpl_error.h>
#include <cpl_conv.h>
#include <cpl_string.h>

// Each helper runs one GDAL call with GDAL's messages held (the calling OS
// thread's error handler), and returns GDAL's last error message, copied,
// or NULL on success: a Go call may move between threads between calls.

// HDF5 prints its error stack to stderr unless told not to, and a
// thread-safe HDF5 keeps that setting per thread: the netCDF and HDF5
// drivers turn it off on the thread that opened a file, and a Go call may
// run on another. pnec_quiet_hdf5 turns it off on the calling thread
// (H5Eset_auto2(H5E_DEFAULT, NULL, NULL), found in the HDF5 library GDAL
// loaded; nothing when there is none).
typedef int (*pnec_h5eset_fn)(int64_t, void *, void *);
static pnec_h5eset_fn pnec_h5eset;
static pthread_once_t pnec_h5_once = PTHREAD_ONCE_INIT;
static void pnec_find_h5eset(void) { pnec_h5eset = (pnec_h5eset_fn)dlsym(RTLD_DEFAULT, "H5Eset_auto2"); }
static void pnec_quiet_hdf5(void) {
	pthread_once(&pnec_h5_once, pnec_find_h5eset);
	if (pnec_h5eset) pnec_h5eset(0, NULL, NULL);
}

static char *pnec_errmsg(void) {
	const char *m = CPLGetLastErrorMsg();
	return CPLStrdup(m && *m ? m : "GDAL reported no message");
}

static char *pnec_md_open(const char *path, GDALDatasetH *ds, GDALGroupH *root) {
	pnec_quiet_hdf5();
	CPLErrorReset();
	CPLPushErrorHandler(CPLQuietErrorHandler);
	*ds = GDALOpenEx(path, GDAL_OF_MULTIDIM_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR, NULL, NULL, NULL);
	char *err = NULL;
	if (*ds == NULL) {
		err = pnec_errmsg();
	} else {
		*root = GDALDatasetGetRootGroup(*ds);
		if (*root == NULL) {
			err = pnec_errmsg();
			GDALClose(*ds);
			*ds = NULL;
		}
	}
	CPLPopErrorHandler();
	return err;
}

static GDALMDArrayH pnec_md_array(GDALGroupH root, const char *full) {
	pnec_quiet_hdf5();
	CPLPushErrorHandler(CPLQuietErrorHandler);
	GDALMDArrayH a = GDALGroupOpenMDArrayFromFullname(root, full, NULL);
	CPLPopErrorHandler();
	CPLErrorReset();
	return a;
}

static GDALGroupH pnec_md_group(GDALGroupH root, const char *full) {
	pnec_quiet_hdf5();
	if (strcmp(full, "/") == 0) return NULL;
	CPLPushErrorHandler(CPLQuietErrorHandler);
	GDALGroupH g = GDALGroupOpenGroupFromFullname(root, full, NULL);
	CPLPopErrorHandler();
	CPLErrorReset();
	return g;
}

// pnec_md_read reads a hyperslab into buf (bytes long) as GDAL type dt.
static char *pnec_md_read(GDALMDArrayH a, const GUInt64 *start, const size_t *count, const GInt64 *step, GDALDataType dt, void *buf, size_t bytes) {
	pnec_quiet_hdf5();
	CPLErrorReset();
	CPLPushErrorHandler(CPLQuietErrorHandler);
	GDALExtendedDataTypeH t = GDALExtendedDataTypeCreate(dt);
	int ok = GDALMDArrayRead(a, start, count, step, NULL, t, buf, buf, bytes);
	GDALExtendedDataTypeRelease(t);
	char *err = ok ? NULL : pnec_errmsg();
	CPLPopErrorHandler();
	return err;
}

// pnec_md_read_string reads a scalar (or first) string of an array into
// *out (CPLFree it).
static char *pnec_md_read_string(GDALMDArrayH a, char **out) {
	pnec_quiet_hdf5();
	CPLErrorReset();
	CPLPushErrorHandler(CPLQuietErrorHandler);
	size_t nd = GDALMDArrayGetDimensionCount(a);
	GUInt64 start[8] = {0};
	size_t count[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	GDALExtendedDataTypeH t = GDALExtendedDataTypeCreateString(0);
	char *p = NULL;
	int ok = nd <= 8 && GDALMDArrayRead(a, start, count, NULL, NULL, t, &p, &p, sizeof(p));
	GDALExtendedDataTypeRelease(t);
	char *err = NULL;
	if (!ok) {
		err = pnec_errmsg();
	} else {
		*out = p ? CPLStrdup(p) : CPLStrdup("");
		CPLFree(p);
	}
	CPLPopErrorHandler();
	return err;
}

static GDALAttributeH pnec_md_attr(GDALMDArrayH a, GDALGroupH g, const char *name) {
	pnec_quiet_hdf5();
	CPLPushErrorHandler(CPLQuietErrorHandler);
	GDALAttributeH at = a ? GDALMDArrayGetAttribute(a, name) : GDALGroupGetAttribute(g, name);
	CPLPopErrorHandler();
	CPLErrorReset();
	return at;
}

// pnec_attr_doubles reads a numeric attribute (NULL and *n 0 for a string one).
static double *pnec_attr_doubles(GDALAttributeH at, size_t *n) {
	pnec_quiet_hdf5();
	*n = 0;
	GDALExtendedDataTypeH t = GDALAttributeGetDataType(at);
	int numeric = GDALExtendedDataTypeGetClass(t) == GEDTC_NUMERIC;
	GDALExtendedDataTypeRelease(t);
	if (!numeric) return NULL;
	CPLPushErrorHandler(CPLQuietErrorHandler);
	double *v = GDALAttributeReadAsDoubleArray(at, n);
	CPLPopErrorHandler();
	CPLErrorReset();
	return v;
}

// pnec_md_chunk is the decoded bytes of one chunk (block) of the array,
// 0 for an array stored contiguously (no chunks); *dims receives the
// chunk's shape (at most 8 axes).
static double pnec_md_chunk(GDALMDArrayH a, GUInt64 *dims, size_t *n) {
	pnec_quiet_hdf5();
	CPLPushErrorHandler(CPLQuietErrorHandler);
	size_t count = 0;
	GUInt64 *b = GDALMDArrayGetBlockSize(a, &count);
	GDALExtendedDataTypeH t = GDALMDArrayGetDataType(a);
	double bytes = (double)GDALExtendedDataTypeGetSize(t);
	GDALExtendedDataTypeRelease(t);
	CPLPopErrorHandler();
	CPLErrorReset();
	*n = count < 8 ? count : 8;
	int chunked = b != NULL && count > 0;
	for (size_t i = 0; b != NULL && i < count; i++) {
		if (i < 8) dims[i] = b[i];
		if (b[i] == 0) chunked = 0;
		bytes *= (double)b[i];
	}
	CPLFree(b);
	return chunked ? bytes : 0;
}

static const char *pnec_attr_string(GDALAttributeH at) {
	pnec_quiet_hdf5();
	CPLPushErrorHandler(CPLQuietErrorHandler);
	const char *s = GDALAttributeReadAsString(at);
	CPLPopErrorHandler();
	CPLErrorReset();
	return s;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"unsafe"
)

// onQuietThread keeps the calling goroutine on its OS thread until the
// returned function runs, and turns HDF5's error printing off on that
// thread first. HDF5 keeps that setting per thread and the netCDF library
// reads a variable's metadata lazily (probing attributes that are often
// absent, each probe an error stack HDF5 prints): a goroutine moved to
// another thread between two GDAL calls of one open or read would print
// those stacks into pnec's stderr. Every entry point that may reach a
// netCDF or HDF5 file (Open, DatasetFiles, OpenMask, reads, Close, the
// multidimensional helpers) starts with defer onQuietThread()().
func onQuietThread() (release func()) {
	runtime.LockOSThread()
	C.pnec_quiet_hdf5()
	return runtime.UnlockOSThread
}

// mdFile is a file opened through GDAL's multidimensional API (netCDF,
// HDF5): its arrays and attributes by full name ("/group/array").
type mdFile struct {
	name string
	ds   C.GDALDatasetH
	root C.GDALGroupH
}

// openMD opens path in multidimensional mode.
func openMD(path string) (*mdFile, error) {
	register()
	defer onQuietThread()()
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	f := &mdFile{name: path}
	if msg := C.pnec_md_open(cp, &f.ds, &f.root); msg != nil {
		defer C.CPLFree(unsafe.Pointer(msg))
		return nil, &GDALError{Msg: C.GoString(msg)}
	}
	return f, nil
}

func (f *mdFile) close() error {
	if f.ds == nil {
		return ErrClosed
	}
	defer onQuietThread()()
	C.GDALGroupRelease(f.root)
	C.GDALClose(f.ds)
	f.ds, f.root = nil, nil
	return nil
}

// errNoArray is returned (wrapped) for an array the file does not have.
var errNoArray = errors.New("no such array")

// array opens the array full ("/group/name"); errNoArray when absent.
func (f *mdFile) array(full string) (*mdArray, error) {
	defer onQuietThread()() // the nodata query reads the variable's metadata
	cp := C.CString(full)
	defer C.free(unsafe.Pointer(cp))
	h := C.pnec_md_array(f.root, cp)
	if h == nil {
		return nil, fmt.Errorf("%s: %s: %w", f.name, full, errNoArray)
	}
	a := &mdArray{file: f, full: full, h: h}
	var n C.size_t
	dims := C.GDALMDArrayGetDimensions(h, &n)
	ds := unsafe.Slice(dims, int(n))
	for _, d := range ds {
		a.dims = append(a.dims, int(C.GDALDimensionGetSize(d)))
		a.dimNames = append(a.dimNames, C.GoString(C.GDALDimensionGetName(d)))
	}
	C.GDALReleaseDimensions(dims, n)
	var has C.int
	nd := C.GDALMDArrayGetNoDataValueAsDouble(h, &has)
	a.nodata, a.hasNoData = float64(nd), has != 0
	return a, nil
}

// maxChunkBytes bounds the decoded size of one chunk of an array a cube
// reads: a read decodes whole chunks, so an array declaring 1 GiB chunks
// (a 1.3 MB NetCDF of 32 x 16384^2 compressed into one chunk a band) held
// pnec info for over a minute at 2.1 GB and passed any --max-memory.
// Real deliveries' chunks are kilobytes to a few
// megabytes.
var maxChunkBytes = float64(256 << 20)

// chunkShape is the array's chunk shape (values per axis) and one chunk's
// decoded bytes; nil and 0 for an array stored contiguously.
func (a *mdArray) chunkShape() ([]int, float64) {
	defer onQuietThread()()
	var dims [8]C.GUInt64
	var n C.size_t
	bytes := float64(C.pnec_md_chunk(a.h, &dims[0], &n))
	if bytes == 0 {
		return nil, 0
	}
	shape := make([]int, int(n))
	for i := range shape {
		shape[i] = int(min(uint64(dims[i]), math.MaxInt32))
	}
	return shape, bytes
}

// checkChunks refuses an array whose chunks decode to more than
// maxChunkBytes each, naming it and the chunk's shape.
func (a *mdArray) checkChunks() error {
	dims, bytes := a.chunkShape()
	if bytes <= maxChunkBytes {
		return nil
	}
	shape := make([]string, len(dims))
	for i, d := range dims {
		shape[i] = fmt.Sprint(d)
	}
	return fmt.Errorf("%s: %s is stored in chunks of %s values (%.0f MiB each once decoded), above the %.0f MiB pnec decodes at once: rewrite it with smaller chunks (e.g. nccopy -c)",
		a.file.name, a.full, strings.Join(shape, " x "), bytes/(1<<20), maxChunkBytes/(1<<20))
}

// has reports whether the file has the array full.
func (f *mdFile) has(full string) bool {
	a, err := f.array(full)
	if err != nil {
		return false
	}
	a.close()
	return true
}

// groupAttr is the attribute name of group full ("/" for the root).
func (f *mdFile) groupAttr(full, name string) (mdAttr, bool) {
	g := f.root
	if full != "/" {
		cg := C.CString(full)
		defer C.free(unsafe.Pointer(cg))
		g = C.pnec_md_group(f.root, cg)
		if g == nil {
			return mdAttr{}, false
		}
		defer C.GDALGroupRelease(g)
	}
	return readAttr(nil, g, name)
}

// mdAttr is an attribute's value: numbers, or a string.
type mdAttr struct {
	nums []float64
	str  string
	num  bool
}

// floats is the attribute's numbers (nil for a string attribute).
func (a mdAttr) floats() []float64 { return a.nums }

// float is its single number.
func (a mdAttr) float() (float64, bool) {
	if !a.num || len(a.nums) != 1 {
		return 0, false
	}
	return a.nums[0], true
}

func readAttr(arr C.GDALMDArrayH, g C.GDALGroupH, name string) (mdAttr, bool) {
	defer onQuietThread()()
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	at := C.pnec_md_attr(arr, g, cn)
	if at == nil {
		return mdAttr{}, false
	}
	defer C.GDALAttributeRelease(at)
	var n C.size_t
	if v := C.pnec_attr_doubles(at, &n); v != nil {
		defer C.CPLFree(unsafe.Pointer(v))
		vals := make([]float64, int(n))
		for i, x := range unsafe.Slice(v, int(n)) {
			vals[i] = float64(x)
		}
		return mdAttr{nums: vals, num: true}, true
	}
	s := C.pnec_attr_string(at)
	if s == nil {
		return mdAttr{}, false
	}
	return mdAttr{str: C.GoString(s)}, true
}

// mdArray is an open array of an mdFile.
type mdArray struct {
	file      *mdFile
	full      string
	h         C.GDALMDArrayH
	dims      []int
	dimNames  []string
	nodata    float64
	hasNoData bool
}

func (a *mdArray) close() {
	if a.h != nil {
		defer onQuietThread()()
		C.GDALMDArrayRelease(a.h)
		a.h = nil
	}
}

// attr is the array's attribute name.
func (a *mdArray) attr(name string) (mdAttr, bool) { return readAttr(a.h, nil, name) }

// checkSlab verifies a hyperslab against the array's shape.
func (a *mdArray) checkSlab(start, count, step []int) error {
	if len(start) != len(a.dims) || len(count) != len(a.dims) || (step != nil && len(step) != len(a.dims)) {
		return fmt.Errorf("read %s: %d-dimensional slab of a %d-dimensional array", a.full, len(start), len(a.dims))
	}
	for i := range start {
		st := 1
		if step != nil {
			st = step[i]
		}
		if count[i] < 1 || start[i] < 0 || st < 1 || start[i]+(count[i]-1)*st >= a.dims[i] {
			return fmt.Errorf("read %s: slab start %v count %v step %v outside %v", a.full, start, count, step, a.dims)
		}
	}
	return nil
}

// slabArgs converts a hyperslab into GDAL's argument arrays (C memory the
// caller frees with the returned function).
func slabArgs(start, count, step []int) (*C.GUInt64, *C.size_t, *C.GInt64, func()) {
	n := len(start)
	cs := (*C.GUInt64)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.GUInt64(0)))))
	cc := (*C.size_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.size_t(0)))))
	var cst *C.GInt64
	if step != nil {
		cst = (*C.GInt64)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.GInt64(0)))))
	}
	ss, sc := unsafe.Slice(cs, n), unsafe.Slice(cc, n)
	for i := range n {
		ss[i], sc[i] = C.GUInt64(start[i]), C.size_t(count[i])
		if step != nil {
			unsafe.Slice(cst, n)[i] = C.GInt64(step[i])
		}
	}
	return cs, cc, cst, func() {
		C.free(unsafe.Pointer(cs))
		C.free(unsafe.Pointer(cc))
		if cst != nil {
			C.free(unsafe.Pointer(cst))
		}
	}
}

// slabValues checks the hyperslab (start, count, step) against the array
// and returns how many values it holds, which a buffer of have values must
// take.
func (a *mdArray) slabValues(start, count, step []int, have int) (int, error) {
	if err := a.checkSlab(start, count, step); err != nil {
		return 0, err
	}
	n := 1
	for _, c := range count {
		n *= c
	}
	if have < n {
		return 0, fmt.Errorf("read %s: buffer of %d values for %d", a.full, have, n)
	}
	return n, nil
}

// readError turns a read's GDAL message (nil: none) into an error naming
// the array, and frees the message.
func (a *mdArray) readError(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.CPLFree(unsafe.Pointer(msg))
	return fmt.Errorf("read %s: %w", a.full, &GDALError{Msg: C.GoString(msg)})
}

// readF32 reads the hyperslab (start, count, step; step nil = 1) into buf,
// converted to float32, in the array's axis order (C order).
func (a *mdArray) readF32(start, count, step []int, buf []float32) error {
	return readSlab(a, start, count, step, buf, C.GDT_Float32)
}

// readF64 is readF32 into float64 (times in seconds since 1970, which
// float32 would round to minutes).
func (a *mdArray) readF64(start, count, step []int, buf []float64) error {
	return readSlab(a, start, count, step, buf, C.GDT_Float64)
}

// readI32 is readF32 into int32 (geometry lookup tables).
func (a *mdArray) readI32(start, count, step []int, buf []int32) error {
	return readSlab(a, start, count, step, buf, C.GDT_Int32)
}

// readSlab is readF32 into values of GDAL type dt, the type of T.
func readSlab[T float32 | float64 | int32](a *mdArray, start, count, step []int, buf []T, dt C.GDALDataType) error {
	n, err := a.slabValues(start, count, step, len(buf))
	if err != nil {
		return err
	}
	cs, cc, cst, free := slabArgs(start, count, step)
	defer free()
	// The buffer is Go memory GDAL writes into during the call only.
	return a.readError(C.pnec_md_read(a.h, cs, cc, cst, dt, unsafe.Pointer(&buf[0]), C.size_t(n)*C.size_t(unsafe.Sizeof(buf[0]))))
}

// readString reads a scalar string array (HDF-EOS StructMetadata.0).
func (a *mdArray) readString() (string, error) {
	var out *C.char
	if err := a.readError(C.pnec_md_read_string(a.h, &out)); err != nil {
		return "", err
	}
	defer C.CPLFree(unsafe.Pointer(out))
	return C.GoString(out), nil
}

// readAllF64 reads a whole (small) array as float64 (band centres, widths,
// flags).
func (a *mdArray) readAllF64() ([]float64, error) {
	n := 1
	for _, d := range a.dims {
		n *= d
	}
	if n > 1<<20 {
		return nil, fmt.Errorf("read %s: %d values, too many for a band table", a.full, n)
	}
	start, count := make([]int, len(a.dims)), append([]int(nil), a.dims...)
	buf := make([]float32, max(n, 1))
	if n == 0 {
		return nil, nil
	}
	if err := a.readF32(start, count, nil, buf); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i, v := range buf[:n] {
		out[i] = float64(v)
	}
	return out, nil
}
