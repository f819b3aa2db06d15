package geo_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pnec/pnec/geo"
)

// writeExampleScene writes a 4 x 3 pixel, 2-band Int16 GeoTIFF in UTM zone
// 31N with nodata 0 (one pixel of it), in dir.
func writeExampleScene(dir string) (string, error) {
	path := filepath.Join(dir, "scene.tif")
	nodata := 0.0
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{
		Cols: 4, Rows: 3, Bands: 2, DataType: geo.Int16,
		GeoRef:    geo.GeoRef{GeoTransform: [6]float64{500000, 10, 0, 4600000, 0, -10}, EPSG: 32631},
		NoData:    &nodata,
		BandNames: []string{"red", "nir"},
	})
	if err != nil {
		return "", err
	}
	defer w.Close()
	px := make([]float32, 4*3*2) // pixel-interleaved
	for i := range px {
		px[i] = float32(100 + i)
	}
	px[0], px[1] = 0, 0 // the top-left pixel is nodata
	if err := w.WriteWindow(geo.Window{Cols: 4, Rows: 3}, px); err != nil {
		return "", err
	}
	return path, w.Commit()
}

// Open a scene (any dataset GDAL reads) and read what the classifier sees
// of it, then a window of its pixels.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "geo-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path, err := writeExampleScene(dir)
	if err != nil {
		log.Fatal(err)
	}

	s, err := geo.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	info := s.Info()
	fmt.Printf("%d cols x %d rows, %d bands of %s, EPSG:%d, bands %q\n",
		info.Cols, info.Rows, info.Bands, info.DataType, info.EPSG, info.BandNames)
	blk, err := s.ReadWindow(context.Background(), geo.Window{Col: 0, Row: 0, Cols: 2, Rows: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("row 0, cols 0-1:", blk.Data, "valid:", blk.Valid)
	// Output:
	// 4 cols x 3 rows, 2 bands of Int16, EPSG:32631, bands ["red" "nir"]
	// row 0, cols 0-1: [0 0 102 103] valid: [false true]
}

// A Report is what pnec info prints: the scene's size, types, nodata, CRS,
// geotransform, WGS84 footprint and valid share.
func ExampleReport_WriteText() {
	dir, err := os.MkdirTemp("", "geo-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path, err := writeExampleScene(dir)
	if err != nil {
		log.Fatal(err)
	}
	s, err := geo.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	rep := geo.NewReport(s.Info())
	f, exact, err := s.ValidFractionEstimate(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	rep.ValidFraction, rep.ValidEstimated = &f, !exact
	rep.Name = "scene.tif" // the temporary directory's name varies
	if err := rep.WriteText(os.Stdout, ""); err != nil {
		log.Fatal(err)
	}
	// Output:
	// scene:          scene.tif (GTiff)
	// size:           4 cols x 3 rows, 2 bands
	// data type:      Int16
	// nodata:         0 (all bands)
	// CRS:            EPSG:32631 (WGS 84 / UTM zone 31N)
	// geotransform:   [500000, 10, 0, 4600000, 0, -10]
	// origin:         500000, 4600000
	// pixel size:     10 x -10
	// footprint:      {"type":"Polygon","coordinates":[[[3,41.551665],[3,41.551631],[3,41.551597],[3,41.551563],[3,41.551529],[3,41.551496],[3,41.551462],[3,41.551428],[3,41.551394],[3.00006,41.551394],[3.00012,41.551394],[3.00018,41.551394],[3.00024,41.551394],[3.0003,41.551394],[3.00036,41.551394],[3.00042,41.551394],[3.00048,41.551394],[3.00048,41.551428],[3.00048,41.551462],[3.00048,41.551496],[3.00048,41.551529],[3.00048,41.551563],[3.00048,41.551597],[3.00048,41.551631],[3.00048,41.551665],[3.00042,41.551665],[3.00036,41.551665],[3.0003,41.551665],[3.00024,41.551665],[3.00018,41.551665],[3.00012,41.551665],[3.00006,41.551665],[3,41.551665]]]}
	// valid pixels:   91.67% (11 of 12)
	// wavelengths:    none (the model's band count is all pnec can check)
	// radiometry:     not stated
	// band names:     "red", "nir"
}
