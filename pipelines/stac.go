package pipelines

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
	stac "github.com/planetlabs/go-stac"
	raster "github.com/planetlabs/go-stac/extensions/raster/v1"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
)

// STAC versions and extension schemas the Items follow (shipped under testdata/stac/schemas).
const (
	STACVersion          = "1.0.0"
	ClassificationSchema = "https://stac-extensions.github.io/classification/v1.1.0/schema.json"
	ProjectionSchema     = "https://stac-extensions.github.io/projection/v1.1.0/schema.json"
	ProcessingSchema     = "https://stac-extensions.github.io/processing/v1.2.0/schema.json"
	RasterSchema         = "https://stac-extensions.github.io/raster/v1.1.0/schema.json"
	cogMediaType         = "image/tiff; application=geotiff; profile=cloud-optimized"
	productAssetKey      = "classification"
	reliabilityAssetKey  = "reliability"
	styleAssetKey        = "style"
	propDatetimeSource   = "pnec:datetime_source"
	propBackend          = "pnec:backend"
	datetimeFromItem     = "source-item"
	datetimeFromScene    = "scene-metadata"
	datetimeFromUser     = "user" // --datetime
	// processingLevel is the products' processing:level: model output
	// (MLM best practices: L4).
	processingLevel = "L4"
)

// ErrNoDatetime: nothing says when a scene was acquired (no source STAC
// Item datetime, no time in its metadata) and none was given. A STAC Item
// needs a datetime or an interval; a made-up one (the whole 1970..now
// range) matches almost any search, so the scene is refused instead.
var ErrNoDatetime = errors.New("no acquisition time: neither its source STAC Item nor its metadata (ACQUISITIONDATETIME, TIFFTAG_DATETIME, ...) gives one, and none was given")

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

// rasterStddev adds statistics.stddev to raster bands and names the unit
// field as the schema does. go-stac v0.34.0's
// raster extension names the field "stdev", which the raster v1.1.0 schema
// rejects (its statistics object allows only mean, minimum, maximum, stddev
// and valid_percent), so the standard deviation is written through this hook.
type rasterStddev struct {
	stddev map[int]float64 // band index -> standard deviation
}

func (*rasterStddev) URI() string { return RasterSchema }
func (r *rasterStddev) Encode(asset map[string]any) error {
	return patchBands(asset, func(bands []map[string]any) error {
		// go-stac v0.34.0 also writes a band's unit as "units"; raster
		// v1.1.0 names it "unit" (which readers look for).
		for _, b := range bands {
			if u, ok := b["units"]; ok {
				delete(b, "units")
				b["unit"] = u
			}
		}
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
	Lineage    string                `json:"processing:lineage,omitempty"`
	Level      string                `json:"processing:level,omitempty"`
	Datetime   string                `json:"processing:datetime,omitempty"`
	Software   map[string]string     `json:"processing:software,omitempty"`
	Expression *ProcessingExpression `json:"processing:expression,omitempty"`
}

// ProcessingExpression is processing:expression: how the data was made.
// Products name their model's STAC Item ("stac-mlm", MLM best practices).
type ProcessingExpression struct {
	Format     string `json:"format"`
	Expression string `json:"expression"`
}

var _ stac.Extension = (*Processing)(nil)

func (*Processing) URI() string { return ProcessingSchema }
func (p *Processing) Encode(item map[string]any) error {
	return stac.EncodeExtendedItemProperties(p, item)
}
func (p *Processing) Decode(item map[string]any) error {
	return stac.DecodeExtendedItemProperties(p, item)
}

// ProductStats describe a product's stored pixels (see geo.ProductStats).
type ProductStats = geo.ProductStats

// productInfo opens a product for its size and georeference as GDAL reads
// them.
func productInfo(productPath string) (geo.Info, error) {
	s, err := geo.Open(productPath)
	if err != nil {
		return geo.Info{}, fmt.Errorf("open product %s: %w", productPath, err)
	}
	defer s.Close()
	info := s.Info()
	if info.Bands < 2 {
		return info, fmt.Errorf("product %s has %d bands, want 2", productPath, info.Bands)
	}
	return info, nil
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
	// QualityMasks names the quality masks whose flagged pixels were left
	// unclassified (processor.Result.QualityMasks), "" when none.
	QualityMasks string
	// Files are the checksums and sizes of the asset files by asset key
	// (FileChecksum), written as file:checksum and file:size.
	Files map[string]FileInfo
	// ModelItem is the href of the model's STAC Item (an MLM Item: see
	// BuildModelItem), "" when there is none; ModelName its mlm:name.
	ModelItem, ModelName string
	// BaseURL is the public URL of the Item's root (the Collection's
	// directory, else the Item's); "" = unknown, and the Item has no self
	// link (STAC wants it absolute).
	BaseURL      string
	Now          time.Time
	CollectionID string // "" when not part of a collection
	// CollectionPath is the Collection file the Item belongs to ("" = none):
	// the root, parent and collection links point at it, relative to the Item.
	CollectionPath string
	// Datetime, when not zero, is the acquisition time the user gave; it
	// wins over the scene's. With DatetimeEnd it is the start of an
	// interval: datetime null, start_datetime..end_datetime.
	Datetime, DatetimeEnd time.Time
	// NoData is the value both product bands store for no data (geo.ProductNoData).
	NoData int
	// Probabilities and TopK describe the class probabilities file beside
	// the product (processor.Options); ProbabilitiesOff: none.
	Probabilities processor.ProbabilityStage
	TopK          int
	// Shard and Engine are the batch process's share of the inputs and the
	// scheduler it ran under (recorded as pnec:shard, pnec:engine, pnec:job_id).
	Shard  Shard
	Engine Engine
	// Drift is the scene's drift (nil: none measured), recorded as
	// pnec:drift_verdict and pnec:drift.
	Drift *model.Drift
}

// Properties of the drift (docs/acquisitions.md).
const (
	propDriftVerdict = "pnec:drift_verdict"
	propDrift        = "pnec:drift"
)

// driftProperties is the pnec:drift object: the figures of the verdict
// (ratios 0..1, band shifts in training standard deviations; null where
// undefined) and the reasons it is not ok.
func driftProperties(d *model.Drift) map[string]any {
	num := func(v float64) any { return processor.JSONFigure(v, 4) }
	reasons := d.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	props := map[string]any{
		"reliability":          num(d.Reliability),
		"reliability_baseline": num(d.ReliabilityBaseline),
		"reasons":              reasons,
	}
	for _, f := range model.DriftFigures() {
		props[f.Key] = num(f.Value(*d))
	}
	for k, v := range processor.DriftThresholdsJSON(model.DefaultDriftThresholds) {
		props[k] = v
	}
	return props
}

// BuildItem makes the STAC Item describing a product. Hrefs of local files
// are relative to the Item when they lie under its root (the Collection's
// directory, else the Item's), absolute otherwise; URLs stay as they are.
func BuildItem(p ItemParams) (*stac.Item, error) {
	now := p.Now.UTC()
	itemDir := filepath.Dir(p.ItemPath)
	root := itemDir
	if p.CollectionPath != "" {
		root = filepath.Dir(p.CollectionPath)
	}
	props := map[string]any{
		"created":         now.Format(time.RFC3339),
		propSource:        p.Source,
		propModelChecksum: p.ModelChecksum,
		propProductFormat: productFormat,
		propBackend:       p.Backend,
	}
	if p.Shard.Count > 1 {
		props["pnec:shard"] = p.Shard.String()
	}
	if p.Engine.Name != "" {
		props["pnec:engine"] = p.Engine.Name
	}
	if p.Engine.JobID != "" {
		props["pnec:job_id"] = p.Engine.JobID
	}
	if p.Drift != nil {
		props[propDriftVerdict] = string(p.Drift.Verdict)
		props[propDrift] = driftProperties(p.Drift)
	}
	switch dt, dtSource := itemDatetime(p.Input, p.Info, p.Datetime); {
	case !p.Datetime.IsZero() && !p.DatetimeEnd.IsZero():
		// The user's interval: STAC's datetime null with its bounds.
		props["datetime"] = nil
		props["start_datetime"] = p.Datetime.UTC().Format(time.RFC3339Nano)
		props["end_datetime"] = p.DatetimeEnd.UTC().Format(time.RFC3339Nano)
		props[propDatetimeSource] = datetimeFromUser
	case dt == "":
		return nil, fmt.Errorf("%s: %w", p.Input.Name, ErrNoDatetime)
	default:
		props["datetime"] = dt
		props[propDatetimeSource] = dtSource
	}

	item := &stac.Item{
		Version:    STACVersion,
		Id:         p.Input.Key,
		Properties: props,
		Collection: p.CollectionID,
	}
	if len(p.Info.FootprintWGS84) > 0 && len(p.Info.FootprintWGS84[0]) >= 4 {
		var fp orb.Polygon
		for _, ring := range p.Info.FootprintWGS84 {
			r := append(orb.Ring(nil), ring...)
			if len(r) > 0 && r[0] != r[len(r)-1] {
				r = append(r, r[0]) // GeoJSON rings are closed
			}
			fp = append(fp, r)
		}
		item.Geometry = geojson.NewGeometry(fp)
		b := p.Info.FootprintWGS84.Bound()
		item.Bbox = []float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
	} else {
		props["pnec:georeferenced"] = false // no CRS: geometry null, as STAC allows
	}

	// Links: itself (only absolute, with a base URL), its collection (root
	// and parent too), the source Item when the input was one (a scene file
	// is no STAC object: the lineage names it) and the model's Item.
	if self := selfHref(p.BaseURL, p.ItemPath, root); self != "" {
		item.Links = append(item.Links, &stac.Link{Rel: "self", Href: self, Type: geojsonMediaType})
	}
	if p.CollectionPath != "" {
		c := portableHref(p.CollectionPath, root, itemDir)
		for _, rel := range []string{"root", "parent", "collection"} {
			item.Links = append(item.Links, &stac.Link{Rel: rel, Href: c, Type: "application/json"})
		}
	}
	if p.Input.Item != "" {
		item.Links = append(item.Links, &stac.Link{Rel: "derived_from", Href: portableHref(p.Input.Item, root, itemDir),
			Type: geojsonMediaType, Title: "source STAC Item"})
	}
	var modelHref string
	if p.ModelItem != "" {
		modelHref = portableHref(p.ModelItem, root, itemDir)
		item.Links = append(item.Links, &stac.Link{Rel: "derived_from", Href: modelHref, Type: geojsonMediaType,
			Title: fmt.Sprintf("model %s (STAC Item, machine learning model extension)", p.ModelName)})
	}

	// Projection: only what the product has (no geotransform, no transform).
	proj := &Projection{Shape: []int{p.Info.Rows, p.Info.Cols}}
	gt := p.Info.GeoTransform
	if p.Info.HasGeoTransform && gt != ([6]float64{}) {
		proj.Transform = []float64{gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]}
		xs, ys := []float64{}, []float64{}
		for _, c := range [][2]float64{{0, 0}, {float64(p.Info.Cols), 0}, {0, float64(p.Info.Rows)}, {float64(p.Info.Cols), float64(p.Info.Rows)}} {
			xs = append(xs, gt[0]+c[0]*gt[1]+c[1]*gt[2])
			ys = append(ys, gt[3]+c[0]*gt[4]+c[1]*gt[5])
		}
		sort.Float64s(xs)
		sort.Float64s(ys)
		if p.Info.WKT != "" || p.Info.EPSG != 0 {
			proj.BBox = []float64{xs[0], ys[0], xs[3], ys[3]}
		}
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

	src := p.Input.Item
	if src == "" {
		src = p.Input.Name
	}
	lineage := fmt.Sprintf("PNEC-Mamba land-cover classification of %s with model sha256:%s on backend %s",
		portableHref(src, root, itemDir), p.ModelChecksum, p.Backend)
	if p.Source.Mask != "" {
		lineage += ", within the area of interest " + p.Source.Mask
	}
	if p.QualityMasks != "" {
		lineage += ", pixels flagged by the quality masks " + p.QualityMasks + " left unclassified"
	}
	proc := &Processing{
		Lineage:  lineage,
		Level:    processingLevel,
		Datetime: now.Format(time.RFC3339),
		Software: map[string]string{"pnec": p.Version},
	}
	if modelHref != "" {
		proc.Expression = &ProcessingExpression{Format: "stac-mlm", Expression: modelHref}
	}
	item.Extensions = []stac.Extension{proj, proc}

	classBand, relBand, err := productBands(p.Classes, p.NoData, p.Stats)
	if err != nil {
		return nil, err
	}
	relStd := p.Stats.RelStdev
	item.Assets = map[string]*stac.Asset{
		productAssetKey: {
			Href:  portableHref(p.ProductPath, root, itemDir),
			Type:  cogMediaType,
			Title: "land-cover class (band 1) and reliability (band 2)",
			Description: fmt.Sprintf("Band 1 'class': class value (colour table and class names inside the TIFF). "+
				"Band 2 'reliability': confidence of the class in percent (0-100). Both bands: %d = no data.", p.NoData),
			Roles: []string{"data", "classification", "reliability"},
			Extensions: []stac.Extension{
				&raster.Asset{Bands: []*raster.Band{classBand, relBand}},
				&Classification{Band: 0, Classes: p.Classes},
				&rasterStddev{stddev: map[int]float64{1: relStd}},
			},
		},
		styleAssetKey: {
			Href:        portableHref(geo.StylePath(p.ProductPath), root, itemDir),
			Type:        geo.StyleMediaType,
			Title:       "QGIS layer style",
			Description: "QGIS style (.qml) of the product: band 1 as a paletted class map with the class names and colours, no-data transparent. QGIS loads it by default when it lies beside the product.",
			Roles:       []string{"style", "metadata"},
		},
	}
	if p.ReliabilityF32 {
		nan := "nan"
		item.Assets[reliabilityAssetKey] = &stac.Asset{
			Href:        portableHref(geo.ReliabilityPath(p.ProductPath), root, itemDir),
			Type:        cogMediaType,
			Title:       "reliability (Float32, 0..1)",
			Description: "Confidence of the class of band 1 of the classification asset as a fraction 0..1; NaN = no data.",
			Roles:       []string{"data", "reliability"},
			Extensions: []stac.Extension{
				&raster.Asset{Bands: []*raster.Band{{NoData: nan, Sampling: "area", DataType: "float32", Unit: geo.ReliabilityFloatUnit}}},
				&rasterStddev{},
			},
		}
	}
	if p.Probabilities != processor.ProbabilitiesOff {
		item.Assets[probabilitiesAssetKey] = probabilitiesAsset(p, portableHref(geo.ProbabilitiesPath(p.ProductPath), root, itemDir))
	}
	addFileInfo(item, p.Files)
	return item, nil
}

// productBands are the raster:bands of the product asset: class and
// reliability share the product's data type and no-data value.
func productBands(classes []ClassObject, nodata int, st ProductStats) (*raster.Band, *raster.Band, error) {
	dtype := "uint8"
	if nodata == geo.NoDataUInt16 {
		dtype = "uint16"
	} else if nodata != geo.ReliabilityNoDataByte {
		return nil, nil, fmt.Errorf("product no-data %d: want %d or %d", nodata, geo.ReliabilityNoDataByte, geo.NoDataUInt16)
	}
	valid := 0.0
	if total := float64(st.Rows) * float64(st.Cols); total > 0 {
		valid = 100 * float64(st.ValidPixels) / total
	}
	cmin, cmax := classRange(st.ClassCounts)
	classBand := &raster.Band{
		NoData: nodata, Sampling: "area", DataType: dtype,
		Statistics: &raster.Statistics{Minimum: &cmin, Maximum: &cmax, ValidPercent: &valid},
	}
	relMin, relMax, relMean := st.RelMin, st.RelMax, st.RelMean
	relBand := &raster.Band{
		NoData: nodata, Sampling: "area", DataType: dtype, Unit: geo.ReliabilityUnit,
		Statistics: &raster.Statistics{Minimum: &relMin, Maximum: &relMax, Mean: &relMean, ValidPercent: &valid},
	}
	return classBand, relBand, nil
}

// ClassObjects are the classification class objects of a model's classes.
func ClassObjects(classes []geo.ClassInfo) []ClassObject {
	out := make([]ClassObject, 0, len(classes))
	for _, c := range classes {
		out = append(out, ClassObject{
			Value: c.Value, Name: c.Name,
			Description: fmt.Sprintf("Pixels the model labels %s (class value %d)", c.Name, c.Value),
			ColorHint:   fmt.Sprintf("%02X%02X%02X", c.Color[0], c.Color[1], c.Color[2]),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
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

// itemDatetime is the acquisition time: the user's (--datetime), else the
// source Item's, else the scene's metadata's; "" when none is known. It
// says which.
func itemDatetime(in Input, info geo.Info, user time.Time) (string, string) {
	if !user.IsZero() {
		return user.UTC().Format(time.RFC3339Nano), datetimeFromUser
	}
	if t, err := time.Parse(time.RFC3339Nano, in.ItemDatetime); err == nil {
		return t.UTC().Format(time.RFC3339Nano), datetimeFromItem
	}
	if t, ok := SceneDatetime(info.Metadata); ok {
		return t.UTC().Format(time.RFC3339Nano), datetimeFromScene
	}
	return "", ""
}

// sceneDatetimeKeys are the metadata items that carry an acquisition time:
// GDAL's ACQUISITIONDATETIME (several drivers), an ENVI header's
// "acquisition time", and TIFFTAG_DATETIME (the TIFF's DateTime, which cameras and
// most producers set to the acquisition).
var sceneDatetimeKeys = []string{"ACQUISITIONDATETIME", "ACQUISITION_DATETIME", geo.MetaENVIAcquisitionTime, "acquisition_datetime", "ACQUISITION_TIME",
	"acquisition_time", "acquisition time", "DATETIME", "TIFFTAG_DATETIME"}

// SceneDatetime reads the acquisition time from a scene's metadata.
func SceneDatetime(md map[string]string) (time.Time, bool) {
	for _, k := range sceneDatetimeKeys {
		v, ok := md[k]
		if !ok {
			continue
		}
		if t, ok := ParseDatetime(v); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// ParseDatetime reads a time as RFC 3339, ISO 8601 with a "+0000" zone
// (NetCDF's time_coverage_start in EMIT and AVIRIS-3 files), TIFF's
// "2006:01:02 15:04:05", or a date; times without zone are UTC.
func ParseDatetime(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700", "2006:01:02 15:04:05", "2006-01-02 15:04:05",
		"2006-01-02T15:04:05", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, strings.TrimSpace(v)); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// portableHref writes a local target relative to base (the Item's
// directory) when it lies under root (the Collection's or the Item's
// directory), so that the tree can be moved or served as it is; a local
// target elsewhere stays an absolute path (a relative one would climb out
// of the tree and break when either moves). URLs and /vsi paths stay as
// they are.
func portableHref(target, root, base string) string {
	if isURL(target) || strings.HasPrefix(target, "/vsi") || strings.Contains(target, "://") {
		return target
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return filepath.ToSlash(target)
	}
	ra, err1 := filepath.Abs(root)
	ba, err2 := filepath.Abs(base)
	if err1 == nil && err2 == nil {
		if r, err := filepath.Rel(ra, abs); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			if rel, err := filepath.Rel(ba, abs); err == nil {
				return filepath.ToSlash(rel)
			}
		}
	}
	return filepath.ToSlash(abs)
}
