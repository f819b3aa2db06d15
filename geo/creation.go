package geo

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <string.h>
#include <gdal.h>
#include <cpl_error.h>

// pnecCollected gathers the messages GDAL's option validation emits.
typedef struct {
	char msg[1024];
} pnecCollected;

static void CPL_STDCALL pnecCollect(CPLErr cls, CPLErrorNum code, const char *msg) {
	pnecCollected *c = (pnecCollected *)CPLGetErrorHandlerUserData();
	if (c == NULL || cls < CE_Warning || msg == NULL || c->msg[0] != 0) {
		return;
	}
	strncpy(c->msg, msg, sizeof(c->msg) - 1);
	c->msg[sizeof(c->msg) - 1] = 0;
}

// pnecValidateOption validates one KEY=VALUE creation option of driver
// against the driver's creation option list: 1 valid, 0 refused (the
// reason in c), -1 no such driver.
static int pnecValidateOption(const char *driver, const char *kv, pnecCollected *c) {
	GDALDriverH d = GDALGetDriverByName(driver);
	if (d == NULL) {
		return -1;
	}
	char *opts[2] = {(char *)kv, NULL};
	CPLPushErrorHandlerEx(pnecCollect, c);
	int ok = GDALValidateCreationOptions(d, opts);
	CPLPopErrorHandler();
	return ok ? 1 : 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/airbusgeo/godal"
)

// ErrCreationOption is wrapped by the errors of CheckCreationOptions and
// ProductWriteBytes (a *CreationOptionError).
var ErrCreationOption = errors.New("bad creation option")

// CreationOptionError is a creation option (or a set of them) a product
// cannot be written with, and why. errors.Is(err, ErrCreationOption) holds.
type CreationOptionError struct {
	Option string // KEY=VALUE, or the options tried together
	Reason string
}

func (e *CreationOptionError) Error() string {
	return fmt.Sprintf("creation option %q: %s", e.Option, e.Reason)
}

// Is makes errors.Is(err, ErrCreationOption) true.
func (e *CreationOptionError) Is(target error) bool { return target == ErrCreationOption }

// validateCOGOptions checks each KEY=VALUE against the COG driver's
// creation option list (GDALValidateCreationOptions: known keys, values of
// the listed choices, numbers where numbers are due) and BLOCKSIZE against
// what the product writer takes.
func validateCOGOptions(opts []string) error {
	cd := C.CString("COG")
	defer C.free(unsafe.Pointer(cd))
	if err := validateSyntax(opts); err != nil {
		return err
	}
	for _, kv := range opts {
		ckv := C.CString(kv)
		var got C.pnecCollected
		ok := C.pnecValidateOption(cd, ckv, &got)
		C.free(unsafe.Pointer(ckv))
		switch ok {
		case -1:
			return &CreationOptionError{kv, "GDAL has no COG driver (GDAL 3.1 or later is needed)"}
		case 0:
			why := strings.TrimSpace(C.GoString(&got.msg[0]))
			if why == "" {
				why = "GDAL's COG driver refuses it"
			}
			return &CreationOptionError{kv, why}
		}
	}
	return nil
}

// validateSyntax is the part of validateCOGOptions that needs no GDAL: KEY=VALUE, and BLOCKSIZE.
func validateSyntax(opts []string) error {
	for _, kv := range opts {
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" {
			return &CreationOptionError{kv, "want KEY=VALUE"}
		}
		if _, err := blockSize([]string{kv}); err != nil {
			return &CreationOptionError{kv, blockSizeWant}
		}
	}
	return nil
}

// trialCount names the trial products of CheckCreationOptions apart.
var trialCount atomic.Int64

// CheckCreationOptions refuses, before any work, COG creation options a
// product described by classes and reliabilityFloat32 (as for
// CreateProduct) cannot be written with: a key GDAL's COG driver does not
// know, a value it refuses (COMPRESS=NOPE, QUALITY=500), a BLOCKSIZE that is
// not a multiple of 16, and options valid in general but not for the
// product's bands (JPEG or WEBP compression of its two paletted bands):
// those are found by writing a 16 x 16 product with them in memory. The
// error wraps ErrCreationOption and names the option.
func CheckCreationOptions(opts []string, classes []ClassInfo, reliabilityFloat32 bool) error {
	register()
	if len(opts) == 0 {
		return nil
	}
	if err := validateCOGOptions(opts); err != nil {
		return err
	}
	if len(classes) == 0 {
		classes = []ClassInfo{{Value: 1, Name: "class 1"}}
	}
	// The trial's tiles are small whatever BLOCKSIZE says, and its
	// compression runs on this thread, so that every failure comes back
	// from the call (worker threads would print it instead).
	trial := append(mergeWithout(opts, "BLOCKSIZE", "NUM_THREADS"), "BLOCKSIZE=128", "NUM_THREADS=1")
	try := func(bands int, dt godal.DataType, palette bool) error {
		src, err := godal.Create(godal.Memory, "", bands, dt, 16, 16, errh)
		if err != nil {
			return err
		}
		defer src.Close(errh)
		if palette {
			ct := godal.ColorTable{PaletteInterp: godal.RGBPalette, Entries: make([][4]int16, 256)}
			if err := src.Bands()[0].SetColorTable(ct, errh); err != nil {
				return err
			}
		}
		name := fmt.Sprintf("/vsimem/pnec-creation-check-%d.tif", trialCount.Add(1))
		defer godal.VSIUnlink(name)
		comp := DefaultCompression
		for _, kv := range trial {
			if k, v, _ := strings.Cut(kv, "="); strings.EqualFold(strings.TrimSpace(k), "COMPRESS") {
				comp = strings.ToUpper(strings.TrimSpace(v))
			}
		}
		all, err := mergeOptions([]string{"COMPRESS=" + comp, "OVERVIEWS=NONE"}, trial)
		if err != nil {
			return err
		}
		out, err := src.Translate(name, []string{"-of", "COG"}, godal.CreationOption(all...), errh)
		if err != nil {
			return err
		}
		return out.Close(errh)
	}
	refused := func(err error, what string) error {
		msg := tidy(err).Error()
		if i := strings.Index(msg, ".tif: "); strings.HasPrefix(msg, "/vsimem/pnec-creation-check-") && i > 0 {
			msg = msg[i+len(".tif: "):]
		}
		return &CreationOptionError{strings.Join(opts, " "), "GDAL cannot write " + what + " with it: " + msg}
	}
	if err := try(2, classDataType(classes), true); err != nil {
		return refused(err, "the product (two bands, the first paletted)")
	}
	if reliabilityFloat32 {
		if err := try(1, godal.Float32, false); err != nil {
			return refused(err, "the Float32 reliability file")
		}
	}
	return nil
}

// mergeWithout is opts without the entries of the given keys.
func mergeWithout(opts []string, keys ...string) []string {
	var out []string
next:
	for _, kv := range opts {
		k, _, _ := strings.Cut(kv, "=")
		for _, drop := range keys {
			if strings.EqualFold(strings.TrimSpace(k), drop) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// cogThreads is the number of threads the COG driver compresses blocks
// with: NUM_THREADS among opts, else GDAL_NUM_THREADS (DecodeThreads).
func cogThreads(opts []string) int {
	for _, kv := range opts {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "NUM_THREADS") {
			continue
		}
		v = strings.TrimSpace(v)
		if strings.EqualFold(v, "ALL_CPUS") {
			return runtime.NumCPU()
		}
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
		return 1
	}
	return DecodeThreads()
}

// cogBlockBytes is what writing the COG of a cols x rows product with block
// px tiles of bytesPerPixel holds in C memory: a tile being filled plus,
// per compression job in flight (one per thread, at most one per tile),
// the uncompressed tile, the compressed one and the predictor's copy.
// Measured with gdal_translate -of COG of an 8192 x 8192 2-band Byte
// raster: 4.2 tiles more than the default tiles' peak with one thread,
// 9 with two (BLOCKSIZE 2048 and 4096), and pnec classify's peak RSS grew by
// 2.9 tiles for one-tile products of BLOCKSIZE 8192 and 16384.
func cogBlockBytes(cols, rows, block, bytesPerPixel, threads int) int64 {
	tiles := int64((cols+block-1)/block) * int64((rows+block-1)/block)
	jobs := min(int64(max(threads, 1)), tiles)
	tile := int64(block) * int64(block) * int64(bytesPerPixel)
	return tile * (4 + 5*(jobs-1))
}

// ProductWriteBytes is the memory writing a product of spec needs beyond
// what it needs with the default tiles (ProductBlockSize, which the
// calibrated memory model of the processor includes): a large BLOCKSIZE
// creation option makes GDAL hold several whole tiles while compressing
// them (--co BLOCKSIZE=100000 meant 20 GB a tile). 0 when BLOCKSIZE is not
// above the default.
func ProductWriteBytes(spec ProductSpec) (int64, error) {
	if err := validateSyntax(spec.CreationOptions); err != nil {
		return 0, err
	}
	block, _ := blockSize(spec.CreationOptions)
	if block <= ProductBlockSize || spec.Cols <= 0 || spec.Rows <= 0 {
		return 0, nil
	}
	perPixel := 2 // two bands of Byte
	if classDataType(spec.Classes) == godal.UInt16 {
		perPixel = 4
	}
	if spec.ReliabilityFloat32 {
		perPixel = max(perPixel, 4) // the Float32 file is written after the product
	}
	threads := cogThreads(spec.CreationOptions)
	return max(0, cogBlockBytes(spec.Cols, spec.Rows, block, perPixel, threads)-
		cogBlockBytes(spec.Cols, spec.Rows, ProductBlockSize, perPixel, threads)), nil
}

// stageBlock is the tile side of the product's staging GeoTIFFs; GTiff
// gives their internal overviews the same tiles.
const stageBlock = 512

// tiledBytes is a cols x rows band of sampleBytes samples stored in whole
// block x block tiles, as an uncompressed tiled GeoTIFF stores it.
func tiledBytes(cols, rows, block, sampleBytes int) int64 {
	return int64((cols+block-1)/block) * int64((rows+block-1)/block) * int64(block) * int64(block) * int64(sampleBytes)
}

// ProductDiskBytes is a lower bound of the disk space writing a product of
// spec takes at its peak, when everything is written and nothing published:
// the uncompressed staging GeoTIFF of the two bands in whole 512 x 512
// tiles (a 10 x 10 product stages a whole tile), its internal overviews and
// colour map, with ReliabilityFloat32 the Float32 reliability's stage and
// overviews, with Probabilities its bands' stage and overviews, and a few
// kB of headers, sidecar and QGIS style. The
// compressed COG is left out: its size is known only once compressed, and
// it is a fraction of the rest. Measured against the files on disk at the
// peak: 0.78 to 1.0 of them (TestProductDiskBytes), where the product's
// pixels alone, the estimate before, were 1/200 of them for a 40 x 32 product.
func ProductDiskBytes(spec ProductSpec) (int64, error) {
	if err := validateSyntax(spec.CreationOptions); err != nil {
		return 0, err
	}
	if spec.Cols <= 0 || spec.Rows <= 0 {
		return 0, nil
	}
	block, _ := blockSize(spec.CreationOptions)
	sb, colourMap := 1, int64(3*256*2)
	if classDataType(spec.Classes) == godal.UInt16 {
		sb, colourMap = 2, 3*65536*2
	}
	levels := overviewLevels(spec.Cols, spec.Rows, block)
	stage := func(bands, sampleBytes int) int64 {
		n := int64(bands) * tiledBytes(spec.Cols, spec.Rows, stageBlock, sampleBytes)
		for _, f := range levels {
			n += int64(bands) * tiledBytes((spec.Cols+f-1)/f, (spec.Rows+f-1)/f, stageBlock, sampleBytes)
		}
		return n
	}
	const headers = 8 << 10 // TIFF headers, the sidecar and the QGIS style, at least
	n := stage(2, sb) + colourMap + headers
	if spec.ReliabilityFloat32 {
		n += stage(1, 4)
	}
	if spec.Probabilities != nil {
		// The probabilities companion stages its bands like the product's.
		n += stage(ProbabilityBandCount(len(spec.Classes), spec.Probabilities.TopK), sb)
	}
	return n, nil
}
