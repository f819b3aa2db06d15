package stac

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"

	"github.com/pnec/pnec/internal/tempfiles"
)

// CatalogFile is the name of the root Catalog pnec batch keeps in an
// output folder without a Collection.
const CatalogFile = "catalog.json"

// CatalogMeta is what a root Catalog says of itself.
type CatalogMeta struct {
	ID string
	// BaseURL is the public URL of the Catalog's directory; "" = unknown,
	// and the Catalog has no self link (STAC wants it absolute).
	BaseURL string
}

// AddToCatalog adds the Item at itemPath to the STAC Catalog file catPath
// (an item link relative to the Catalog), creating it when absent, under
// the same rules as AddToCollection: concurrent writers (jobs, shards)
// are serialised by a lock on the Catalog's directory and the file is
// replaced atomically. The sweep of stale temporaries spares what keep
// reports.
func AddToCatalog(catPath string, meta CatalogMeta, itemPath string, keep func(string) bool) error {
	return updateLocked(catPath, keep, func() error {
		cat, err := readCatalog(catPath, meta.ID)
		if err != nil {
			return err
		}
		if _, ok := cat["title"]; !ok {
			cat["title"] = "pnec land-cover maps: " + meta.ID
		}
		if d, _ := cat["description"].(string); d == "" {
			cat["description"] = "Land-cover maps classified by pnec (PNEC-Mamba) from hyperspectral scenes, one STAC Item per scene " +
				"with its COG (band 1 class, band 2 reliability), QGIS style and thumbnail."
		}
		cat["links"] = collectionLinks(cat, catPath, ItemHref(catPath, itemPath), meta.BaseURL)
		out, err := json.MarshalIndent(cat, "", "  ")
		if err != nil {
			return fmt.Errorf("catalog %s: %w", catPath, err)
		}
		return writeFileAtomic(catPath, append(out, '\n'))
	})
}

// updateLocked runs update with the lock of path's directory held (the
// directory itself, opened read-only, so no lock file is left beside the
// document) after removing stale temporaries of path.
func updateLocked(path string, keep func(string) bool, update func() error) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	lock := flock.New(dir, flock.SetFlag(os.O_RDONLY))
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("lock directory %s: %w", dir, err)
	}
	defer lock.Close()
	tempfiles.RemoveTemps(dir, collectionTempKey(path), keep)
	return update()
}

// readCatalog reads the Catalog at catPath, or makes an empty one with id
// when there is none; kept an untyped object, as a Collection is, so that
// members others added stay.
func readCatalog(catPath, id string) (map[string]any, error) {
	b, err := os.ReadFile(catPath)
	switch {
	case err == nil:
		cat := map[string]any{}
		if err := json.Unmarshal(b, &cat); err != nil {
			return nil, fmt.Errorf("catalog %s: bad JSON: %w", catPath, err)
		}
		if cat["type"] != "Catalog" {
			return nil, fmt.Errorf("catalog %s: type %v, want Catalog", catPath, cat["type"])
		}
		return cat, nil
	case errors.Is(err, fs.ErrNotExist):
		return map[string]any{"type": "Catalog", "stac_version": Version, "id": id, "links": []any{}}, nil
	}
	return nil, fmt.Errorf("catalog %s: %w", catPath, err)
}

// CheckRootFile refuses, before any work, an existing file at path that is
// not a STAC document of kind ("Catalog" or "Collection"); a missing one
// is fine (made with the first Item).
func CheckRootFile(path, kind string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", lower(kind), path, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s %s: bad JSON: %w", lower(kind), path, err)
	}
	if doc["type"] != kind {
		return fmt.Errorf("%s %s: type %v, want %s", lower(kind), path, doc["type"], kind)
	}
	return nil
}

func lower(kind string) string {
	if kind == "Catalog" {
		return "catalog"
	}
	return "collection"
}

// RootItems returns the item hrefs a Catalog or Collection file links to,
// relative to its directory (empty when it does not exist or is unreadable).
func RootItems(path string) map[string]bool { return CollectionItems(path) }
