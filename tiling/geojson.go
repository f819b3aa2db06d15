package tiling

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/paulmach/orb/geojson"
)

// TileProperties are a tile's GeoJSON feature properties: its place in the
// grid and its windows as [col, row, cols, rows] in scene pixels.
type TileProperties struct {
	Index int   `json:"index"`
	Row   int   `json:"row"`
	Col   int   `json:"col"`
	Input []int `json:"input"`
	Read  []int `json:"read"`
	Core  []int `json:"core"`
}

func rectJSON(r Rect) []int { return []int{r.Col, r.Row, r.Cols, r.Rows} }

// GeoJSON returns the first n tiles of p (all of them when n < 0 or n >=
// NumTiles) as a GeoJSON FeatureCollection: one feature per tile, its read
// window's footprint in the coordinates of the geotransform gt (the scene's
// CRS; pixel coordinates for an identity transform). The collection's
// foreign members say the scene name, the plan, tiles_total (every tile of
// the plan), truncated (when fewer features than tiles are listed) and, for
// an EPSG code other than 0, the CRS in the pre-RFC 7946 "crs" form that
// GDAL and QGIS still read (the footprints are not in WGS84).
func (p Plan) GeoJSON(scene string, gt [6]float64, epsg, n int) *geojson.FeatureCollectionOf[TileProperties] {
	total := p.NumTiles()
	if n < 0 || n > total {
		n = total
	}
	fc := &geojson.FeatureCollectionOf[TileProperties]{
		Type:     "FeatureCollection",
		Features: make([]*geojson.FeatureOf[TileProperties], 0, n),
		ExtraMembers: geojson.Properties{
			"name": scene, "plan": p.String(), "tiles_total": total,
		},
	}
	if n < total {
		fc.ExtraMembers["truncated"] = true
	}
	if epsg != 0 {
		fc.ExtraMembers["crs"] = map[string]any{
			"type": "name", "properties": map[string]any{"name": fmt.Sprintf("urn:ogc:def:crs:EPSG::%d", epsg)},
		}
	}
	for i := 0; i < n; i++ {
		t := p.Tile(i)
		fc.Features = append(fc.Features, &geojson.FeatureOf[TileProperties]{
			Type:     "Feature",
			Geometry: t.Read.Footprint(gt),
			Properties: TileProperties{
				Index: t.Index, Row: t.Row, Col: t.Col,
				Input: rectJSON(t.Input), Read: rectJSON(t.Read), Core: rectJSON(t.Core),
			},
		})
	}
	return fc
}

// WriteGeoJSON writes GeoJSON(scene, gt, epsg, n) indented by one space,
// and a newline (pnec tiles --geojson).
func (p Plan) WriteGeoJSON(w io.Writer, scene string, gt [6]float64, epsg, n int) error {
	b, err := json.MarshalIndent(p.GeoJSON(scene, gt, epsg, n), "", " ")
	if err != nil {
		return fmt.Errorf("encode tiles of %s: %w", scene, err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
