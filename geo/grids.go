package geo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/airbusgeo/godal"
)

// odlValue finds KEY=VALUE in HDF-EOS5 StructMetadata (ODL): the value of
// the first line whose key is key, inside the group named group when one
// is given ("" anywhere).
func odlValue(odl, group, key string) (string, bool) {
	inGroup := group == ""
	for _, line := range strings.Split(odl, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case group != "" && (k == "GridName" || k == "SwathName"):
			inGroup = strings.Trim(v, `"`) == group
		case inGroup && k == key:
			return v, true
		}
	}
	return "", false
}

// odlPair parses an ODL pair "(x,y)".
func odlPair(v string) (float64, float64, error) {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "(") || !strings.HasSuffix(v, ")") {
		return 0, 0, fmt.Errorf("%q is not (X,Y)", truncate(v, 40))
	}
	xs, ys, ok := strings.Cut(v[1:len(v)-1], ",")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not (X,Y)", truncate(v, 40))
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(xs), 64)
	if err != nil {
		return 0, 0, err
	}
	y, err := strconv.ParseFloat(strings.TrimSpace(ys), 64)
	if err != nil {
		return 0, 0, err
	}
	return x, y, nil
}

// heGrid is an HDF-EOS5 grid's placement from StructMetadata.0.
type heGrid struct {
	XDim, YDim int
	ULX, ULY   float64 // upper-left corner of the upper-left pixel, metres
	LRX, LRY   float64 // lower-right corner of the lower-right pixel
	EPSG       int
	Projection string
}

// parseHEGrid reads the placement of grid name from HDF-EOS5
// StructMetadata: XDim, YDim, UpperLeftPointMtrs, LowerRightMtrs (the outer
// corners of the corner pixels, in metres), Projection (HE5_GCTP_UTM is
// supported: ZoneCode, negative in the south, on WGS 84) .
func parseHEGrid(odl, name string) (heGrid, error) {
	var g heGrid
	get := func(k string) (string, error) {
		v, ok := odlValue(odl, name, k)
		if !ok {
			return "", fmt.Errorf("StructMetadata grid %s has no %s", name, k)
		}
		return v, nil
	}
	for _, kv := range []struct {
		k string
		p *int
	}{{"XDim", &g.XDim}, {"YDim", &g.YDim}} {
		v, err := get(kv.k)
		if err != nil {
			return g, err
		}
		if *kv.p, err = strconv.Atoi(v); err != nil || *kv.p < 1 {
			return g, fmt.Errorf("StructMetadata %s = %q", kv.k, truncate(v, 20))
		}
	}
	v, err := get("UpperLeftPointMtrs")
	if err != nil {
		return g, err
	}
	if g.ULX, g.ULY, err = odlPair(v); err != nil {
		return g, fmt.Errorf("StructMetadata UpperLeftPointMtrs: %w", err)
	}
	if v, err = get("LowerRightMtrs"); err != nil {
		return g, err
	}
	if g.LRX, g.LRY, err = odlPair(v); err != nil {
		return g, fmt.Errorf("StructMetadata LowerRightMtrs: %w", err)
	}
	if g.Projection, err = get("Projection"); err != nil {
		return g, err
	}
	switch g.Projection {
	case "HE5_GCTP_UTM":
		v, err := get("ZoneCode")
		if err != nil {
			return g, err
		}
		z, err := strconv.Atoi(v)
		if err != nil || z == 0 || z < -60 || z > 60 {
			return g, fmt.Errorf("StructMetadata ZoneCode = %q: want a UTM zone, negative in the south", truncate(v, 10))
		}
		g.EPSG = 32600 + z
		if z < 0 {
			g.EPSG = 32700 - z
		}
	default:
		return g, fmt.Errorf("StructMetadata grid projection %s: pnec reads HE5_GCTP_UTM grids", truncate(g.Projection, 30))
	}
	if !(g.LRX > g.ULX) || !(g.ULY > g.LRY) {
		return g, fmt.Errorf("StructMetadata corners (%g,%g) and (%g,%g) do not make a north-up grid", g.ULX, g.ULY, g.LRX, g.LRY)
	}
	return g, nil
}

// geoTransform is the grid's GDAL geotransform (corner convention).
func (g heGrid) geoTransform() [6]float64 {
	return [6]float64{g.ULX, (g.LRX - g.ULX) / float64(g.XDim), 0, g.ULY, 0, -(g.ULY - g.LRY) / float64(g.YDim)}
}

// wktOfEPSG is the WKT of an EPSG code.
func wktOfEPSG(code int) (string, error) {
	sr, err := godal.NewSpatialRefFromEPSG(code, errh)
	if err != nil {
		return "", fmt.Errorf("EPSG:%d: %w", code, err)
	}
	defer sr.Close()
	return sr.WKT(errh)
}
