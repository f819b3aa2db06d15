package geo

// NOTE: contract file written first so that other packages can compile
// against it; the geo implementation replaces the stub bodies.

import (
	"context"
	"errors"

	"github.com/paulmach/orb"
)

var errStub = errors.New("geo: not implemented yet")

// Window is a rectangle of pixels: Col, Row is its top-left corner (0-based),
// Cols x Rows its size.
type Window struct{ Col, Row, Cols, Rows int }

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
	Name          string
	Driver        string
	Cols, Rows    int
	Bands         int
	DataType      string    // GDAL name of the bands' data type (e.g. "Int16")
	NoData        []float64 // per band; meaningful where HasNoData is true
	HasNoData     []bool
	GeoRef
	WavelengthsNM []float64 // per band; nil when the scene does not say
	BandNames     []string  // per band descriptions ("" when none)
	// FootprintWGS84 is the scene outline in lon/lat (EPSG:4326, x=lon), nil without a CRS.
	FootprintWGS84 orb.Polygon
	Metadata       map[string]string // default-domain dataset metadata
}

// Block is a window of a scene read into memory.
type Block struct {
	Window
	Bands int
	// Data is pixel-interleaved: Data[(r*Cols+c)*Bands+b], scale/offset applied.
	Data []float32
	// Valid[r*Cols+c] is false where any band is nodata, NaN or Inf, or the dataset mask says invalid.
	Valid []bool
}

// Scene is an open raster scene. One Scene must not be used from several goroutines at once.
type Scene struct{}

// Open opens a scene by GDAL dataset name (a path, VRT, /vsi path, subdataset name).
func Open(name string) (*Scene, error) { return nil, errStub }

// Info returns the scene's description.
func (s *Scene) Info() Info { return Info{} }

// ReadWindow reads all bands of w.
func (s *Scene) ReadWindow(ctx context.Context, w Window) (Block, error) { return Block{}, errStub }

// ValidFraction returns the share of valid pixels of the whole scene, read window by window.
func (s *Scene) ValidFraction(ctx context.Context) (float64, error) { return 0, errStub }

// Close releases the dataset.
func (s *Scene) Close() error { return errStub }

// DataType is a raster sample type for writers.
type DataType int

const (
	Byte DataType = iota
	UInt16
	Int16
	Float32
)

// RasterSpec describes a GeoTIFF to create.
type RasterSpec struct {
	Cols, Rows, Bands int
	DataType          DataType
	GeoRef
	NoData          *float64
	BandNames       []string
	WavelengthsNM   []float64
	Metadata        map[string]string
	CreationOptions []string // KEY=VALUE, GDAL GTiff creation options
}

// RasterWriter writes a GeoTIFF to a temporary file beside the target; Commit renames it into place.
type RasterWriter struct{}

// CreateGeoTIFF starts a GeoTIFF at path.
func CreateGeoTIFF(path string, spec RasterSpec) (*RasterWriter, error) { return nil, errStub }

// WriteWindow writes pixel-interleaved data ([Rows][Cols][Bands]) into win.
func (w *RasterWriter) WriteWindow(win Window, data []float32) error { return errStub }

// Commit flushes the file and renames it to its final path.
func (w *RasterWriter) Commit() error { return errStub }

// Close removes the temporary file unless Commit succeeded.
func (w *RasterWriter) Close() error { return errStub }

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
}

// ProductWriter streams rows of a product to a temporary raster and finishes it as a COG.
type ProductWriter struct{}

// CreateProduct starts a product at path.
func CreateProduct(path string, spec ProductSpec) (*ProductWriter, error) { return nil, errStub }

// WriteRows writes whole rows from row0: class values (0 = no data) and reliability in 0..1 (NaN = no data).
func (p *ProductWriter) WriteRows(row0 int, class []uint16, reliability []float32) error {
	return errStub
}

// Commit builds overviews, writes the COG beside the target and renames it into place.
func (p *ProductWriter) Commit(ctx context.Context) error { return errStub }

// Close removes temporary files unless Commit succeeded.
func (p *ProductWriter) Close() error { return errStub }

// SetConfig applies GDAL configuration options given as KEY=VALUE.
func SetConfig(kv []string) error { return errStub }
