// Package matfile reads MATLAB level 5 MAT-files (the "MATLAB 5.0 MAT-file"
// format written by save -v6 and save -v7) into plain Go values.
//
// It is purpose-built for the hyperspectral benchmark files: numeric arrays of
// any class, stored on disk in any (often smaller) numeric type, compressed
// (miCOMPRESSED, zlib) or not, in either byte order. Data is decoded straight
// into []float32 in MATLAB's column-major order, with no per-element
// allocation. Structs and cells are listed with their class but not decoded;
// complex and sparse arrays are reported with a clear error.
//
// Every size field read from a file is checked against the bytes that remain
// (and, for compressed elements, against the size the array's dimensions
// imply) before anything is allocated, so a truncated or corrupted file gives
// an error, never a panic or a huge allocation.
//
// MAT-files saved with -v7.3 are HDF5 files; this package recognises them and
// returns ErrV73 (GDAL's HDF5 driver reads them as HDF5:"file.mat"://var).
package matfile
