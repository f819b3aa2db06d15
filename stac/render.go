package stac

import (
	"fmt"
	"sort"
	"strconv"

	gostac "github.com/planetlabs/go-stac"

	"github.com/pnec/pnec/geo"
)

// RenderSchema is the STAC render extension the Items (properties.renders)
// and Collections (renders) use to say how to draw the products: titiler
// and other viewers read it where they do not read the classification
// extension.
const RenderSchema = "https://stac-extensions.github.io/render/v2.0.0/schema.json"

// Keys of the renders pnec writes.
const (
	RenderClasses     = "classes"
	RenderReliability = "reliability"
)

// RenderObject is one entry of renders (render extension v2.0.0): which
// asset and band, and how (titiler's parameters).
type RenderObject struct {
	Title        string            `json:"title,omitempty"`
	Assets       []string          `json:"assets"`
	Bidx         []int             `json:"bidx,omitempty"`
	Nodata       any               `json:"nodata,omitempty"`
	Rescale      [][2]float64      `json:"rescale,omitempty"`
	Colormap     map[string][4]int `json:"colormap,omitempty"`
	ColormapName string            `json:"colormap_name,omitempty"`
	Resampling   string            `json:"resampling,omitempty"`
}

// Renders are the render extension's renders of a product: the class map
// (band 1 in the classes' colours, the same as the COG's colour table and
// classification:classes' color_hint, no-data transparent, nearest
// resampling) and the reliability (band 2, percent 0-100, or the Float32
// file 0..1 with floatRel).
func Renders(classes []ClassObject, nodata int, floatRel bool) map[string]RenderObject {
	cmap := make(map[string][4]int, len(classes))
	for _, c := range classes {
		r, g, b, ok := hexRGB(c.ColorHint)
		if ok {
			cmap[strconv.Itoa(c.Value)] = [4]int{r, g, b, 255}
		}
	}
	out := map[string]RenderObject{
		RenderClasses: {Title: "Land-cover classes", Assets: []string{ProductAssetKey}, Bidx: []int{1}, Nodata: nodata,
			Colormap: cmap, Resampling: "nearest"},
		RenderReliability: {Title: "Reliability (percent)", Assets: []string{ProductAssetKey}, Bidx: []int{2}, Nodata: nodata,
			Rescale: [][2]float64{{0, 100}}, ColormapName: "viridis", Resampling: "average"},
	}
	if floatRel {
		out[RenderReliability] = RenderObject{Title: "Reliability (0..1, Float32)", Assets: []string{reliabilityAssetKey}, Bidx: []int{1},
			Nodata: "nan", Rescale: [][2]float64{{0, 1}}, ColormapName: "viridis", Resampling: "average"}
	}
	return out
}

// hexRGB reads an RRGGBB colour.
func hexRGB(s string) (r, g, b int, ok bool) {
	if len(s) != 6 {
		return 0, 0, 0, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, 0, 0, false
	}
	return int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff), true
}

// render is the render extension of an Item: properties.renders.
type render struct {
	Renders map[string]RenderObject `json:"renders"`
}

var _ gostac.Extension = (*render)(nil)

func (*render) URI() string { return RenderSchema }
func (r *render) Encode(item map[string]any) error {
	return gostac.EncodeExtendedItemProperties(r, item)
}
func (r *render) Decode(item map[string]any) error {
	return gostac.DecodeExtendedItemProperties(r, item)
}

// PropClassCounts is the Item property holding the product's pixels per
// class value (no-data left out): the class shares a report shows.
const PropClassCounts = "pnec:class_counts"

// classCounts is ClassCounts without no-data (value 0) or empty classes,
// keyed by the class value as a string (JSON object keys), in value order
// when marshalled.
func classCounts(counts map[int]int64) map[string]int64 {
	out := map[string]int64{}
	keys := make([]int, 0, len(counts))
	for v := range counts {
		keys = append(keys, v)
	}
	sort.Ints(keys)
	for _, v := range keys {
		if v != geo.ClassNoData && counts[v] > 0 {
			out[strconv.Itoa(v)] = counts[v]
		}
	}
	return out
}

// thumbnailAsset describes the thumbnail at href.
func thumbnailAsset(href string) *gostac.Asset {
	return &gostac.Asset{
		Href:  href,
		Type:  geo.ThumbnailMediaType,
		Title: "thumbnail of the class map",
		Description: fmt.Sprintf("PNG of band 1 of the classification asset in its colour table (the classes' color_hint), "+
			"no-data transparent, at most %d px a side.", geo.ThumbnailMaxSide),
		Roles: []string{"thumbnail"},
	}
}
