// Package importer converts benchmark files into GeoTIFFs that pnec's other
// commands read: MATLAB MAT-files (versions 5 and 7 through package matfile,
// v7.3 HDF5 files through GDAL's HDF5 driver) holding a hyperspectral cube
// and a label map. It picks the variables, chooses the output data types,
// transposes v7.3 arrays to MATLAB's row and column order, and writes tiled
// DEFLATE GeoTIFFs through package geo. The command line (pnec import mat)
// only parses flags and calls MAT.
package importer
