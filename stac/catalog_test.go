package stac

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pnec/pnec/internal/stacschema"
)

const catalogSchema = "https://schemas.stacspec.org/v1.0.0/catalog-spec/json-schema/catalog.json"

// TestAddToCatalogConcurrent: writers adding Items at once (jobs, shards)
// each keep their link: the Catalog ends with every Item once, valid,
// relative links, a relative root, no self without a base URL, and no
// temporary left; a second night adds to it and keeps members others added.
func TestAddToCatalogConcurrent(t *testing.T) {
	dir := t.TempDir()
	cat := filepath.Join(dir, CatalogFile)
	meta := CatalogMeta{ID: "night"}
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- AddToCatalog(cat, meta, filepath.Join(dir, fmt.Sprintf("s%02d.json", i)), nil)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(want int) map[string]any {
		t.Helper()
		b, err := os.ReadFile(cat)
		if err != nil {
			t.Fatal(err)
		}
		if err := stacschema.Store(t).Validate(b, catalogSchema); err != nil {
			t.Error(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		items, roots := map[string]int{}, 0
		for _, l := range m["links"].([]any) {
			l := l.(map[string]any)
			switch l["rel"] {
			case "item":
				items[l["href"].(string)]++
			case "root":
				roots++
				if l["href"] != CatalogFile {
					t.Errorf("root link %v, want %s", l, CatalogFile)
				}
			case "self":
				t.Errorf("self link %v without a base URL", l)
			}
		}
		if len(items) != want || roots != 1 {
			t.Errorf("%d distinct item links (%v) and %d root links, want %d and 1", len(items), items, roots, want)
		}
		for h, c := range items {
			if c != 1 || strings.Contains(h, "/") {
				t.Errorf("item link %s %d times: want once, relative", h, c)
			}
		}
		return m
	}
	m := check(n)
	if m["type"] != "Catalog" || m["id"] != "night" || m["description"] == "" {
		t.Errorf("catalog %v", m)
	}
	// Another tool's member stays; a second night's Item is added.
	m["sci:doi"] = "10.1234/x"
	b, _ := json.Marshal(m)
	os.WriteFile(cat, b, 0o644)
	if err := AddToCatalog(cat, meta, filepath.Join(dir, "next.json"), nil); err != nil {
		t.Fatal(err)
	}
	if m := check(n + 1); m["sci:doi"] != "10.1234/x" {
		t.Errorf("a member another tool added was dropped: %v", m)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), "tmp") {
			t.Errorf("temporary %s left", e.Name())
		}
	}
	// Not a Catalog: refused.
	os.WriteFile(cat, []byte(`{"type":"Collection"}`), 0o644)
	if err := AddToCatalog(cat, meta, filepath.Join(dir, "x.json"), nil); err == nil {
		t.Error("a Collection at catalog.json was taken as the Catalog")
	}
	if err := CheckRootFile(cat, "Catalog"); err == nil {
		t.Error("CheckRootFile took a Collection for a Catalog")
	}
}
