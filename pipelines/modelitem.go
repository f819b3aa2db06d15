package pipelines

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/stac"
)

// The model's STAC Item a run's products point at (stac.BuildModelItem
// makes it): which one, and writing it when the run must.

// modelItem is the STAC Item of the model a run uses, which its products'
// Items point at (derived_from, processing:expression) by an href that is
// never a local path outside the Items' root (an absolute local path is a
// broken link for every consumer of a published catalog): the Item given
// (Config.ModelItem: a URL, or a path under the root); else the one beside
// the model file when it describes this model (its pnec:model_checksum) and
// lies under the root, or, elsewhere, by its absolute self URL (pnec train
// --stac-base-url, pnec model-item --stac-base-url); else one the run writes
// into its output directory, when the first product is described (a run
// whose scenes all fail leaves none). A model given as a value (library
// use, no file) has none: href "".
type modelItem struct {
	href, name string
	write      *stac.ModelItemParams // the Item still to write at href; nil: none to write
	once       sync.Once
	err        error
}

// itemsRoot is the directory the Items' relative hrefs stay under: the
// Collection's, else the output directory.
func (cfg *Config) itemsRoot() string {
	if cfg.Collection != "" {
		return filepath.Dir(cfg.Collection)
	}
	return cfg.OutDir
}

// underRoot reports whether the local path p lies under the Items' root
// (portableHref then writes it relative).
func (cfg *Config) underRoot(p string) bool {
	root := cfg.itemsRoot()
	h := stac.PortableHref(p, root, root)
	return !filepath.IsAbs(h) && !strings.HasPrefix(h, "../")
}

// ErrModelItemOutside: Config.ModelItem is a local file outside the Items'
// root, which every Item would name by an absolute local path.
var ErrModelItemOutside = errors.New("the model's STAC Item lies outside the Items' root")

// checkModelItemHref refuses, before any work, a Config.ModelItem that
// every Item would name by an absolute local path.
func (cfg *Config) checkModelItemHref() error {
	h := cfg.ModelItem
	if h == "" || isRemote(h) || strings.Contains(h, "://") || strings.HasPrefix(h, "/vsi") || cfg.underRoot(h) {
		return nil
	}
	return fmt.Errorf("%s: %w %s: every Item would name it by an absolute local path; give its URL, or a path under %s",
		h, ErrModelItemOutside, cfg.itemsRoot(), cfg.itemsRoot())
}

func newModelItem(cfg *Config, m *model.Model, now time.Time) (*modelItem, error) {
	if cfg.ModelItem != "" {
		return &modelItem{href: cfg.ModelItem, name: stac.ModelName(cfg.ModelPath)}, nil
	}
	if cfg.ModelPath == "" || m == nil {
		return &modelItem{}, nil
	}
	mi := &modelItem{name: stac.ModelName(cfg.ModelPath), href: stac.ModelItemPath(cfg.ModelPath)}
	if b, err := os.ReadFile(mi.href); err == nil {
		var doc struct {
			Properties map[string]any `json:"properties"`
			Links      []struct {
				Rel, Href string
			} `json:"links"`
		}
		if json.Unmarshal(b, &doc) == nil && doc.Properties[stac.PropModelChecksum] == m.Checksum() {
			if n, ok := doc.Properties["mlm:name"].(string); ok && stac.CheckModelName(n) == nil {
				mi.name = n // as the Item names it (model-item --model-name)
			}
			if cfg.underRoot(mi.href) {
				return mi, nil
			}
			for _, l := range doc.Links {
				if l.Rel == "self" && (strings.HasPrefix(l.Href, "https://") || strings.HasPrefix(l.Href, "http://")) {
					mi.href = l.Href // where it is published
					return mi, nil
				}
			}
			// Elsewhere on this machine only: a copy goes into the catalog.
		}
	}
	st, err := os.Stat(cfg.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", cfg.ModelPath, err)
	}
	mi.href = filepath.Join(cfg.OutDir, filepath.Base(stac.ModelItemPath(cfg.ModelPath)))
	mi.write = &stac.ModelItemParams{Model: m, ModelPath: cfg.ModelPath, ItemPath: mi.href, Name: mi.name, Datetime: st.ModTime(), Now: now}
	if base := cfg.STACBaseURL; base != "" {
		// The public URL of the output directory, under the root's.
		if rel := stac.PortableHref(cfg.OutDir, cfg.itemsRoot(), cfg.itemsRoot()); rel == "." {
			mi.write.BaseURL = base
		} else if cfg.underRoot(cfg.OutDir) {
			mi.write.BaseURL = strings.TrimSuffix(base, "/") + "/" + rel
		}
	}
	return mi, nil
}

// ensure writes the Item when the run must (once); the error stays.
func (mi *modelItem) ensure() error {
	mi.once.Do(func() {
		if mi.write != nil {
			if err := stac.WriteModelItem(*mi.write); err != nil {
				mi.err = fmt.Errorf("model STAC item %s: %w", mi.href, err)
			}
		}
	})
	return mi.err
}
