package geo

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/airbusgeo/godal"

	"github.com/pnec/pnec/internal/oneline"
)

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrWindow is returned for a window that is empty or not inside the raster.
	ErrWindow = errors.New("window outside the raster")
	// ErrDataType is returned when a scene band has a type the processor cannot read (complex).
	ErrDataType = errors.New("unsupported data type")
	// ErrNoBands is returned for a dataset without raster bands (e.g. an HDF5 container:
	// open one of its subdatasets instead).
	ErrNoBands = errors.New("dataset has no raster bands")
	// ErrClosed is returned by operations on a closed scene or writer.
	ErrClosed = errors.New("already closed")
	// ErrSize is returned when a buffer's length does not match the window or rows it is for.
	ErrSize = errors.New("buffer size mismatch")
	// ErrNotRegular is returned for a local dataset name that is a FIFO, a
	// device or a socket: GDAL would block on it forever (a FIFO nobody
	// writes) or read without end.
	ErrNotRegular = errors.New("not a regular file")
	// ErrGeoTransform is returned for a scene whose geotransform places no
	// grid: a value that is NaN or infinite, or pixels of no size.
	ErrGeoTransform = errors.New("unusable geotransform")
)

// checkGeoTransform refuses a geotransform that is not a grid: any value
// NaN or infinite, or a pixel of zero area (gt[1]*gt[5] - gt[2]*gt[4] = 0,
// which no pixel position can be recovered from). Products of such a scene
// carried Origin = (nan, ...) or zero pixel sizes, and their STAC Items
// could not be written (JSON has no NaN).
func checkGeoTransform(gt [6]float64) error {
	for _, v := range gt {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w (%s): a value is not finite", ErrGeoTransform, gtString(gt))
		}
	}
	if det := gt[1]*gt[5] - gt[2]*gt[4]; det == 0 || math.IsInf(det, 0) {
		return fmt.Errorf("%w (%s): pixels of zero size", ErrGeoTransform, gtString(gt))
	}
	return nil
}

func gtString(gt [6]float64) string {
	return fmt.Sprintf("%g, %g, %g, %g, %g, %g", gt[0], gt[1], gt[2], gt[3], gt[4], gt[5])
}

// DataTypeError reports a scene band whose data type the processor cannot
// read (complex types). errors.Is(err, ErrDataType) holds for it.
type DataTypeError struct {
	Name     string // dataset name
	Band     int    // 1-based, as GDAL counts
	DataType string // GDAL's name of the type, e.g. "CFloat32"
}

func (e *DataTypeError) Error() string {
	return fmt.Sprintf("%s: band %d has data type %s; expected a real type", e.Name, e.Band, e.DataType)
}

// Is makes errors.Is(err, ErrDataType) true.
func (e *DataTypeError) Is(target error) bool { return target == ErrDataType }

// GDALError is a failure reported by the GDAL library (CE_Failure or CE_Fatal).
type GDALError struct {
	Code int    // CPLErrorNum
	Msg  string // GDAL's message
}

func (e *GDALError) Error() string { return e.Msg }

// errh captures GDAL's messages during one call: failures become a
// *GDALError, warnings are dropped (GDAL emits many harmless ones, e.g.
// about unknown TIFF tags) so they do not fail a read. It is godal's
// SkipWarnings with a typed error: callers tell a GDAL failure from pnec's
// own with errors.As and keep GDAL's error number, which SkipWarnings'
// errors.New(message) loses. Where only whether a call failed matters,
// geo uses SkipWarnings itself (hasSRS).
var errh = godal.ErrLogger(func(ec godal.ErrorCategory, code int, msg string) error {
	if ec >= godal.CE_Failure {
		return &GDALError{Code: code, Msg: msg}
	}
	return nil
})

// tidy makes a GDAL failure read as one line: GDAL often reports one
// failure as several messages (libtiff repeats "No space left on device"
// for every strip it tries), which godal joins with newlines. The message
// keeps each distinct line once, in order, joined by "; "; errors.Is and
// errors.As still see the original.
func tidy(err error) error {
	if err == nil || !strings.ContainsAny(err.Error(), "\r\n") {
		return err
	}
	return tidyError{err}
}

type tidyError struct{ err error }

func (e tidyError) Unwrap() error { return e.err }

func (e tidyError) Error() string { return oneline.Fold(e.err.Error()) }

// ErrBandMetadata is returned (wrapped) for a scene whose band metadata
// is invalid: a band centre or width that is not a positive number (NaN,
// Inf, negative, an unclosed ENVI list), a gain of 0, a reflectance scale
// factor that is not positive. The message names the band and where the
// value came from; pnec refuses such a scene rather than guess.
var ErrBandMetadata = errors.New("invalid band metadata")
