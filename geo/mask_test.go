package geo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
)

// The mask tests place a 400 m square (pixels 20..59 of both axes of a
// 100 x 80 px scene on testGT) given in several CRSs and formats.
const maskCols, maskRows = 100, 80

func maskScene(t *testing.T) Info {
	return Info{Name: "scene.tif", Cols: maskCols, Rows: maskRows, GeoRef: GeoRef{GeoTransform: testGT, WKT: utm31(t)}, HasGeoTransform: true}
}

// squareIn is the square's corners in the CRS of EPSG code epsg (x, y in
// GIS order), transformed by GDAL from UTM 31N.
func squareIn(t *testing.T, epsg int) [][2]float64 {
	t.Helper()
	x0, y0 := testGT[0]+20*testGT[1], testGT[3]+20*testGT[5]
	x1, y1 := testGT[0]+60*testGT[1], testGT[3]+60*testGT[5]
	xs := []float64{x0, x1, x1, x0, x0}
	ys := []float64{y0, y0, y1, y1, y0}
	if epsg != 32631 {
		src, err := godal.NewSpatialRefFromEPSG(32631)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		dst, err := godal.NewSpatialRefFromEPSG(epsg)
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		tr, err := godal.NewTransform(src, dst)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if err := tr.TransformEx(xs, ys, make([]float64, len(xs)), nil); err != nil {
			t.Fatal(err)
		}
	}
	out := make([][2]float64, len(xs))
	for i := range xs {
		out[i] = [2]float64{xs[i], ys[i]}
	}
	return out
}

// writeGeoJSON writes the square as a GeoJSON polygon (WGS84 lon/lat).
func writeGeoJSON(t *testing.T, path string, ring [][2]float64) string {
	t.Helper()
	var pts []string
	for _, p := range ring {
		pts = append(pts, fmt.Sprintf("[%.10f,%.10f]", p[0], p[1]))
	}
	doc := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"aoi"},"geometry":{"type":"Polygon","coordinates":[[` + strings.Join(pts, ",") + `]]}}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// translateVector copies the vector file src to dst (driver by name),
// reprojected to EPSG epsg (0: as it is), with ogr2ogr's library call.
func translateVector(t *testing.T, src, dst, driver string, epsg int) string {
	t.Helper()
	ds, err := godal.Open(src, godal.VectorOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	sw := []string{"-f", driver}
	if epsg != 0 {
		sw = append(sw, "-t_srs", fmt.Sprintf("EPSG:%d", epsg))
	}
	out, err := ds.VectorTranslate(dst, sw)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// writeMaskRaster writes a one-band Byte raster: 1 inside the square,
// 0 outside, on a grid of cell size px in the CRS of epsg (0: no CRS and
// no geotransform, the scene's size, the square in pixels).
func writeMaskRaster(t *testing.T, path string, epsg int, cols, rows int) string {
	t.Helper()
	ds, err := godal.Create(godal.GTiff, path, 1, godal.Byte, cols, rows)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]uint8, cols*rows)
	if epsg == 0 {
		for r := 20; r < min(60, rows); r++ {
			for c := 20; c < min(60, cols); c++ {
				buf[r*cols+c] = 7 // any non-zero value is inside
			}
		}
	} else {
		sq := squareIn(t, epsg)
		minX, maxX, minY, maxY := sq[0][0], sq[0][0], sq[0][1], sq[0][1]
		for _, p := range sq {
			minX, maxX, minY, maxY = min(minX, p[0]), max(maxX, p[0]), min(minY, p[1]), max(maxY, p[1])
		}
		// The grid spans twice the square; the square is its middle half.
		w, h := maxX-minX, maxY-minY
		gt := [6]float64{minX - w/2, 2 * w / float64(cols), 0, maxY + h/2, 0, -2 * h / float64(rows)}
		if err := ds.SetGeoTransform(gt); err != nil {
			t.Fatal(err)
		}
		sr, _ := godal.NewSpatialRefFromEPSG(epsg)
		if err := ds.SetSpatialRef(sr); err != nil {
			t.Fatal(err)
		}
		sr.Close()
		for r := rows / 4; r < 3*rows/4; r++ {
			for c := cols / 4; c < 3*cols/4; c++ {
				buf[r*cols+c] = 1
			}
		}
	}
	if err := ds.Bands()[0].Write(0, 0, buf, cols, rows); err != nil {
		t.Fatal(err)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeValueRaster writes a one-band raster of the scene's size filled by
// value(r, c) with no-data nd (nil: none), in UTM 31N on testGT when geo,
// else without CRS or geotransform.
func writeValueRaster(t *testing.T, path string, dt godal.DataType, nd *float64, geo bool, value func(r, c int) float64) string {
	t.Helper()
	ds, err := godal.Create(godal.GTiff, path, 1, dt, maskCols, maskRows)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]float64, maskCols*maskRows)
	for r := 0; r < maskRows; r++ {
		for c := 0; c < maskCols; c++ {
			buf[r*maskCols+c] = value(r, c)
		}
	}
	if err := ds.Bands()[0].Write(0, 0, buf, maskCols, maskRows); err != nil {
		t.Fatal(err)
	}
	if nd != nil {
		if err := ds.Bands()[0].SetNoData(*nd); err != nil {
			t.Fatal(err)
		}
	}
	if geo {
		if err := ds.SetGeoTransform(testGT); err != nil {
			t.Fatal(err)
		}
		if err := ds.SetProjection(utm31(t)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func ptr(v float64) *float64 { return &v }

// inSquare is whether pixel (r, c) is in the test square.
func inSquare(r, c int) bool { return r >= 20 && r < 60 && c >= 20 && c < 60 }

// writeWKTLayers writes a GeoPackage in UTM 31N with one layer per WKT
// geometry (layer i holds geometry i).
func writeWKTLayers(t *testing.T, path, driver string, wkts ...string) string {
	t.Helper()
	ds, err := godal.CreateVector(godal.DriverName(driver), path)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := godal.NewSpatialRefFromEPSG(32631)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	for i, w := range wkts {
		g, err := godal.NewGeometryFromWKT(w, sr)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ds.CreateLayer(fmt.Sprintf("part%d", i), sr, g.Type())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.NewFeature(g); err != nil {
			t.Fatal(err)
		}
		g.Close()
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// squareWKT is the part of the test square between pixel columns c0 and
// c1 as a UTM 31N polygon.
func squareWKT(c0, c1 int) string {
	x0, x1 := testGT[0]+float64(c0)*testGT[1], testGT[0]+float64(c1)*testGT[1]
	y0, y1 := testGT[3]+20*testGT[5], testGT[3]+60*testGT[5]
	return fmt.Sprintf("POLYGON ((%f %f, %f %f, %f %f, %f %f, %f %f))", x0, y0, x1, y0, x1, y1, x0, y1, x0, y0)
}

// TestMaskFormats: the square given as GeoJSON (WGS84), GeoPackage (Web
// Mercator), Shapefile (UTM 31N), a raster in WGS84 and a raster without
// CRS of the scene's size lands on the same pixels of the scene.
func TestMaskFormats(t *testing.T) {
	dir := t.TempDir()
	scene := maskScene(t)
	gj := writeGeoJSON(t, filepath.Join(dir, "aoi.geojson"), squareIn(t, 4326))
	for _, tc := range []struct {
		name  string
		path  string
		slack int64 // pixels the count may differ by (a raster's cells do not follow the scene's)
	}{
		{"GeoJSON WGS84", gj, 0},
		{"GeoPackage Web Mercator", translateVector(t, gj, filepath.Join(dir, "aoi.gpkg"), "GPKG", 3857), 0},
		{"Shapefile UTM 31N", translateVector(t, gj, filepath.Join(dir, "aoi.shp"), "ESRI Shapefile", 32631), 0},
		{"raster WGS84", writeMaskRaster(t, filepath.Join(dir, "aoi4326.tif"), 4326, 400, 400), 80},
		{"raster without CRS, the scene's size", writeMaskRaster(t, filepath.Join(dir, "aoi_px.tif"), 0, maskCols, maskRows), 0},
		// The raster's no-data is outside, also copied pixel for pixel
		// (it was inside there, being non-zero), and so is NaN.
		{"raster without CRS, no-data around", writeValueRaster(t, filepath.Join(dir, "aoi_nd.tif"), godal.Byte, ptr(5), false, func(r, c int) float64 {
			return map[bool]float64{true: 1, false: 5}[inSquare(r, c)]
		}), 0},
		{"Float32 raster without CRS, NaN around", writeValueRaster(t, filepath.Join(dir, "aoi_nan.tif"), godal.Float32, nil, false, func(r, c int) float64 {
			return map[bool]float64{true: 0.5, false: math.NaN()}[inSquare(r, c)]
		}), 0},
		{"Float32 raster in UTM 31N, NaN around", writeValueRaster(t, filepath.Join(dir, "aoi_nan_utm.tif"), godal.Float32, nil, true, func(r, c int) float64 {
			return map[bool]float64{true: 0.5, false: math.NaN()}[inSquare(r, c)]
		}), 0},
		// Every layer (GDAL refused a dataset of several layers
		// without -l, though this page promised every layer).
		{"GeoPackage of two layers", writeWKTLayers(t, filepath.Join(dir, "two.gpkg"), "GPKG", squareWKT(20, 35), squareWKT(35, 60)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := OpenMask(context.Background(), tc.path, scene)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			t.Logf("%d pixels inside", m.Inside())
			if d := m.Inside() - 1600; d < -tc.slack || d > tc.slack {
				t.Errorf("%d pixels inside, want 1600 (+-%d)", m.Inside(), tc.slack)
			}
			in := make([]bool, maskCols*maskRows)
			any, err := m.Read(Window{Cols: maskCols, Rows: maskRows}, in)
			if err != nil || !any {
				t.Fatalf("read: %v, any %v", err, any)
			}
			wrong := 0
			for r := 0; r < maskRows; r++ {
				for c := 0; c < maskCols; c++ {
					want := r >= 20 && r < 60 && c >= 20 && c < 60
					// Off the square's edges by two pixels, a raster's cells must agree too.
					edge := tc.slack > 0 && (abs(r-20) < 2 || abs(r-60) < 2 || abs(c-20) < 2 || abs(c-60) < 2)
					if in[r*maskCols+c] != want && !edge {
						wrong++
					}
				}
			}
			if wrong > 0 {
				t.Errorf("%d pixels on the wrong side of the square", wrong)
			}
			// A window wholly outside reads as none inside.
			if any, err := m.Read(Window{Col: 70, Row: 0, Cols: 30, Rows: 15}, in); err != nil || any {
				t.Errorf("window outside: any %v, err %v", any, err)
			}
			dirName := m.dir
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dirName); !os.IsNotExist(err) {
				t.Errorf("temporary mask raster %s left after Close", dirName)
			}
		})
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// TestMaskErrors: masks that cannot be used fail with one line naming the
// mask and why.
func TestMaskErrors(t *testing.T) {
	dir := t.TempDir()
	scene := maskScene(t)
	gj := writeGeoJSON(t, filepath.Join(dir, "aoi.geojson"), squareIn(t, 4326))
	noCRS := translateVector(t, gj, filepath.Join(dir, "nocrs.shp"), "ESRI Shapefile", 32631)
	os.Remove(strings.TrimSuffix(noCRS, ".shp") + ".prj")
	far := make([][2]float64, 0)
	for _, p := range squareIn(t, 4326) {
		far = append(far, [2]float64{p[0] + 5, p[1]}) // 5 degrees east
	}
	garbage := filepath.Join(dir, "garbage.gpkg")
	os.WriteFile(garbage, []byte("not a geopackage"), 0o644)
	ungeo := scene
	ungeo.WKT, ungeo.GeoTransform, ungeo.HasGeoTransform = "", [6]float64{0, 1, 0, 0, 0, 1}, false
	for _, tc := range []struct {
		name   string
		path   string
		scene  Info
		target error
		want   string
	}{
		{"vector without CRS", noCRS, scene, ErrMaskCRS, "has no CRS"},
		{"raster without CRS of another size", writeMaskRaster(t, filepath.Join(dir, "small.tif"), 0, 50, 40), scene, ErrMaskCRS, "must have the scene's size"},
		{"scene without CRS, mask with one", gj, ungeo, ErrMaskCRS, "scene scene.tif has no CRS"},
		{"no overlap", writeGeoJSON(t, filepath.Join(dir, "far.geojson"), far), scene, ErrMaskNoOverlap, "does not overlap"},
		{"unreadable", garbage, scene, nil, "neither a vector nor a raster"},
		// These were once taken as wholly inside.
		{"raster without CRS, all no-data", writeValueRaster(t, filepath.Join(dir, "allnd.tif"), godal.Byte, ptr(1), false, func(int, int) float64 { return 1 }),
			scene, ErrMaskNoOverlap, "no-data and NaN are outside"},
		{"raster without CRS, all NaN", writeValueRaster(t, filepath.Join(dir, "allnan.tif"), godal.Float32, nil, false, func(int, int) float64 { return math.NaN() }),
			scene, ErrMaskNoOverlap, "no-data and NaN are outside"},
		{"raster in UTM 31N, all NaN", writeValueRaster(t, filepath.Join(dir, "allnan_utm.tif"), godal.Float32, nil, true, func(int, int) float64 { return math.NaN() }),
			scene, ErrMaskNoOverlap, "no-data and NaN are outside"},
		// These were once taken as 1 and 40 pixels inside.
		{"points only", writeWKTLayers(t, filepath.Join(dir, "points.geojson"), "GeoJSON",
			fmt.Sprintf("POINT (%f %f)", testGT[0]+30.5*testGT[1], testGT[3]+30.5*testGT[5])), scene, nil, `layer "part0" holds a POINT`},
		{"a layer of lines beside one of polygons", writeWKTLayers(t, filepath.Join(dir, "lines.gpkg"), "GPKG", squareWKT(20, 30),
			fmt.Sprintf("LINESTRING (%f %f, %f %f)", testGT[0]+20.5*testGT[1], testGT[3]+30.5*testGT[5], testGT[0]+60.5*testGT[1], testGT[3]+30.5*testGT[5])),
			scene, nil, `layer "part1" holds a LINESTRING`},
		{"missing", filepath.Join(dir, "missing.gpkg"), scene, nil, "missing.gpkg"},
		// GeoPackage's srs_id 0 (and -1) read as an
		// "Undefined geographic SRS" was taken as WGS84 (every pixel inside).
		{"GeoPackage layer without CRS beside a UTM one", gpkgWithoutCRS(t, filepath.Join(dir, "nocrs.gpkg")), scene, ErrMaskCRS, `layer "nocrs" has no CRS`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := OpenMask(context.Background(), tc.path, tc.scene)
			if err == nil {
				m.Close()
				t.Fatal("no error")
			}
			if tc.target != nil && !errors.Is(err, tc.target) {
				t.Errorf("got %v, want %v", err, tc.target)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.path) || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("got %q, want one line naming %s and saying %q", msg, tc.path, tc.want)
			}
		})
	}
	// A scene without CRS takes a vector without CRS in its pixel coordinates.
	m, err := OpenMask(context.Background(), noCRS, Info{Name: "ungeo", Cols: 600000, Rows: 10})
	if err == nil {
		m.Close()
	} else if !errors.Is(err, ErrMaskNoOverlap) {
		t.Errorf("vector without CRS on a scene without CRS: got %v, want it placed (here: outside the scene)", err)
	}
}

func TestGeoJSONMaxObjMB(t *testing.T) {
	for _, tc := range []struct {
		budget int64
		want   int
	}{{0, 0}, {1 << 20, 1}, {200 << 20, 12}, {320 << 20, 20}, {8 << 30, 200}} {
		if got := geojsonMaxObjMB(tc.budget); got != tc.want {
			t.Errorf("geojsonMaxObjMB(%d MiB) = %d, want %d", tc.budget>>20, got, tc.want)
		}
	}
}

// gpkgWithoutCRS writes a GeoPackage with a UTM 31N layer holding the test
// square and a layer without CRS (srs_id 0) holding a polygon round the
// world in degrees.
func gpkgWithoutCRS(t *testing.T, path string) string {
	t.Helper()
	ds, err := godal.CreateVector(godal.DriverName("GPKG"), path)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := godal.NewSpatialRefFromEPSG(32631)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	for _, l := range []struct {
		name string
		sr   *godal.SpatialRef
		wkt  string
	}{{"utm", sr, squareWKT(20, 60)}, {"nocrs", nil, "POLYGON ((-180 -90, 180 -90, 180 90, -180 90, -180 -90))"}} {
		g, err := godal.NewGeometryFromWKT(l.wkt, l.sr)
		if err != nil {
			t.Fatal(err)
		}
		layer, err := ds.CreateLayer(l.name, l.sr, g.Type())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := layer.NewFeature(g); err != nil {
			t.Fatal(err)
		}
		g.Close()
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
