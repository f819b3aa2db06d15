// Package geo is pnec's only door to GDAL (through github.com/airbusgeo/godal):
// it opens scenes by any GDAL dataset name, reads windows of them into plain
// float32 buffers with a validity mask, writes GeoTIFF rasters (imports,
// synthetic scenes) and writes the Cloud-Optimized GeoTIFF product.
//
// Everything it returns is a plain Go type: no godal handle leaves the package.
// Band indices in this package are 0-based; GDAL's are 1-based.
package geo
