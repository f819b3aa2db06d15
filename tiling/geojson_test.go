package tiling

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/pnec/pnec/internal/golden"
)

// TestWriteGeoJSONGolden: pnec tiles --geojson's output (Plan.WriteGeoJSON)
// for make demo's SalinasA plan, georeferenced in UTM 31N and listing every
// tile, and in pixel coordinates listing only two of the nine tiles.
func TestWriteGeoJSONGolden(t *testing.T) {
	p, err := New(83, 86, Options{Stride: 4, TileSize: 48, Overlap: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		golden string
		gt     [6]float64
		epsg   int
		n      int
	}{
		{"tiles-utm.golden.geojson", [6]float64{570000, 10, 0, 4830000, 0, -10}, 32631, -1},
		{"tiles-pixels-truncated.golden.geojson", [6]float64{0, 1, 0, 0, 0, 1}, 0, 2},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := p.WriteGeoJSON(&b, "scene.tif", tc.gt, tc.epsg, tc.n); err != nil {
				t.Fatal(err)
			}
			var fc struct {
				Type       string `json:"type"`
				TilesTotal int    `json:"tiles_total"`
				Truncated  bool   `json:"truncated"`
				Features   []struct {
					Properties TileProperties `json:"properties"`
				} `json:"features"`
			}
			if err := json.Unmarshal(b.Bytes(), &fc); err != nil {
				t.Fatal(err)
			}
			want := p.NumTiles()
			if tc.n >= 0 {
				want = tc.n
			}
			if fc.Type != "FeatureCollection" || fc.TilesTotal != p.NumTiles() || len(fc.Features) != want || fc.Truncated != (want < p.NumTiles()) {
				t.Fatalf("%s with %d of %d tiles (truncated %v), want a FeatureCollection of %d of %d", fc.Type, len(fc.Features), fc.TilesTotal, fc.Truncated, want, p.NumTiles())
			}
			golden.Check(t, tc.golden, b.Bytes())
		})
	}
}
