package geo

// This file holds the types other packages compile against; the code lives
// in scene.go (reading), raster.go (GeoTIFF writer), product.go (COG
// product writer) and config.go.

import (
	"math"

	"github.com/paulmach/orb"

	"github.com/pnec/pnec/grid"
	"github.com/pnec/pnec/spectral"
)

// Window is a rectangle of pixels: Col, Row is its top-left corner (0-based),
// Cols x Rows its size (the project's one rectangle type, package grid's).
type Window = grid.Rect

// GeoRef places a raster on the Earth.
type GeoRef struct {
	// GeoTransform is GDAL's affine transform: x = GT[0] + col*GT[1] + row*GT[2], y = GT[3] + col*GT[4] + row*GT[5].
	GeoTransform [6]float64
	// WKT is the CRS as WKT; empty for a local grid with no CRS.
	WKT string
	// EPSG is the CRS's EPSG code, 0 when it has none.
	EPSG int
}

// Info describes a scene as the processor sees it.
type Info struct {
	Name       string
	Driver     string
	Cols, Rows int
	Bands      int
	// DataType is the GDAL name of the bands' data type (e.g. "Int16"); a
	// comma-separated list when bands differ.
	DataType string
	// SampleBytes is the size of the largest band's sample type, bytes.
	SampleBytes int
	// BlockCols x BlockRows is band 1's natural block (GDAL's block size).
	BlockCols, BlockRows int
	NoData               []float64 // per band; meaningful where HasNoData is true
	HasNoData            []bool
	GeoRef
	// HasGeoTransform is false when the scene has no geotransform; GeoTransform
	// is then GDAL's default {0, 1, 0, 0, 0, 1} (pixel coordinates).
	HasGeoTransform bool
	// WavelengthsNM are band centre wavelengths in nanometres; nil when the
	// scene does not say, NaN for single bands it does not say for.
	WavelengthsNM []float64
	// FWHMNM are the bands' full widths at half maximum in nanometres, as
	// WavelengthsNM (nil when the scene does not say).
	FWHMNM []float64
	// BadBands marks bands the scene declares unusable (ENVI bbl 0, a
	// product's bad-band flags); nil when it declares none.
	BadBands []bool
	// BadBandSource says what made the bad bands bad when it is not the
	// scene's own list: a product's metadata (its band statistics), or the data
	// ("the data: bands holding only no-data ..."); "" otherwise.
	BadBandSource string
	// WavelengthUnits are the units the scene states its wavelengths in
	// ("" when it states none); WavelengthsNM are converted to nm.
	WavelengthUnits string
	// SpectralSource says where the band centres came from: "ENVI
	// header", "band metadata", "IMAGERY metadata", or a product's own
	// metadata (a sensor's reader names it); "" when none.
	SpectralSource string
	// Radiometry is what the values measure once Scale and Offset are
	// applied (zero when the scene does not say).
	Radiometry spectral.Radiometry
	// Product names the provider's product the scene was read as (a
	// sensor's reader in package sensors names it); "" for a plain raster.
	Product string
	// Scale and Offset are applied to each band's samples when reading
	// (GDAL's band scale/offset, or the product's gains); 1 and 0 where none.
	Scale, Offset []float64
	BandNames     []string // per band descriptions ("" when none)
	// FootprintWGS84 is the scene outline in lon/lat (EPSG:4326, x=lon), nil without a CRS.
	FootprintWGS84 orb.Polygon
	// Metadata is the default-domain dataset metadata, plus an ENVI header's
	// "acquisition time" as MetaENVIAcquisitionTime.
	Metadata map[string]string
	// VRTSources is the number of source elements in a VRT's bands (all
	// bands, top level: not those of VRTs it names), 0 for other drivers.
	// GDAL keeps an object per source while the dataset is open, which the
	// memory plan counts (a mosaic of 552 sources in each of 200 bands held
	// about 380 MB before a pixel was read).
	VRTSources int
	// Chunks are the chunks of a multidimensional (NetCDF, HDF5) scene's
	// arrays, the largest of them; the zero value for other drivers and
	// arrays stored contiguously. Reading any value of a chunk decodes it
	// whole, so the memory plan counts the chunks a tile row's reads span
	// (BlockCols x BlockRows, GDAL's block, is not the chunk there).
	Chunks Chunking
}

// Chunking is the chunk of a multidimensional scene's array: its extent
// along the scene's columns, rows and bands (values), and its decoded size.
type Chunking struct {
	Cols, Rows, Bands int
	Bytes             int64
}

// BandSet is the scene's spectral identity as package spectral compares it.
func (in Info) BandSet() spectral.BandSet {
	b := spectral.BandSet{Bands: in.Bands, CentresNM: in.WavelengthsNM, FWHMNM: in.FWHMNM, Bad: in.BadBands}
	if b.FWHMNM != nil {
		known := false
		for _, f := range b.FWHMNM {
			known = known || (f > 0 && !math.IsNaN(f))
		}
		if !known {
			b.FWHMNM = nil
		}
	}
	return b
}

// MetaENVIAcquisitionTime is the Info.Metadata key of an ENVI header's
// "acquisition time" (GDAL's ENVI metadata domain).
const MetaENVIAcquisitionTime = "ENVI_ACQUISITION_TIME"

// Block is a window of a scene read into memory.
type Block struct {
	Window
	Bands int
	// Data is pixel-interleaved: Data[(r*Cols+c)*Bands+b], scale/offset applied;
	// all bands of an invalid pixel are 0.
	Data []float32
	// Valid[r*Cols+c] is false where any band is nodata, NaN or Inf, or the dataset mask says invalid.
	Valid []bool
}

// DataType is a raster sample type for writers.
type DataType int

// Sample types a RasterWriter can create (GDAL's types of the same names).
const (
	Byte    DataType = iota // unsigned 8-bit
	UInt16                  // unsigned 16-bit
	Int16                   // signed 16-bit
	Float32                 // IEEE 754 32-bit
)

// RasterSpec describes a GeoTIFF to create.
type RasterSpec struct {
	Cols, Rows, Bands int
	DataType          DataType
	// GeoRef: a zero GeoTransform (all six zero) writes none; an empty WKT writes no CRS (local grid).
	GeoRef
	NoData          *float64 // same nodata for every band; nil for none
	BandNames       []string // band descriptions; nil or one per band
	WavelengthsNM   []float64
	FWHMNM          []float64         // band widths, nm; nil or one per band (written beside the wavelengths)
	Metadata        map[string]string // default-domain dataset metadata
	CreationOptions []string          // KEY=VALUE, GDAL GTiff creation options overriding the defaults
}

// ClassInfo is one class of a product's class band.
type ClassInfo struct {
	Value int // value stored in the class band (1..; 0 is no data)
	Name  string
	Color [3]uint8
}

// ProductSpec describes a classification product.
type ProductSpec struct {
	Cols, Rows int
	GeoRef
	Classes            []ClassInfo
	ReliabilityFloat32 bool              // Float32 0..1 NaN-nodata instead of Byte percent (nodata 255)
	CreationOptions    []string          // COG creation options overriding the defaults
	Metadata           map[string]string // written to the PNEC metadata domain
	// Probabilities, when set, adds the class probabilities companion
	// (ProbabilitiesPath), written with WriteProbabilities.
	Probabilities *ProbabilitySpec
	// NoThumbnail leaves out the thumbnail (ThumbnailPath: a PNG of the
	// class band in its colour table, no-data transparent, at most
	// ThumbnailMaxSide pixels a side, read from an overview), which is
	// otherwise published with the product, before it; a stale one of an
	// earlier product is removed.
	NoThumbnail bool
}
