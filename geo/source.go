package geo

// cubeReader reads the pixels of a scene that is not one GDAL raster
// dataset (a product read through GDAL's multidimensional API, or one
// orthorectified through its geometry lookup table): see delivery.go.
type cubeReader interface {
	// readBSQ reads window w of the 0-based bands, decimated to bufCols x
	// bufRows (nearest neighbour), band-sequential into buf
	// (len(bands)*bufCols*bufRows values). Pixels with no data are NaN or
	// the band's nodata value.
	readBSQ(w Window, bufCols, bufRows int, bands []int, buf []float32) error
	close() error
}

// qualityMaskSource marks pixels of a scene invalid: a quality mask
// delivered with a product or given by the user (Scene.AddQualityMask).
type qualityMaskSource interface {
	name() string
	// readQualityMask sets bad[r*bufCols+c] for the buffer pixels of
	// window w (decimated as readBSQ) the mask marks invalid; it never
	// clears one. bands are the scene's bands (0-based) the read reads:
	// a mask with a plane per band applies those bands' planes only.
	readQualityMask(w Window, bufCols, bufRows int, bands []int, bad []bool) error
	close() error
}
