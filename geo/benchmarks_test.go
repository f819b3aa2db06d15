package geo

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
)

// BenchmarkReadWindow reads a 256x256 window of all 64 bands of a tiled,
// DEFLATE Int16 GeoTIFF (as CreateGeoTIFF writes scenes) through geo
// (open, read into float32 + validity mask, close) and through GDAL's
// gdal_translate (library form: open, -srcwin to an in-memory MEM
// dataset, close), and reports both throughputs and their ratio.
func BenchmarkReadWindow(b *testing.B) {
	const cols, rows, bands = 768, 768, 64
	dir := b.TempDir()
	path := filepath.Join(dir, "scene.tif")
	w, err := CreateGeoTIFF(path, RasterSpec{Cols: cols, Rows: rows, Bands: bands, DataType: Int16, GeoRef: GeoRef{GeoTransform: testGT, WKT: utm31(b)}})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]float32, cols*rows*bands)
	for i := range data {
		data[i] = float32((i*7919)%4000 - 100)
	}
	if err := w.WriteWindow(Window{Cols: cols, Rows: rows}, data); err != nil {
		b.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	data = nil
	win := Window{Col: 300, Row: 200, Cols: 256, Rows: 256}
	winBytes := float64(win.Cols * win.Rows * bands * 2) // Int16 samples read

	var geoTime, gdalTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.ReadWindow(context.Background(), win); err != nil {
			b.Fatal(err)
		}
		s.Close()
		t1 := time.Now()
		ds, err := godal.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		out, err := ds.Translate("", []string{"-of", "MEM", "-srcwin", "300", "200", "256", "256"})
		if err != nil {
			b.Fatal(err)
		}
		out.Close()
		ds.Close()
		geoTime += t1.Sub(t0)
		gdalTime += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(winBytes/(geoTime.Seconds()/n)/1e6, "geo_MB/s")
	b.ReportMetric(winBytes/(gdalTime.Seconds()/n)/1e6, "gdal_translate_MB/s")
	b.ReportMetric(geoTime.Seconds()/gdalTime.Seconds(), "geo/gdal_translate_time")
}

// BenchmarkProductWrite writes a 2048x2048 product (Byte class + reliability)
// through CreateProduct/WriteRows/Commit and, from the same two bands already
// in a tiled GTiff, through gdal_translate -of COG with the same compression
// and MODE overviews (library form), and reports both times and their ratio
// (target: geo within 1.3x).
func BenchmarkProductWrite(b *testing.B) {
	const cols, rows = 2048, 2048
	dir := b.TempDir()
	classes := testClasses(6)
	cl := make([]uint16, cols*rows)
	rl := make([]float32, cols*rows)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			cl[r*cols+c], rl[r*cols+c] = productPixel(classes, r, c)
		}
	}
	spec := ProductSpec{Cols: cols, Rows: rows, GeoRef: GeoRef{GeoTransform: testGT, WKT: utm31(b)}, Classes: classes}
	// The baseline's input: the same two bands, as a tiled GTiff with the
	// same colour table, written by CreateProduct's stage.
	src := filepath.Join(dir, "src.tif")
	{
		p, err := CreateProduct(src, spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.WriteRows(0, cl, rl); err != nil {
			b.Fatal(err)
		}
		if err := p.ds.Close(); err != nil {
			b.Fatal(err)
		}
		p.ds = nil
		if err := vsiRename(p.stage, src); err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
	comp := DefaultCompression
	var geoTime, gdalTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		p, err := CreateProduct(filepath.Join(dir, "product.tif"), spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.WriteRows(0, cl, rl); err != nil {
			b.Fatal(err)
		}
		if err := p.Commit(context.Background()); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		ds, err := godal.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		out, err := ds.Translate(filepath.Join(dir, "translate.tif"), []string{"-of", "COG"},
			godal.CreationOption("COMPRESS="+comp, "OVERVIEW_COMPRESS="+comp, "PREDICTOR=YES", "BLOCKSIZE=512", "OVERVIEW_RESAMPLING=MODE"))
		if err != nil {
			b.Fatal(err)
		}
		out.Close()
		ds.Close()
		geoTime += t1.Sub(t0)
		gdalTime += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(geoTime.Seconds()/n*1000, "geo_ms")
	b.ReportMetric(gdalTime.Seconds()/n*1000, "gdal_translate_ms")
	b.ReportMetric(geoTime.Seconds()/gdalTime.Seconds(), "geo/gdal_translate_time")
}
