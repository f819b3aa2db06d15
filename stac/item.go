package stac

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
	gostac "github.com/planetlabs/go-stac"
	raster "github.com/planetlabs/go-stac/extensions/raster/v1"

	"github.com/pnec/pnec/geo"
)

// STAC versions and extension schemas the Items follow (shipped under testdata/stac/schemas).
const (
	Version              = "1.0.0"
	ClassificationSchema = "https://stac-extensions.github.io/classification/v1.1.0/schema.json"
	ProjectionSchema     = "https://stac-extensions.github.io/projection/v1.1.0/schema.json"
	ProcessingSchema     = "https://stac-extensions.github.io/processing/v1.2.0/schema.json"
	RasterSchema         = "https://stac-extensions.github.io/raster/v1.1.0/schema.json"
	cogMediaType         = "image/tiff; application=geotiff; profile=cloud-optimized"
	ProductAssetKey      = "classification"
	reliabilityAssetKey  = "reliability"
	styleAssetKey        = "style"
	// ThumbnailAssetKey is the thumbnail's asset (role thumbnail).
	ThumbnailAssetKey  = "thumbnail"
	propDatetimeSource = "pnec:datetime_source"
	propBackend        = "pnec:backend"
	datetimeFromItem   = "source-item"
	datetimeFromScene  = "scene-metadata"
	datetimeFromUser   = "user" // --datetime
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

var _ gostac.Extension = (*Classification)(nil)

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
func (r *rasterStddev) Decode(map[string]any) error { return gostac.ErrExtensionDoesNotApply }

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
	return gostac.ErrExtensionDoesNotApply
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

var _ gostac.Extension = (*Projection)(nil)

func (*Projection) URI() string { return ProjectionSchema }
func (p *Projection) Encode(item map[string]any) error {
	return gostac.EncodeExtendedItemProperties(p, item)
}
func (p *Projection) Decode(item map[string]any) error {
	return gostac.DecodeExtendedItemProperties(p, item)
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

var _ gostac.Extension = (*Processing)(nil)

func (*Processing) URI() string { return ProcessingSchema }
func (p *Processing) Encode(item map[string]any) error {
	return gostac.EncodeExtendedItemProperties(p, item)
}
func (p *Processing) Decode(item map[string]any) error {
	return gostac.DecodeExtendedItemProperties(p, item)
}

// ProductStats describe a product's stored pixels (see geo.ProductStats).
type ProductStats = geo.ProductStats

// ItemParams is what BuildItem needs to describe one product.
type ItemParams struct {
	// ID is the Item's id (the product's key); Scene the dataset the
	// product was made from, as the batch named it.
	ID, Scene string
	// SourceItem is the STAC Item the scene came from ("" when it was a
	// file), SourceItemDatetime its datetime ("" when none or unknown).
	SourceItem, SourceItemDatetime string
	ProductPath                    string // the COG
	ItemPath                       string // where the Item JSON goes (the asset href is relative to it)
	Info                           geo.Info
	Stats                          ProductStats
	Classes                        []ClassObject
	ReliabilityF32                 bool
	// Thumbnail: the product has its thumbnail (geo.ThumbnailPath), an
	// asset with role thumbnail.
	Thumbnail     bool
	ModelChecksum string
	Backend       string
	Version       string // pnec version
	Source        SourceRecord
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
	// CatalogPath is the root Catalog the Item belongs to when there is no
	// Collection ("" = none): the root and parent links point at it.
	CatalogPath string
	// Datetime, when not zero, is the acquisition time the user gave; it
	// wins over the scene's. With DatetimeEnd it is the start of an
	// interval: datetime null, start_datetime..end_datetime.
	Datetime, DatetimeEnd time.Time
	// NoData is the value both product bands store for no data (geo.ProductNoData).
	NoData int
	// Probabilities describe the class probabilities file beside the
	// product; none when its Stage is "".
	Probabilities Probabilities
	// Shard, Engine and JobID are the batch process's share of the inputs
	// ("" when not sharded) and the scheduler it ran under, recorded as
	// pnec:shard, pnec:engine and pnec:job_id when not "".
	Shard, Engine, JobID string
	// DriftVerdict and Drift are the scene's drift verdict and its figures
	// (drift.JSON), recorded as pnec:drift_verdict and pnec:drift;
	// Drift nil: none measured.
	DriftVerdict string
	Drift        map[string]any
}

// Properties of the drift (docs/acquisitions.md).
const (
	propDriftVerdict = "pnec:drift_verdict"
	propDrift        = "pnec:drift"
)

// tree is where an Item's hrefs are written from: its directory, and the
// root (the Collection's directory, else the Item's) under which local
// targets are written relative (PortableHref).
type tree struct{ root, dir string }

func itemTree(p ItemParams) tree {
	t := tree{root: filepath.Dir(p.ItemPath), dir: filepath.Dir(p.ItemPath)}
	if p.CollectionPath != "" {
		t.root = filepath.Dir(p.CollectionPath)
	} else if p.CatalogPath != "" {
		t.root = filepath.Dir(p.CatalogPath)
	}
	return t
}

// href is target as the Item names it.
func (t tree) href(target string) string { return PortableHref(target, t.root, t.dir) }

// BuildItem makes the STAC Item describing a product. Hrefs of local files
// are relative to the Item when they lie under its root (the Collection's
// directory, else the Item's), absolute otherwise; URLs stay as they are.
func BuildItem(p ItemParams) (*gostac.Item, error) {
	props, err := itemProperties(p)
	if err != nil {
		return nil, err
	}
	t := itemTree(p)
	item := &gostac.Item{Version: Version, Id: p.ID, Properties: props, Collection: p.CollectionID}
	if g, bbox := footprint(p.Info.FootprintWGS84); g != nil {
		item.Geometry, item.Bbox = g, bbox
	} else {
		props["pnec:georeferenced"] = false // no CRS: geometry null, as STAC allows
	}
	var modelHref string
	if p.ModelItem != "" {
		modelHref = t.href(p.ModelItem)
	}
	item.Links = itemLinks(p, t, modelHref)
	item.Extensions = []gostac.Extension{projection(p.Info, item.Bbox), processing(p, t, modelHref),
		&render{Renders: Renders(p.Classes, p.NoData, p.ReliabilityF32)}}
	if item.Assets, err = productAssets(p, t); err != nil {
		return nil, err
	}
	addFileInfo(item, p.Files)
	return item, nil
}

// itemProperties are the Item's properties but those of its extensions:
// what pnec records of the run, and the acquisition time.
func itemProperties(p ItemParams) (map[string]any, error) {
	props := map[string]any{
		"created":         p.Now.UTC().Format(time.RFC3339),
		PropSource:        p.Source,
		PropModelChecksum: p.ModelChecksum,
		PropProductFormat: ProductFormat,
		propBackend:       p.Backend,
	}
	for k, v := range map[string]string{"pnec:shard": p.Shard, "pnec:engine": p.Engine, "pnec:job_id": p.JobID} {
		if v != "" {
			props[k] = v
		}
	}
	if c := classCounts(p.Stats.ClassCounts); len(c) > 0 {
		props[PropClassCounts] = c
	}
	if p.Drift != nil {
		props[propDriftVerdict] = p.DriftVerdict
		props[propDrift] = p.Drift
	}
	switch dt, dtSource := itemDatetime(p.SourceItemDatetime, p.Info, p.Datetime); {
	case !p.Datetime.IsZero() && !p.DatetimeEnd.IsZero():
		// The user's interval: STAC's datetime null with its bounds.
		props["datetime"] = nil
		props["start_datetime"] = p.Datetime.UTC().Format(time.RFC3339Nano)
		props["end_datetime"] = p.DatetimeEnd.UTC().Format(time.RFC3339Nano)
		props[propDatetimeSource] = datetimeFromUser
	case dt == "":
		return nil, fmt.Errorf("%s: %w", p.Scene, ErrNoDatetime)
	default:
		props["datetime"] = dt
		props[propDatetimeSource] = dtSource
	}
	return props, nil
}

// footprint is the GeoJSON geometry and bbox of a WGS84 footprint (rings
// closed, as GeoJSON wants them); nil, nil without one.
func footprint(fp orb.Polygon) (*geojson.Geometry, []float64) {
	if len(fp) == 0 || len(fp[0]) < 4 {
		return nil, nil
	}
	var poly orb.Polygon
	for _, ring := range fp {
		r := append(orb.Ring(nil), ring...)
		if len(r) > 0 && r[0] != r[len(r)-1] {
			r = append(r, r[0]) // GeoJSON rings are closed
		}
		poly = append(poly, r)
	}
	b := fp.Bound()
	return geojson.NewGeometry(poly), []float64{b.Min[0], b.Min[1], b.Max[0], b.Max[1]}
}

// itemLinks: the Item itself (only absolute, with a base URL), its
// collection (root and parent too), the source Item when the input was one
// (a scene file is no STAC object: the lineage names it) and the model's
// Item (at modelHref).
func itemLinks(p ItemParams, t tree, modelHref string) []*gostac.Link {
	var links []*gostac.Link
	if self := selfHref(p.BaseURL, p.ItemPath, t.root); self != "" {
		links = append(links, &gostac.Link{Rel: "self", Href: self, Type: geojsonMediaType})
	}
	switch {
	case p.CollectionPath != "":
		c := t.href(p.CollectionPath)
		for _, rel := range []string{"root", "parent", "collection"} {
			links = append(links, &gostac.Link{Rel: rel, Href: c, Type: "application/json"})
		}
	case p.CatalogPath != "":
		c := t.href(p.CatalogPath)
		for _, rel := range []string{"root", "parent"} {
			links = append(links, &gostac.Link{Rel: rel, Href: c, Type: "application/json"})
		}
	}
	if p.SourceItem != "" {
		links = append(links, &gostac.Link{Rel: "derived_from", Href: t.href(p.SourceItem),
			Type: geojsonMediaType, Title: "source STAC Item"})
	}
	if modelHref != "" {
		links = append(links, &gostac.Link{Rel: "derived_from", Href: modelHref, Type: geojsonMediaType,
			Title: fmt.Sprintf("model %s (STAC Item, machine learning model extension)", p.ModelName)})
	}
	return links
}

// projection is the projection extension of a product: only what the
// product has (no geotransform, no transform); the centroid is bbox's.
func projection(info geo.Info, bbox []float64) *Projection {
	proj := &Projection{Shape: []int{info.Rows, info.Cols}}
	gt := info.GeoTransform
	if info.HasGeoTransform && gt != ([6]float64{}) {
		proj.Transform = []float64{gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]}
		if info.WKT != "" || info.EPSG != 0 {
			proj.BBox = cornersBound(gt, info.Cols, info.Rows)
		}
	}
	if info.EPSG != 0 {
		e := info.EPSG
		proj.EPSG = &e
	} else if isWKT2(info.WKT) {
		proj.WKT2 = info.WKT
	}
	if len(bbox) == 4 {
		proj.Centroid = &LatLonObj{Lat: (bbox[1] + bbox[3]) / 2, Lon: (bbox[0] + bbox[2]) / 2}
	}
	return proj
}

// cornersBound is the [xmin, ymin, xmax, ymax] of a raster's four corners
// through its geotransform.
func cornersBound(gt [6]float64, cols, rows int) []float64 {
	xs, ys := []float64{}, []float64{}
	for _, c := range [][2]float64{{0, 0}, {float64(cols), 0}, {0, float64(rows)}, {float64(cols), float64(rows)}} {
		xs = append(xs, gt[0]+c[0]*gt[1]+c[1]*gt[2])
		ys = append(ys, gt[3]+c[0]*gt[4]+c[1]*gt[5])
	}
	sort.Float64s(xs)
	sort.Float64s(ys)
	return []float64{xs[0], ys[0], xs[3], ys[3]}
}

// processing is the processing extension of a product: its lineage, level,
// time, software and, with a model Item (at modelHref), its expression.
func processing(p ItemParams, t tree, modelHref string) *Processing {
	proc := &Processing{
		Lineage:  lineage(p, t),
		Level:    processingLevel,
		Datetime: p.Now.UTC().Format(time.RFC3339),
		Software: map[string]string{"pnec": p.Version},
	}
	if modelHref != "" {
		proc.Expression = &ProcessingExpression{Format: "stac-mlm", Expression: modelHref}
	}
	return proc
}

// lineage says in words what the product was made from and how.
func lineage(p ItemParams, t tree) string {
	src := p.SourceItem
	if src == "" {
		src = p.Scene
	}
	l := fmt.Sprintf("PNEC-Mamba land-cover classification of %s with model sha256:%s on backend %s",
		t.href(src), p.ModelChecksum, p.Backend)
	if p.Source.Mask != "" {
		l += ", within the area of interest " + p.Source.Mask
	}
	if p.QualityMasks != "" {
		l += ", pixels flagged by the quality masks " + p.QualityMasks + " left unclassified"
	}
	return l
}

// productAssets are the Item's assets: the product, its QGIS style, and
// the Float32 reliability and class probabilities files when made.
func productAssets(p ItemParams, t tree) (map[string]*gostac.Asset, error) {
	classBand, relBand, err := productBands(p.Classes, p.NoData, p.Stats)
	if err != nil {
		return nil, err
	}
	assets := map[string]*gostac.Asset{
		ProductAssetKey: {
			Href:  t.href(p.ProductPath),
			Type:  cogMediaType,
			Title: "land-cover class (band 1) and reliability (band 2)",
			Description: fmt.Sprintf("Band 1 'class': class value (colour table and class names inside the TIFF). "+
				"Band 2 'reliability': confidence of the class in percent (0-100). Both bands: %d = no data.", p.NoData),
			Roles: []string{"data", "classification", "reliability"},
			Extensions: []gostac.Extension{
				&raster.Asset{Bands: []*raster.Band{classBand, relBand}},
				&Classification{Band: 0, Classes: p.Classes},
				&rasterStddev{stddev: map[int]float64{1: p.Stats.RelStdev}},
			},
		},
		styleAssetKey: {
			Href:        t.href(geo.StylePath(p.ProductPath)),
			Type:        geo.StyleMediaType,
			Title:       "QGIS layer style",
			Description: "QGIS style (.qml) of the product: band 1 as a paletted class map with the class names and colours, no-data transparent. QGIS loads it by default when it lies beside the product.",
			Roles:       []string{"style", "metadata"},
		},
	}
	if p.ReliabilityF32 {
		assets[reliabilityAssetKey] = reliabilityAsset(t.href(geo.ReliabilityPath(p.ProductPath)))
	}
	if p.Thumbnail {
		assets[ThumbnailAssetKey] = thumbnailAsset(t.href(geo.ThumbnailPath(p.ProductPath)))
	}
	if p.Probabilities.Stage != "" {
		assets[ProbabilitiesAssetKey] = probabilitiesAsset(p, t.href(geo.ProbabilitiesPath(p.ProductPath)))
	}
	return assets, nil
}

// reliabilityAsset describes the Float32 reliability file at href.
func reliabilityAsset(href string) *gostac.Asset {
	return &gostac.Asset{
		Href:        href,
		Type:        cogMediaType,
		Title:       "reliability (Float32, 0..1)",
		Description: "Confidence of the class of band 1 of the classification asset as a fraction 0..1; NaN = no data.",
		Roles:       []string{"data", "reliability"},
		Extensions: []gostac.Extension{
			&raster.Asset{Bands: []*raster.Band{{NoData: "nan", Sampling: "area", DataType: "float32", Unit: geo.ReliabilityFloatUnit}}},
			&rasterStddev{},
		},
	}
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
func itemDatetime(sourceItemDatetime string, info geo.Info, user time.Time) (string, string) {
	if !user.IsZero() {
		return user.UTC().Format(time.RFC3339Nano), datetimeFromUser
	}
	if t, err := time.Parse(time.RFC3339Nano, sourceItemDatetime); err == nil {
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
