package main

import (
	"testing"

	"github.com/pnec/pnec/geo"
)

// writeGeoTIFF writes data (pixel-interleaved, spec.Cols x spec.Rows x
// spec.Bands) as one window of a new GeoTIFF at path.
func writeGeoTIFF(t *testing.T, path string, spec geo.RasterSpec, data []float32) {
	t.Helper()
	w, err := geo.CreateGeoTIFF(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteWindow(geo.Window{Cols: spec.Cols, Rows: spec.Rows}, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}
