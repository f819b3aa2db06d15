package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	stac "github.com/planetlabs/go-stac"
	raster "github.com/planetlabs/go-stac/extensions/raster/v1"

	"github.com/pnec/pnec/geo"
)

// STAC versions and extension schemas the Items follow (shipped under testdata/stac/schemas).
const (
	STACVersion           = "1.0.0"
	ClassificationSchema  = "https://stac-extensions.github.io/classification/v1.1.0/schema.json"
	ProjectionSchema      = "https://stac-extensions.github.io/projection/v1.1.0/schema.json"
	ProcessingSchema      = "https://stac-extensions.github.io/processing/v1.2.0/schema.json"
	RasterSchema          = "https://stac-extensions.github.io/raster/v1.1.0/schema.json"
	cogMediaType          = "image/tiff; application=geotiff; profile=cloud-optimized"
	productAssetKey       = "classification"
	propDatetimeSource    = "pnec:datetime_source"
	propBackend           = "pnec:backend"
	datetimeFromItem      = "source-item"
	datetimeFromScene     = "scene-metadata"
	datetimeFromProcessed = "processing-time"
)

// Classification is the STAC classification extension (v1.1.0) for one band
// of an asset's raster:bands: go-stac has no such extension, so it is added
// through its Extension interface. Encode runs after the raster extension and
// puts classification:classes into raster:bands[Band].
type Classification struct {
	Band    int
	Classes []ClassObject
}

// ClassObject is one class of the classification extension.
type ClassObject struct {
	Value       int    `json:"value"`
	Description string `json:"description"`
	Name        string `json:"name,omitempty"`
	ColorHint   string `json:"color_hint,omitempty"` // RRGGBB hex
}

var _ stac.Extension = (*Classification)(nil)

// URI is the schema of the extension.
func (*Classification) URI() string { return ClassificationSchema }

// Encode adds classification:classes to the band object; without raster:bands it adds them to the asset.
func (c *Classification) Encode(asset map[string]any) error {
	if _, ok := asset["raster:bands"]; !ok {
		asset["classification:classes"] = c.Classes
		return nil
	}
	return patchBands(asset, func(bands []map[string]any) error {
		if c.Band < 0 || c.Band >= len(bands) {
			return fmt.Errorf("classification: band %d of %d raster bands", c.Band, len(bands))
		}
		bands[c.Band]["classification:classes"] = c.Classes
		return nil
	})
}

// patchBands lets f edit an asset's raster:bands as plain JSON objects,
// whatever types the raster extension put there.
func patchBands(asset map[string]any, f func([]map[string]any) error) error {
	b, err := json.Marshal(asset["raster:bands"])
	if err != nil {
		return err
	}
	var bands []map[string]any
	if err := json.Unmarshal(b, &bands); err != nil {
		return err
	}
	if err := f(bands); err != nil {
		return err
	}
	asset["raster:bands"] = bands
	return nil
}

// rasterStddev adds statistics.stddev to raster bands. go-stac v0.34.0's
// raster extension names the field "stdev", which the raster v1.1.0 schema
// rejects (its statistics object allows only mean, minimum, maximum, stddev
// and valid_percent), so the standard deviation is written through this hook.
type rasterStddev struct {
	stddev map[int]float64 // band index -> standard deviation
}

func (*rasterStddev) URI() string { return RasterSchema }
func (r *rasterStddev) Encode(asset map[string]any) error {
	return patchBands(asset, func(bands []map[string]any) error {
		for i, sd := range r.stddev {
			if i < 0 || i >= len(bands) {
				return fmt.Errorf("raster: band %d of %d", i, len(bands))
			}
			st, _ := bands[i]["statistics"].(map[string]any)
			if st == nil {
				st = map[string]any{}
				bands[i]["statistics"] = st
			}
			st["stddev"] = sd
		}
		return nil
	})
}
func (r *rasterStddev) Decode(map[string]any) error { return stac.ErrExtensionDoesNotApply }

// Decode reads classification:classes of the first band that has them.
func (c *Classification) Decode(asset map[string]any) error {
	b, err := json.Marshal(asset["raster:bands"])
	if err != nil {
		return err
	}
	var bands []struct {
		Classes []ClassObject `json:"classification:classes"`
	}
	if json.Unmarshal(b, &bands) == nil {
		for i, band := range bands {
			if len(band.Classes) > 0 {
				c.Band, c.Classes = i, band.Classes
				return nil
			}
		}
	}
	return stac.ErrExtensionDoesNotApply
}

// Projection is the STAC projection extension (v1.1.0), item properties.
type Projection struct {
	EPSG      *int       `json:"proj:epsg"` // null when the CRS has no EPSG code
	WKT2      string     `json:"proj:wkt2,omitempty"`
	Shape     []int      `json:"proj:shape,omitempty"`     // [rows, cols]
	Transform []float64  `json:"proj:transform,omitempty"` // [a, b, c, d, e, f] of x = a*col + b*row + c
	BBox      []float64  `json:"proj:bbox,omitempty"`      // in the product's CRS
	Centroid  *LatLonObj `json:"proj:centroid,omitempty"`
}

// LatLonObj is proj:centroid.
type LatLonObj struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

var _ stac.Extension = (*Projection)(nil)

func (*Projection) URI() string { return ProjectionSchema }
func (p *Projection) Encode(item map[string]any) error {
	return stac.EncodeExtendedItemProperties(p, item)
}
func (p *Projection) Decode(item map[string]any) error {
	return stac.DecodeExtendedItemProperties(p, item)
}

// Processing is the STAC processing extension (v1.2.0), item properties.
type Processing struct {
	Lineage  string            `json:"processing:lineage,omitempty"`
	Level    string            `json:"processing:level,omitempty"`
	Datetime string            `json:"processing:datetime,omitempty"`
	Software map[string]string `json:"processing:software,omitempty"`
}

var _ stac.Extension = (*Processing)(nil)

func (*Processing) URI() string { return ProcessingSchema }
func (p *Processing) Encode(item map[string]any) error {
	return stac.EncodeExtendedItemProperties(p, item)
}
func (p *Processing) Decode(item map[string]any) error {
	return stac.DecodeExtendedItemProperties(p, item)
}

// ProductStats are statistics of a product's bands, read back from the product.
type ProductStats struct {
	Rows, Cols        int
	ClassCounts       map[int]int64 // class value -> pixels (0 = no data)
	ValidPixels       int64         // pixels with a class
	RelMin, RelMax    float64       // reliability over valid pixels, in the stored unit
	RelMean, RelStdev float64
}

// readProductStats reads the product window by window (so memory does not
// grow with the product) and gathers class counts and reliability statistics;
// reading it through GDAL is also the check that the product opens.
func readProductStats(ctx context.Context, productPath string) (geo.Info, ProductStats, error) {
	s, err := geo.Open(productPath)
	if err != nil {
		return geo.Info{}, ProductStats{}, fmt.Errorf("open product %s: %w", productPath, err)
	}
	defer s.Close()
	info := s.Info()
	st := ProductStats{Rows: info.Rows, Cols: info.Cols, ClassCounts: map[int]int64{}}
	if info.Bands < 2 {
		return info, st, fmt.Errorf("product %s has %d bands, want 2", productPath, info.Bands)
	}
	relNoData := math.NaN()
	if len(info.HasNoData) > 1 && info.HasNoData[1] {
		relNoData = info.NoData[1]
	}
	var sum, sum2 float64
	st.RelMin, st.RelMax = math.Inf(1), math.Inf(-1)
	const stripeRows = 256
	for r0 := 0; r0 < info.Rows; r0 += stripeRows {
		h := min(stripeRows, info.Rows-r0)
		blk, err := s.ReadWindow(ctx, geo.Window{Col: 0, Row: r0, Cols: info.Cols, Rows: h})
		if err != nil {
			return info, st, fmt.Errorf("read product %s rows %d..%d: %w", productPath, r0, r0+h, err)
		}
		for i := 0; i < h*info.Cols; i++ {
			cls := int(blk.Data[i*blk.Bands])
			st.ClassCounts[cls]++
			if cls == 0 {
				continue
			}
			st.ValidPixels++
			rel := float64(blk.Data[i*blk.Bands+1])
			if math.IsNaN(rel) || rel == relNoData {
				continue
			}
			sum += rel
			sum2 += rel * rel
			st.RelMin, st.RelMax = min(st.RelMin, rel), max(st.RelMax, rel)
		}
	}
	if st.ValidPixels > 0 {
		n := float64(st.ValidPixels)
		st.RelMean = sum / n
		st.RelStdev = math.Sqrt(max(0, sum2/n-st.RelMean*st.RelMean))
	} else {
		st.RelMin, st.RelMax = 0, 0
	}
	return info, st, nil
}

// ItemParams is what BuildItem needs to describe one product.
type ItemParams struct {
	Input          Input
	ProductPath    string // the COG
	ItemPath       string // where the Item JSON goes (the asset href is relative to it)
	Info           geo.Info
	Stats          ProductStats
	Classes        []ClassObject
	ReliabilityF32 bool
	ModelChecksum  string
	Backend        string
	Version        string // pnec version
	Source         SourceRecord
	ProductBytes   int64
	Now            time.Time
	CollectionID   string // "" when not part of a collection
}

// BuildItem makes the STAC Item describing a product.
func BuildItem(p ItemParams) (*stac.Item, error) {
	now := p.Now.UTC()
	props := map[string]any{
		"created":         now.Format(time.RFC3339),
		propSource:        p.Source,
		propModelChecksum: p.ModelChecksum,
		propProductBytes:  p.ProductBytes,
		propBackend:       p.Backend,
	}
	dt, dtSource := itemDatetime(p.Input, p.Info, now)
	props["datetime"] = dt
	props[propDatetimeSource] = dtSource

	item := &stac.Item{
		Version:    STACVersion,
		Id:         p.Input.Key,
		Properties: props,
		Collection: p.CollectionID,
	}
	if len(p.Info.FootprintWGS84) > 0 && len(p.Info.FootprintWGS84[0]) >= 4 {
		var rings [][][]float64
		for _, ring := range p.Info.FootprintWGS84 {
			var r [][]float64
			for _, pt := range ring {
				r = append(r, []float64{pt[0], pt[1]})
			}
			if len(r) > 0 && (r[0][0] != r[len(r)-1][0] || r[0][1] != r[len(r)-1][1]) {
				r = append(r, r[0]) // GeoJSON rings are closed
			}
			rings = append(rings, r)
		}
		item.Geometry = map[string]any{"type": "Polygon", "coordinates": rings}
		b := p.Info.FootprintWGS84.Bound()
		item.Bbox = []float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
	} else {
		props["pnec:georeferenced"] = false // no CRS: geometry null, as STAC allows
	}

	// Links: the source item (or dataset) the product derives from.
	src := p.Input.Item
	if src == "" {
		src = p.Input.Name
	}
	item.Links = append(item.Links, &stac.Link{Rel: "derived_from", Href: linkHref(src), Title: "source scene"})
	if p.CollectionID != "" {
		item.Links = append(item.Links,
			&stac.Link{Rel: "collection", Href: "collection.json", Type: "application/json"},
			&stac.Link{Rel: "parent", Href: "collection.json", Type: "application/json"})
	}

	// Projection.
	proj := &Projection{Shape: []int{p.Info.Rows, p.Info.Cols}}
	gt := p.Info.GeoTransform
	if gt != ([6]float64{}) {
		proj.Transform = []float64{gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]}
		xs, ys := []float64{}, []float64{}
		for _, c := range [][2]float64{{0, 0}, {float64(p.Info.Cols), 0}, {0, float64(p.Info.Rows)}, {float64(p.Info.Cols), float64(p.Info.Rows)}} {
			xs = append(xs, gt[0]+c[0]*gt[1]+c[1]*gt[2])
			ys = append(ys, gt[3]+c[0]*gt[4]+c[1]*gt[5])
		}
		sort.Float64s(xs)
		sort.Float64s(ys)
		proj.BBox = []float64{xs[0], ys[0], xs[3], ys[3]}
	}
	if p.Info.EPSG != 0 {
		e := p.Info.EPSG
		proj.EPSG = &e
	} else if isWKT2(p.Info.WKT) {
		proj.WKT2 = p.Info.WKT
	}
	if len(item.Bbox) == 4 {
		proj.Centroid = &LatLonObj{Lat: (item.Bbox[1] + item.Bbox[3]) / 2, Lon: (item.Bbox[0] + item.Bbox[2]) / 2}
	}

	proc := &Processing{
		Lineage: fmt.Sprintf("PNEC-Mamba land-cover classification of %s with model sha256:%s on backend %s",
			p.Input.Name, p.ModelChecksum, p.Backend),
		Datetime: now.Format(time.RFC3339),
		Software: map[string]string{"pnec": p.Version},
	}
	item.Extensions = []stac.Extension{proj, proc}

	// The one asset: the COG with its two bands.
	classType := "uint8"
	if len(p.Classes) > 0 && p.Classes[len(p.Classes)-1].Value > 254 {
		classType = "uint16"
	}
	relType, relNoData, relUnit := "uint8", any(255), "percent"
	if p.ReliabilityF32 {
		relType, relNoData, relUnit = "float32", "nan", "1"
	}
	valid := 0.0
	if total := float64(p.Stats.Rows) * float64(p.Stats.Cols); total > 0 {
		valid = 100 * float64(p.Stats.ValidPixels) / total
	}
	cmin, cmax := classRange(p.Stats.ClassCounts)
	classBand := &raster.Band{
		NoData: 0, Sampling: "area", DataType: classType,
		Statistics: &raster.Statistics{Minimum: &cmin, Maximum: &cmax, ValidPercent: &valid},
	}
	relMin, relMax, relMean, relStd := p.Stats.RelMin, p.Stats.RelMax, p.Stats.RelMean, p.Stats.RelStdev
	relBand := &raster.Band{
		NoData: relNoData, Sampling: "area", DataType: relType, Unit: relUnit,
		Statistics: &raster.Statistics{Minimum: &relMin, Maximum: &relMax, Mean: &relMean, ValidPercent: &valid},
	}
	rel, err := filepath.Rel(filepath.Dir(p.ItemPath), p.ProductPath)
	if err != nil {
		rel = p.ProductPath
	}
	item.Assets = map[string]*stac.Asset{
		productAssetKey: {
			Href:        filepath.ToSlash(rel),
			Type:        cogMediaType,
			Title:       "land-cover class (band 1) and reliability (band 2)",
			Description: "Band 1 'class': class value, 0 = no data. Band 2 'reliability': confidence of the class (" + relUnit + ").",
			Roles:       []string{"data", "classification", "reliability"},
			Extensions: []stac.Extension{
				&raster.Asset{Bands: []*raster.Band{classBand, relBand}},
				&Classification{Band: 0, Classes: p.Classes},
				&rasterStddev{stddev: map[int]float64{1: relStd}},
			},
		},
	}
	return item, nil
}

func classRange(counts map[int]int64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for v, n := range counts {
		if v == 0 || n == 0 {
			continue
		}
		lo, hi = min(lo, float64(v)), max(hi, float64(v))
	}
	if math.IsInf(lo, 1) {
		return 0, 0
	}
	return lo, hi
}

var wkt2Start = regexp.MustCompile(`^\s*(PROJCRS|GEOGCRS|GEODCRS|BOUNDCRS|COMPOUNDCRS|ENGCRS|VERTCRS|DERIVEDPROJCRS)\s*\[`)

func isWKT2(wkt string) bool { return wkt2Start.MatchString(wkt) }

// itemDatetime takes the acquisition time from the source Item, else from the
// scene's metadata, else the processing time, and says which.
func itemDatetime(in Input, info geo.Info, now time.Time) (string, string) {
	if t, err := time.Parse(time.RFC3339Nano, in.ItemDatetime); err == nil {
		return t.UTC().Format(time.RFC3339Nano), datetimeFromItem
	}
	for _, k := range []string{"ACQUISITION_DATETIME", "acquisition_datetime", "ACQUISITION_TIME", "acquisition time", "DATETIME", "TIFFTAG_DATETIME"} {
		v, ok := info.Metadata[k]
		if !ok {
			continue
		}
		for _, layout := range []string{time.RFC3339Nano, "2006:01:02 15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
			if t, err := time.Parse(layout, strings.TrimSpace(v)); err == nil {
				return t.UTC().Format(time.RFC3339Nano), datetimeFromScene
			}
		}
	}
	return now.Format(time.RFC3339), datetimeFromProcessed
}

// linkHref writes a local target as an absolute path (inputs and products
// live in unrelated trees, so a relative link would break when either moves),
// and URLs and /vsi paths as they are.
func linkHref(target string) string {
	if isURL(target) || strings.HasPrefix(target, "/vsi") || strings.Contains(target, "://") {
		return target
	}
	if abs, err := filepath.Abs(target); err == nil {
		return filepath.ToSlash(abs)
	}
	return target
}
