package pipelines

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// addToCollection adds the Item at itemPath (with WGS84 bbox, may be nil, and
// datetime dt) to the STAC Collection file collPath, creating it when absent.
// Concurrent writers (parallel jobs, other shards on a shared volume) are
// serialised by a lock on the collection's directory; the file is replaced
// atomically, so readers never see a half-written collection.
func addToCollection(collPath, collID, itemPath string, bbox []float64, dt string) error {
	dir := filepath.Dir(collPath)
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("collection %s: %w", collPath, err)
	}
	defer d.Close()
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock collection directory %s: %w", dir, err)
	}
	defer syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
	removeTemps(dir, collectionTempKey(collPath))

	coll := map[string]any{}
	b, err := os.ReadFile(collPath)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &coll); err != nil {
			return fmt.Errorf("collection %s: bad JSON: %w", collPath, err)
		}
		if coll["type"] != "Collection" {
			return fmt.Errorf("collection %s: type %v, want Collection", collPath, coll["type"])
		}
	case errors.Is(err, fs.ErrNotExist):
		coll = map[string]any{
			"type":         "Collection",
			"stac_version": STACVersion,
			"id":           collID,
			"description":  "Land-cover maps classified by pnec (PNEC-Mamba) from hyperspectral scenes.",
			"license":      "proprietary",
			"extent": map[string]any{
				"spatial":  map[string]any{"bbox": []any{}},
				"temporal": map[string]any{"interval": []any{[]any{nil, nil}}},
			},
			"links": []any{},
		}
	default:
		return fmt.Errorf("collection %s: %w", collPath, err)
	}

	href := itemHref(collPath, itemPath)
	links, _ := coll["links"].([]any)
	found := false
	for _, l := range links {
		if m, ok := l.(map[string]any); ok && m["rel"] == "item" && m["href"] == href {
			found = true
		}
	}
	if !found {
		links = append(links, map[string]any{"rel": "item", "href": href, "type": "application/geo+json"})
	}
	coll["links"] = links

	ext, _ := coll["extent"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
		coll["extent"] = ext
	}
	if len(bbox) == 4 {
		sp, _ := ext["spatial"].(map[string]any)
		if sp == nil {
			sp = map[string]any{}
			ext["spatial"] = sp
		}
		boxes, _ := sp["bbox"].([]any)
		union := []float64{bbox[0], bbox[1], bbox[2], bbox[3]}
		if len(boxes) > 0 {
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
		} else {
			boxes = []any{union}
		}
		sp["bbox"] = boxes
	}
	if t, err := time.Parse(time.RFC3339Nano, dt); err == nil {
		tp, _ := ext["temporal"].(map[string]any)
		if tp == nil {
			tp = map[string]any{}
			ext["temporal"] = tp
		}
		iv := []any{nil, nil}
		if ivs, ok := tp["interval"].([]any); ok && len(ivs) > 0 {
			if first, ok := ivs[0].([]any); ok && len(first) == 2 {
				iv = first
			}
		}
		for i, earlier := range []bool{true, false} {
			cur, _ := iv[i].(string)
			ct, err := time.Parse(time.RFC3339Nano, cur)
			if err != nil || (earlier && t.Before(ct)) || (!earlier && t.After(ct)) {
				iv[i] = t.UTC().Format(time.RFC3339Nano)
			}
		}
		tp["interval"] = []any{iv}
	}
	out, err := json.MarshalIndent(coll, "", "  ")
	if err != nil {
		return fmt.Errorf("collection %s: %w", collPath, err)
	}
	return writeFileAtomic(collPath, append(out, '\n'))
}

// collectionTempKey is the "key" under which writeFileAtomic's temporaries of collPath are found.
func collectionTempKey(collPath string) string {
	b := filepath.Base(collPath)
	return b[:len(b)-len(filepath.Ext(b))]
}

// itemHref is the href of an Item in a collection's item link: relative to the collection's directory.
func itemHref(collPath, itemPath string) string {
	ca, err1 := filepath.Abs(filepath.Dir(collPath))
	ia, err2 := filepath.Abs(itemPath)
	if err1 == nil && err2 == nil {
		if rel, err := filepath.Rel(ca, ia); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(itemPath)
}

// collectionItems returns the item hrefs a collection file links to (empty when it does not exist or is unreadable).
func collectionItems(collPath string) map[string]bool {
	out := map[string]bool{}
	if collPath == "" {
		return out
	}
	b, err := os.ReadFile(collPath)
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

// addItemFileToCollection adds an Item already written at itemPath, taking its bbox and datetime from the file.
func addItemFileToCollection(collPath, collID, itemPath string) error {
	b, err := os.ReadFile(itemPath)
	if err != nil {
		return fmt.Errorf("collection %s: %w", collPath, err)
	}
	var it struct {
		Bbox       []float64
		Properties struct {
			Datetime string
		}
	}
	if err := json.Unmarshal(b, &it); err != nil {
		return fmt.Errorf("collection %s: item %s: %w", collPath, itemPath, err)
	}
	return addToCollection(collPath, collID, itemPath, it.Bbox, it.Properties.Datetime)
}
