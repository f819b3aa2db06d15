package stac

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/pnec/pnec/internal/regular"

	"github.com/pnec/pnec/geo"
)

// Extension schemas a Collection uses besides those of its Items.
const ItemAssetsSchema = "https://stac-extensions.github.io/item-assets/v1.0.0/schema.json"

// CollectionMeta is what a Collection says of its products: it gives the
// Collection its title, licence, summaries and item_assets, so that a
// client has the legend without opening an Item.
type CollectionMeta struct {
	ID             string
	License        string // SPDX; "" = "proprietary"
	Classes        []ClassObject
	NoData         int
	ReliabilityF32 bool
	// Thumbnail: the Items have a thumbnail asset (item_assets lists it).
	Thumbnail bool
	// BaseURL is the public URL of the Collection's directory; "" =
	// unknown, and the Collection has no self link (STAC wants it absolute).
	BaseURL string
}

// spdxLike accepts SPDX identifiers and expressions ("MIT", "CC-BY-4.0",
// "Apache-2.0 OR MIT", "GPL-3.0-or-later WITH Classpath-exception-2.0") and
// STAC's "proprietary" and "various".
var spdxLike = regexp.MustCompile(`^[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*$`)

// ErrLicense: a Collection licence is not an SPDX identifier or expression.
var ErrLicense = errors.New("want an SPDX licence identifier or expression (e.g. CC-BY-4.0), proprietary or various")

// CheckLicense refuses a licence that is not an SPDX identifier or expression.
func CheckLicense(l string) error {
	if l == "" || spdxLike.MatchString(l) {
		return nil
	}
	return &LicenseError{License: l}
}

// LicenseError is a Collection licence that is not an SPDX identifier or
// expression (errors.Is(err, ErrLicense) holds).
type LicenseError struct{ License string }

func (e *LicenseError) Error() string { return fmt.Sprintf("licence %q: %v", e.License, ErrLicense) }

func (e *LicenseError) Unwrap() error { return ErrLicense }

// ItemInterval is the [start, end] an Item covers: its datetime twice, or
// its start_datetime and end_datetime when datetime is null.
func ItemInterval(props map[string]any) [2]string {
	if dt, ok := props["datetime"].(string); ok && dt != "" {
		return [2]string{dt, dt}
	}
	s, _ := props["start_datetime"].(string)
	e, _ := props["end_datetime"].(string)
	return [2]string{s, e}
}

// collectionFields sets the fields of a Collection that describe pnec's
// products: title, description, licence, extensions, summaries and
// item_assets (a legend of the classes, the bands and the assets).
func collectionFields(coll map[string]any, meta CollectionMeta) {
	if _, ok := coll["title"]; !ok {
		coll["title"] = "pnec land-cover maps: " + meta.ID
	}
	coll["description"] = "Land-cover maps classified by pnec (PNEC-Mamba) from hyperspectral scenes. " +
		"Each Item's COG has band 1 'class' (colour table, class names inside the TIFF) and band 2 'reliability' " +
		"(percent); both use the same no-data value. A QGIS style (.qml) beside each product draws the class map."
	switch {
	case meta.License != "":
		coll["license"] = meta.License
	case coll["license"] == nil:
		coll["license"] = "proprietary"
	}
	exts := map[string]bool{}
	var list []any
	if cur, ok := coll["stac_extensions"].([]any); ok {
		for _, e := range cur {
			if s, ok := e.(string); ok && !exts[s] {
				exts[s] = true
				list = append(list, s)
			}
		}
	}
	for _, u := range []string{ItemAssetsSchema, ClassificationSchema, RasterSchema, RenderSchema} {
		if !exts[u] {
			list = append(list, u)
		}
	}
	coll["stac_extensions"] = list
	if len(meta.Classes) == 0 {
		return
	}
	classes := meta.Classes
	cb, rb, err := productBands(meta.Classes, meta.NoData, ProductStats{})
	if err != nil {
		return
	}
	cb.Statistics, rb.Statistics = nil, nil
	band := func(name string, b any) map[string]any {
		var m map[string]any
		j, _ := json.Marshal(b)
		json.Unmarshal(j, &m)
		m["name"] = name
		if u, ok := m["units"]; ok { // go-stac's name for raster's "unit"
			delete(m, "units")
			m["unit"] = u
		}
		return m
	}
	classBand := band("class", cb)
	classBand["classification:classes"] = classes
	bands := []any{classBand, band("reliability", rb)}
	coll["summaries"] = map[string]any{
		"classification:classes": classes,
		"raster:bands":           bands,
	}
	assets := map[string]any{
		ProductAssetKey: map[string]any{
			"title": "land-cover class (band 1) and reliability (band 2)", "type": cogMediaType,
			"roles": []any{"data", "classification", "reliability"}, "raster:bands": bands,
		},
		styleAssetKey: map[string]any{
			"title": "QGIS layer style", "type": geo.StyleMediaType, "roles": []any{"style", "metadata"},
		},
	}
	if meta.Thumbnail {
		assets[ThumbnailAssetKey] = map[string]any{"title": "thumbnail of the class map", "type": geo.ThumbnailMediaType, "roles": []any{"thumbnail"}}
	}
	if meta.ReliabilityF32 {
		assets[reliabilityAssetKey] = map[string]any{
			"title": "reliability (Float32, 0..1)", "type": cogMediaType, "roles": []any{"data", "reliability"},
			"raster:bands": []any{map[string]any{"name": "reliability", "data_type": "float32", "nodata": "nan", "unit": geo.ReliabilityFloatUnit, "sampling": "area"}},
		}
	}
	coll["item_assets"] = assets
	coll["renders"] = Renders(meta.Classes, meta.NoData, meta.ReliabilityF32)
}

// AddToCollection adds the Item at itemPath (with WGS84 bbox, may be nil, and
// the interval iv it covers) to the STAC Collection file collPath, creating
// it when absent. Concurrent writers (parallel jobs, other shards on a
// shared volume) are serialised by a lock on the collection's directory;
// the file is replaced atomically, so readers never see a half-written
// collection.
// The sweep of stale temporaries spares what keep reports (the run's inputs).
func AddToCollection(collPath string, meta CollectionMeta, itemPath string, bbox []float64, iv [2]string, keep func(string) bool) error {
	return updateLocked(collPath, keep, func() error {
		coll, err := readCollection(collPath, meta.ID)
		if err != nil {
			return err
		}
		collectionFields(coll, meta)
		coll["links"] = collectionLinks(coll, collPath, ItemHref(collPath, itemPath), meta.BaseURL)
		ext, _ := coll["extent"].(map[string]any)
		if ext == nil {
			ext = map[string]any{}
			coll["extent"] = ext
		}
		if len(bbox) == 4 {
			widenBbox(ext, bbox)
		}
		widenInterval(ext, iv)
		out, err := json.MarshalIndent(coll, "", "  ")
		if err != nil {
			return fmt.Errorf("collection %s: %w", collPath, err)
		}
		return writeFileAtomic(collPath, append(out, '\n'))
	})
}

// readCollection reads the Collection at collPath, or makes an empty one
// with id when there is none. The Collection stays an untyped JSON object,
// unlike the Items (built with go-stac's types): it may be the user's own,
// and go-stac's Collection (v0.34) keeps no member it does not know (no
// additional fields), so a round trip through it would drop members a user
// or another tool added (extension fields such as sci:doi, for one).
func readCollection(collPath, id string) (map[string]any, error) {
	coll := map[string]any{}
	b, err := regular.ReadFile(collPath)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &coll); err != nil {
			return nil, fmt.Errorf("collection %s: bad JSON: %w", collPath, err)
		}
		if coll["type"] != "Collection" {
			return nil, fmt.Errorf("collection %s: type %v, want Collection", collPath, coll["type"])
		}
		return coll, nil
	case errors.Is(err, fs.ErrNotExist):
		return map[string]any{
			"type":         "Collection",
			"stac_version": Version,
			"id":           id,
			"extent": map[string]any{
				"spatial":  map[string]any{"bbox": []any{}},
				"temporal": map[string]any{"interval": []any{[]any{nil, nil}}},
			},
			"links": []any{},
		}, nil
	}
	return nil, fmt.Errorf("collection %s: %w", collPath, err)
}

// collectionLinks are the Collection's links with a root link, its self
// link (withSelf) and the item link to href, each once.
func collectionLinks(coll map[string]any, collPath, href, baseURL string) []any {
	links, _ := coll["links"].([]any)
	found := false
	has := map[string]bool{}
	for _, l := range links {
		if m, ok := l.(map[string]any); ok {
			if m["rel"] == "item" && m["href"] == href {
				found = true
			}
			if r, ok := m["rel"].(string); ok {
				has[r] = true
			}
		}
	}
	// The Collection is its own root: a relative root link keeps the tree
	// portable. self is absolute (the base URL's) or absent: a relative one
	// written by an earlier pnec goes.
	self := filepath.Base(collPath)
	if !has["root"] {
		links = append(links, map[string]any{"rel": "root", "href": self, "type": "application/json"})
	}
	links = withSelf(links, baseURL, self)
	if !found {
		links = append(links, map[string]any{"rel": "item", "href": href, "type": "application/geo+json"})
	}
	return links
}

// widenBbox makes the first bbox of the extent ext cover bbox too.
func widenBbox(ext map[string]any, bbox []float64) {
	sp, _ := ext["spatial"].(map[string]any)
	if sp == nil {
		sp = map[string]any{}
		ext["spatial"] = sp
	}
	boxes, _ := sp["bbox"].([]any)
	union := []float64{bbox[0], bbox[1], bbox[2], bbox[3]}
	if len(boxes) == 0 {
		sp["bbox"] = []any{union}
		return
	}
	if first, ok := boxes[0].([]any); ok && len(first) == 4 {
		for i := 0; i < 4; i++ {
			v, _ := first[i].(float64)
			if i < 2 {
				union[i] = math.Min(union[i], v)
			} else {
				union[i] = math.Max(union[i], v)
			}
		}
	}
	boxes[0] = union
	sp["bbox"] = boxes
}

// widenInterval makes the first interval of the extent ext cover iv too
// (nothing when iv[0] is no RFC 3339 time; iv[1] not one: iv[0]).
func widenInterval(ext map[string]any, iv [2]string) {
	t0, err := time.Parse(time.RFC3339Nano, iv[0])
	if err != nil {
		return
	}
	t1, err := time.Parse(time.RFC3339Nano, iv[1])
	if err != nil {
		t1 = t0
	}
	tp, _ := ext["temporal"].(map[string]any)
	if tp == nil {
		tp = map[string]any{}
		ext["temporal"] = tp
	}
	civ := []any{nil, nil}
	if ivs, ok := tp["interval"].([]any); ok && len(ivs) > 0 {
		if first, ok := ivs[0].([]any); ok && len(first) == 2 {
			civ = first
		}
	}
	for i, t := range []time.Time{t0, t1} {
		cur, _ := civ[i].(string)
		ct, err := time.Parse(time.RFC3339Nano, cur)
		if err != nil || (i == 0 && t.Before(ct)) || (i == 1 && t.After(ct)) {
			civ[i] = t.UTC().Format(time.RFC3339Nano)
		}
	}
	tp["interval"] = []any{civ}
}

// collectionTempKey is the "key" under which writeFileAtomic's temporaries of collPath are found.
func collectionTempKey(collPath string) string {
	b := filepath.Base(collPath)
	return b[:len(b)-len(filepath.Ext(b))]
}

// ItemHref is the href of an Item in a collection's item link: relative to the collection's directory.
func ItemHref(collPath, itemPath string) string {
	ca, err1 := filepath.Abs(filepath.Dir(collPath))
	ia, err2 := filepath.Abs(itemPath)
	if err1 == nil && err2 == nil {
		if rel, err := filepath.Rel(ca, ia); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(itemPath)
}

// CollectionItems returns the item hrefs a collection file links to (empty when it does not exist or is unreadable).
func CollectionItems(collPath string) map[string]bool {
	out := map[string]bool{}
	if collPath == "" {
		return out
	}
	b, err := regular.ReadFile(collPath)
	if err != nil {
		return out
	}
	var c struct {
		Links []struct{ Rel, Href string }
	}
	if json.Unmarshal(b, &c) == nil {
		for _, l := range c.Links {
			if l.Rel == "item" {
				out[l.Href] = true
			}
		}
	}
	return out
}

// AddItemFileToCollection adds an Item already written at itemPath, taking its bbox and interval from the file.
func AddItemFileToCollection(collPath string, meta CollectionMeta, itemPath string, keep func(string) bool) error {
	b, err := os.ReadFile(itemPath)
	if err != nil {
		return fmt.Errorf("collection %s: %w", collPath, err)
	}
	var it struct {
		Bbox       []float64
		Properties map[string]any
	}
	if err := json.Unmarshal(b, &it); err != nil {
		return fmt.Errorf("collection %s: item %s: %w", collPath, itemPath, err)
	}
	return AddToCollection(collPath, meta, itemPath, it.Bbox, ItemInterval(it.Properties), keep)
}

// withSelf is links with one self link, base URL + name, or none without
// a base URL: other self links (a relative one of an earlier pnec, or
// another URL) are dropped.
func withSelf(links []any, baseURL, name string) []any {
	out := links[:0:0]
	for _, l := range links {
		if m, ok := l.(map[string]any); ok && m["rel"] == "self" {
			continue
		}
		out = append(out, l)
	}
	if baseURL != "" {
		out = append(out, map[string]any{"rel": "self", "href": strings.TrimSuffix(baseURL, "/") + "/" + name, "type": "application/json"})
	}
	return out
}
