package geo

import (
	"fmt"
	"strconv"

	"github.com/airbusgeo/godal"
	"github.com/paulmach/orb"
)

// footprintDensify is the number of segments each raster edge is split
// into before reprojection, so that curved edges in WGS84 stay close.
const footprintDensify = 8

// epsgOf returns the EPSG code of a CRS given as WKT, 0 when it has none.
func epsgOf(wkt string) int {
	sr, err := godal.NewSpatialRefFromWKT(wkt, errh)
	if err != nil {
		return 0
	}
	defer sr.Close()
	if sr.AuthorityName("") != "EPSG" {
		// A WKT without AUTHORITY nodes may still be a known CRS.
		if err := sr.AutoIdentifyEPSG(); err != nil || sr.AuthorityName("") != "EPSG" {
			return 0
		}
	}
	code, err := strconv.Atoi(sr.AuthorityCode(""))
	if err != nil {
		return 0
	}
	return code
}

// footprintWGS84 transforms the outline of a cols x rows raster with
// geotransform gt in CRS wkt to lon/lat (x = lon), each edge densified.
func footprintWGS84(gt [6]float64, wkt string, cols, rows int) (orb.Polygon, error) {
	src, err := godal.NewSpatialRefFromWKT(wkt, errh)
	if err != nil {
		return nil, fmt.Errorf("parse CRS: %w", err)
	}
	defer src.Close()
	// godal's constructors set OAMS_TRADITIONAL_GIS_ORDER: x is longitude.
	dst, err := godal.NewSpatialRefFromEPSG(4326, errh)
	if err != nil {
		return nil, fmt.Errorf("WGS84: %w", err)
	}
	defer dst.Close()
	tr, err := godal.NewTransform(src, dst, errh)
	if err != nil {
		return nil, fmt.Errorf("transform to WGS84: %w", err)
	}
	defer tr.Close()

	// Pixel-corner coordinates walked clockwise from the top-left corner.
	corners := [][2]float64{{0, 0}, {float64(cols), 0}, {float64(cols), float64(rows)}, {0, float64(rows)}}
	var px, py []float64
	for e := 0; e < 4; e++ {
		a, b := corners[e], corners[(e+1)%4]
		for k := 0; k < footprintDensify; k++ {
			t := float64(k) / footprintDensify
			c := a[0] + (b[0]-a[0])*t
			r := a[1] + (b[1]-a[1])*t
			px = append(px, gt[0]+c*gt[1]+r*gt[2])
			py = append(py, gt[3]+c*gt[4]+r*gt[5])
		}
	}
	ok := make([]bool, len(px))
	// TransformEx reports an error when any point fails; points that did
	// transform (ok) still make a usable outline.
	terr := tr.TransformEx(px, py, nil, ok)
	ring := make(orb.Ring, 0, len(px)+1)
	for i := range px {
		if ok[i] {
			ring = append(ring, orb.Point{px[i], py[i]})
		}
	}
	if len(ring) < 3 {
		return nil, fmt.Errorf("outline does not transform to WGS84: %v", terr)
	}
	ring = append(ring, ring[0])
	// GeoJSON (RFC 7946) wants exterior rings counter-clockwise.
	if ring.Orientation() == orb.CW {
		ring.Reverse()
	}
	return orb.Polygon{ring}, nil
}
