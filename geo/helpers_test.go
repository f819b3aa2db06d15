package geo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
)

// utm31 is EPSG:32631's WKT as GDAL writes it, for georeferenced test files.
func utm31(t testing.TB) string {
	t.Helper()
	sr, err := godal.NewSpatialRefFromEPSG(32631)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	wkt, err := sr.WKT()
	if err != nil {
		t.Fatal(err)
	}
	return wkt
}

// testGT is a north-up 10 m grid in UTM 31N near Montpellier.
var testGT = [6]float64{570000, 10, 0, 4830000, 0, -10}

// pixelValue is the known value of band b at (r, c) in generated scenes.
func pixelValue(r, c, b int) float64 { return float64(r*100 + c*3 + b) }

// writeScene writes a cols x rows x bands GTiff of dtype with pixelValue
// through godal directly (not through the code under test) and returns its path.
func writeScene(t testing.TB, dir string, dtype godal.DataType, cols, rows, bands int, prep func(ds *godal.Dataset)) string {
	t.Helper()
	path := filepath.Join(dir, "scene-"+strings.ToLower(dtype.String())+".tif")
	ds, err := godal.Create(godal.GTiff, path, bands, dtype, cols, rows, godal.CreationOption("TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]float64, cols*rows*bands)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			for b := 0; b < bands; b++ {
				buf[(r*cols+c)*bands+b] = pixelValue(r, c, b)
			}
		}
	}
	if err := ds.Write(0, 0, buf, cols, rows); err != nil {
		t.Fatal(err)
	}
	if err := ds.SetGeoTransform(testGT); err != nil {
		t.Fatal(err)
	}
	if err := ds.SetProjection(utm31(t)); err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(ds)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// listDir returns the names in dir (for checks that no temporary file is left).
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
