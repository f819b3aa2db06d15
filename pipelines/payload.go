package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/stac"
)

// The batch side of a STAC task payload (stac.Payload): its Items are the
// run's inputs, and the output payload lists the Items of the products.

// payloadItem expands one of ExpandOptions.Items: its scene as an Item
// file's, relative hrefs against ItemsBase; the source Item it names is
// its self link (none without one: the payload is no Item).
func (e *expander) payloadItem(i int, raw json.RawMessage) {
	name := fmt.Sprintf("payload#features/%d", i)
	var d stacDoc
	if err := json.Unmarshal(raw, &d); err != nil || d.Type != "Feature" {
		e.fail(name, errors.New("not a STAC Item"))
		return
	}
	loc := e.opts.ItemsBase
	if loc == "" {
		loc = "payload.json" // the working directory
	}
	self := ""
	for _, l := range d.Links {
		if l.Rel == "self" && (stac.IsURL(l.Href) || strings.HasPrefix(l.Href, "/") || strings.Contains(l.Href, "://")) {
			self = l.Href
		}
	}
	n := len(e.out)
	// A payload is the job the orchestrator hands over, as trusted as the
	// command line (which names any local file): its Items' hrefs are not
	// confined to a folder (root ""), unlike those of a catalog given as input.
	e.item(loc, name, "", d)
	if len(e.out) > n {
		e.out[n].Item = self
	}
}

// payloadFeature is the index in the payload's features of the Item an
// input came from (Expand names it payload#features/I), false for inputs
// that did not come from the payload.
func payloadFeature(in Input) (int, bool) {
	var i int
	if n, err := fmt.Sscanf(in.Arg, "payload#features/%d", &i); err != nil || n != 1 || fmt.Sprintf("payload#features/%d", i) != in.Arg {
		return 0, false
	}
	return i, true
}

// checkTemplates resolves, before any work, the path_template of every
// payload Item that is a scene of the run, as the output Item will fill it
// (stac.Payload.CheckTemplate). Before, an unknown variable, or a property
// only the source Item had, failed the Item after its scene was classified.
// It returns each scene's source Item by scene name, for the output Items.
func checkTemplates(p *stac.Payload, cfg *Config, inputs []Input) (map[string]map[string]any, error) {
	sources := map[string]map[string]any{}
	for _, in := range inputs {
		i, ok := payloadFeature(in)
		if !ok || i >= len(p.Features) {
			continue
		}
		var src map[string]any
		if err := json.Unmarshal(p.Features[i], &src); err != nil {
			continue // Expand reported it
		}
		sources[in.Name] = src
		if err := p.CheckTemplate(in.Key, in.ItemID, src, cfg.Collection != ""); err != nil {
			return sources, err
		}
	}
	return sources, nil
}

// RunPayload runs a batch over the payload's Items (besides cfg.Inputs)
// and returns the output payload: the input one with its features
// replaced by the Items of the products done or up to date, with absolute
// hrefs. When the payload's upload_options (or its collection's) have a
// path_template, each product's files and its Item are copied there (a
// local directory, or an object store through GDAL: s3://, gs://, az://,
// /vsi...) and the Item's hrefs and self link name the copies. A failed
// scene is reported as in Run and its Item left out; the error is Run's.
// A run stopped by ctx returns no output payload (nil).
func RunPayload(ctx context.Context, cfg Config, p *stac.Payload) (Summary, map[string]any, error) {
	cfg.Items, cfg.ItemsBase = p.Features, p.Base
	// The output Items have no root (OutputItem drops root and parent
	// links): no Catalog, no HTML page in the task's working folder.
	cfg.noCatalog, cfg.ReportHTML = true, ""
	var sources map[string]map[string]any
	cfg.beforeWork = func(inputs []Input) error {
		var err error
		sources, err = checkTemplates(p, &cfg, inputs)
		if err != nil {
			return err
		}
		return protectInputs(p, &cfg, inputs, sources)
	}
	var mu sync.Mutex
	var done []SceneReport
	cfg.onScene = func(r SceneReport) {
		if (r.Status == StatusDone || r.Status == StatusSkipped) && r.Item != "" {
			mu.Lock()
			done = append(done, r)
			mu.Unlock()
		}
	}
	sum, runErr := Run(ctx, cfg)
	if ctx.Err() != nil {
		// A stopped run's payload would list only what finished before the
		// stop, as if the job were done: none is published.
		return sum, nil, runErr
	}
	sort.Slice(done, func(i, j int) bool { return done[i].Item < done[j].Item })
	features := make([]any, 0, len(done))
	var errs []error
	for _, r := range done {
		item, err := p.OutputItem(r.Item, sources[r.Input])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Input, err))
			continue
		}
		features = append(features, item)
	}
	out := p.Output(features)
	if len(errs) > 0 {
		return sum, out, errors.Join(append([]error{runErr}, errs...)...)
	}
	return sum, out, runErr
}

// protectInputs refuses, before any work, a path_template that puts a
// product's files or its Item onto one of the run's inputs (a template
// resolving to the scenes' folder would replace each scene with its
// product), where the source Item alone fills the template
// (stac.Payload.UploadDir), and makes the uploads refuse them in any case
// (stac.Payload.Protect).
func protectInputs(p *stac.Payload, cfg *Config, inputs []Input, sources map[string]map[string]any) error {
	// The run's inputs are listed (a read of every local scene's first
	// bytes, for its VRT sources) only when a copy is to be checked: a
	// payload without a path_template pays nothing.
	var ins *samefile.Set
	var once sync.Once
	check := func(path string) error {
		once.Do(func() { ins = cfg.inputSet(inputs) })
		return ins.Check(samefile.Named{Path: path, Role: "a copy the path_template makes,"})
	}
	p.Protect(check)
	for _, in := range inputs {
		src, ok := sources[in.Name]
		if !ok {
			continue
		}
		dir, ok := p.UploadDir(in.Key, src)
		if !ok {
			continue
		}
		product := filepath.Join(cfg.OutDir, in.Key+".tif")
		paths, _ := geo.ProductFiles(product, true)
		paths = append(paths, geo.ProbabilitiesPath(product)+".aux.xml", in.Key+".json")
		for _, f := range paths {
			if err := check(filepath.Join(dir, filepath.Base(f))); err != nil {
				return fmt.Errorf("path_template: %w", err)
			}
		}
	}
	return nil
}
