package geo

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/pnec/pnec/internal/golden"
)

// TestReportGolden: the JSON of pnec info --json (Report.WriteJSON) for a
// small georeferenced scene with nodata, band names and wavelengths. The
// scene's path and the CRS's WKT (its text varies with PROJ's version) are
// normalised; the rest is compared byte for byte.
func TestReportGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scene.tif")
	nodata := -1.0
	w, err := CreateGeoTIFF(path, RasterSpec{
		Cols: 5, Rows: 4, Bands: 3, DataType: Int16,
		GeoRef:        GeoRef{GeoTransform: [6]float64{570000, 10, 0, 4830000, 0, -10}, EPSG: 32631},
		NoData:        &nodata,
		BandNames:     []string{"blue", "green", "red"},
		WavelengthsNM: []float64{490, 560, 665},
		Metadata:      map[string]string{"PNEC_SOURCE": "golden"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	px := make([]float32, 5*4*3)
	for i := range px {
		px[i] = float32(i)
	}
	for b := range 3 {
		px[(1*5+2)*3+b] = -1 // one nodata pixel
	}
	if err := w.WriteWindow(Window{Cols: 5, Rows: 4}, px); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep := NewReport(s.Info())
	f, exact, err := s.ValidFractionEstimate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep.ValidFraction, rep.ValidEstimated = &f, !exact
	if rep.CRS == nil || !strings.Contains(rep.CRS.WKT, "UTM zone 31N") {
		t.Fatalf("CRS %+v, want UTM zone 31N", rep.CRS)
	}
	rep.Name = "scene.tif"
	// PROJ's last digits may differ between versions and CPUs: 1e-9 degrees
	// (0.1 mm) is far below what the footprint is for.
	fp, ok := rep.Footprint.Coordinates.(orb.Polygon)
	if !ok {
		t.Fatalf("footprint %T, want a polygon", rep.Footprint.Coordinates)
	}
	for _, ring := range fp {
		for i, pt := range ring {
			ring[i] = orb.Point{math.Round(pt[0]*1e9) / 1e9, math.Round(pt[1]*1e9) / 1e9}
		}
	}
	rep.CRS.WKT = "(WKT of EPSG:32631; its text varies with PROJ's version)"
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "report.golden.json", b.Bytes())
}

// TestReportRotatedGrid: an AVIRIS-NG-like flight line on a UTM grid
// rotated by 42 degrees with 5.2 m pixels (ENVI map info rotation=42):
// pnec info shows the pixel's true size, 5.2 x 5.2 m, and the rotation,
// not the geotransform's GT[1] x GT[5] (3.86 x -3.86).
func TestReportRotatedGrid(t *testing.T) {
	img := writeENVI(t, t.TempDir(), 5, 4, 2, false,
		"map info = { UTM , 1.000 , 1.000 , 724522.000 , 4074620.000 , 5.2 , 5.2 , 11 , North , WGS-84 , units=Meters , rotation=42 }\n")
	s, err := Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep := NewReport(s.Info())
	var b bytes.Buffer
	if err := rep.WriteText(&b, ""); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, "pixel size:     5.2 x 5.2") || !strings.Contains(text, "rotation:       42 degrees counter-clockwise") {
		t.Errorf("text report, want pixel size 5.2 x 5.2 and rotation 42 degrees:\n%s", text)
	}
	b.Reset()
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var js map[string]any
	if err := json.Unmarshal(b.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if ps, _ := js["pixel_size"].([]any); len(ps) != 2 || ps[0] != 5.2 || ps[1] != 5.2 || js["rotation_deg"] != 42.0 {
		t.Errorf("JSON pixel_size %v, rotation_deg %v; want [5.2, 5.2] and 42", js["pixel_size"], js["rotation_deg"])
	}
}

// TestReportTextCRSLine: a CRS without an EPSG code is named with the
// caller's hint saying where its WKT is (pnec info names its --json; geo
// names no flag), and without a hint alone.
func TestReportTextCRSLine(t *testing.T) {
	wkt := `LOCAL_CS["site grid",UNIT["metre",1]]`
	for _, tc := range []struct {
		name, hint string
		epsg       int
		want       string
	}{
		{"no code, hint", "--json gives the WKT", 0, "CRS:            site grid (no EPSG code; --json gives the WKT)\n"},
		{"no code, no hint", "", 0, "CRS:            site grid (no EPSG code)\n"},
		{"code", "--json gives the WKT", 32631, "CRS:            EPSG:32631 (site grid)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := NewReport(Info{Name: "s.tif", Cols: 1, Rows: 1, Bands: 1, HasNoData: []bool{false}, NoData: []float64{0}, WKT: wkt, EPSG: tc.epsg})
			var b bytes.Buffer
			if err := rep.WriteText(&b, tc.hint); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("text report lacks %q:\n%s", tc.want, b.String())
			}
		})
	}
}
