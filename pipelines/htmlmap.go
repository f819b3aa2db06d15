package pipelines

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strings"
)

// polygonRings reads a GeoJSON Polygon's or MultiPolygon's rings (lon, lat).
func polygonRings(kind string, coords json.RawMessage) [][][2]float64 {
	switch kind {
	case "Polygon":
		var rings [][][2]float64
		if json.Unmarshal(coords, &rings) == nil {
			return rings
		}
	case "MultiPolygon":
		var polys [][][][2]float64
		if json.Unmarshal(coords, &polys) == nil {
			var rings [][][2]float64
			for _, p := range polys {
				rings = append(rings, p...)
			}
			return rings
		}
	}
	return nil
}

// mapFrame places lon/lat on the SVG map: an equirectangular projection
// with the x axis shrunk by cos(mean latitude), so that shapes keep their
// proportions, scaled into a width of mapWidth pixels with a margin.
type mapFrame struct {
	minLon, maxLat, kx, ky float64
	w, h                   float64
}

const mapWidth, mapMargin = 720.0, 16.0

// newMapFrame is the frame of the rows' footprints; false when none has one.
func newMapFrame(rows []htmlRow) (mapFrame, bool) {
	minLon, minLat, maxLon, maxLat := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, r := range rows {
		for _, ring := range r.geometry {
			for _, p := range ring {
				minLon, maxLon = math.Min(minLon, p[0]), math.Max(maxLon, p[0])
				minLat, maxLat = math.Min(minLat, p[1]), math.Max(maxLat, p[1])
			}
		}
	}
	if math.IsInf(minLon, 1) {
		return mapFrame{}, false
	}
	shrink := math.Max(0.05, math.Cos((minLat+maxLat)/2*math.Pi/180))
	spanX := math.Max((maxLon-minLon)*shrink, 1e-9)
	spanY := math.Max(maxLat-minLat, 1e-9)
	scale := (mapWidth - 2*mapMargin) / spanX
	h := spanY*scale + 2*mapMargin
	if h > 480 { // a tall area: fit the height instead
		scale = (480 - 2*mapMargin) / spanY
		h = 480
	}
	return mapFrame{minLon: minLon, maxLat: maxLat, kx: scale * shrink, ky: scale, w: mapWidth, h: math.Max(h, 120)}, true
}

func (f mapFrame) xy(p [2]float64) (float64, float64) {
	return mapMargin + (p[0]-f.minLon)*f.kx, mapMargin + (f.maxLat-p[1])*f.ky
}

// footprintSVG draws the rows' footprints on an inline SVG map: one
// polygon per scene in its status's colour, titled with its key and
// linking to its row, and the map's corner coordinates.
func footprintSVG(rows []htmlRow) string {
	f, ok := newMapFrame(rows)
	if !ok {
		return `<p class="note">No scene has a georeferenced footprint.</p>`
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" id="map" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="footprints of the scenes">`,
		f.w, f.h, f.w, f.h)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" class="sea"/>`, f.w, f.h)
	for _, r := range rows {
		if len(r.geometry) == 0 {
			continue
		}
		key := template.HTMLEscapeString(r.Key)
		fmt.Fprintf(&b, `<a href="#row-%s"><path class="fp st-%s" d="`, key, template.HTMLEscapeString(r.Status))
		for _, ring := range r.geometry {
			for i, p := range ring {
				x, y := f.xy(p)
				cmd := "L"
				if i == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&b, "%s%.1f %.1f ", cmd, x, y)
			}
			b.WriteString("Z ")
		}
		fmt.Fprintf(&b, `"><title>%s (%s)</title></path></a>`, key, template.HTMLEscapeString(r.Status))
	}
	lonW, latN := f.minLon, f.maxLat
	lonE := f.minLon + (f.w-2*mapMargin)/f.kx
	latS := f.maxLat - (f.h-2*mapMargin)/f.ky
	fmt.Fprintf(&b, `<text x="4" y="12" class="coord">%.4f, %.4f</text>`, latN, lonW)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="coord" text-anchor="end">%.4f, %.4f</text>`, f.w-4, f.h-4, latS, lonE)
	b.WriteString(`</svg>`)
	return b.String()
}
