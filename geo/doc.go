// Package geo is pnec's only door to GDAL (through github.com/airbusgeo/godal):
// it opens scenes by any GDAL dataset name, reads windows of them into plain
// float32 buffers with a validity mask, writes GeoTIFF rasters (imports,
// synthetic scenes) and writes the Cloud-Optimized GeoTIFF product.
//
// Everything it returns is a plain Go type: no godal handle leaves the package.
// Band indices in this package are 0-based; GDAL's are 1-based (error
// messages name bands the GDAL way, "band 3").
//
// Reading (scene.go): Open, Scene.Info, Scene.ReadWindow, Scene.ValidFraction
// and Scene.ValidFractionEstimate (exact up to 4 Mpixels, a decimated
// sample beyond). GDAL failures come back as errors wrapping *GDALError,
// folded into one line where GDAL gave several; GDAL warnings are dropped. Wavelengths are gathered from GDAL 3.10 IMAGERY band metadata,
// ENVI-style band metadata and the ENVI header (wavelength.go). NewReport
// turns a scene's Info into the description pnec info prints (report.go:
// text, or JSON with the footprint as a GeoJSON geometry).
//
// Writing (raster.go, product.go): every file is written to a hidden
// temporary file beside its target and renamed into place by Commit; Close
// removes what an uncommitted writer left. The product is a two-band COG
// (class, reliability) with MODE/AVERAGE overviews and an .aux.xml sidecar
// for what GeoTIFF cannot hold (the class band's own nodata, category names,
// the PNEC metadata domain); see CreateProduct.
package geo
