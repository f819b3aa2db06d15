package pipelines

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/regular"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/stac"
)

// Config describes one batch run. Zero values take the documented defaults.
type Config struct {
	// ModelPath is the model file; ignored when Model is set.
	ModelPath string
	// Model is an already loaded model (library use).
	Model *model.Model
	// OutDir receives KEY.tif (the COG) and KEY.json (its STAC Item) per scene; created if missing.
	OutDir string
	// Inputs are dataset names, globs, directories and STAC documents (see Expand).
	Inputs []string
	// Items are more inputs: STAC Items as JSON (a STAC task payload's
	// features; see RunPayload), relative hrefs against ItemsBase.
	Items     []json.RawMessage
	ItemsBase string
	// Asset is the STAC asset key to classify; "" = the asset with role "data".
	Asset string
	// Mask is the area of interest scenes are classified in: "" none, a
	// raster or vector file for every scene, a pattern with {key} (the
	// scene's key) for one per scene, or asset:ROLE for the asset of that
	// role of each scene's STAC Item. See processor.Request.Mask.
	Mask string
	// AllowOutsideCatalog lets STAC documents name local files outside
	// their folder (see ExpandOptions.AllowOutsideCatalog).
	AllowOutsideCatalog bool
	// Force redoes scenes whose product is up to date.
	Force bool
	// Jobs is the number of scenes classified at once; 0 = 1 on a GPU backend,
	// else as many as fit in the memory budget (at most the CPU count).
	Jobs int
	// Shard selects this process's share of the inputs (given, or from the
	// job engine: EngineFromEnv); recorded in the report and the Items.
	Shard Shard
	// Engine is the job scheduler this process runs under (EngineFromEnv):
	// its name and job id are recorded in the report and the Items.
	Engine Engine
	// Collection, when set, is a STAC Collection file each Item is added to.
	Collection string
	// CollectionID names a new collection (default: the collection file's directory name).
	CollectionID string
	// License is the Collection's licence: an SPDX identifier or expression
	// ("" = "proprietary", i.e. none granted).
	License string
	// Datetime, when not zero, is the acquisition time of every scene;
	// otherwise each scene's own (source Item, scene metadata). A scene
	// without one fails (stac.ErrNoDatetime). With DatetimeEnd, Datetime is the
	// start of the interval every scene was acquired in.
	Datetime, DatetimeEnd time.Time
	// ModelItem is the href (path or URL) of the model's STAC Item the
	// products' Items point at; "" = the Item beside the model file
	// (ModelItemPath) when it describes this model, else one the run writes
	// into OutDir.
	ModelItem string
	// STACBaseURL is the public URL of the Items' root (the Collection's
	// directory with Collection, else OutDir): Items and the Collection
	// get absolute self links under it; "" = none.
	STACBaseURL string
	// Options are passed to every Classifier; MaxMemoryBytes is the budget of
	// the whole run (0 = the default, as for a Classifier) and is divided
	// among the jobs.
	Options processor.Options
	// Report receives one JSON line (SceneReport) per scene; nil = none.
	Report io.Writer
	// ReportPath is the file Report writes to, if any: Run refuses to start
	// when it is one of the inputs (Report should not truncate it before).
	ReportPath string
	// PayloadOut is the file the output payload goes to ("" or "-":
	// none), checked with the run's other outputs before any work: it may
	// be no input (a scene, the model, its Item, a mask), no product file
	// and neither the report nor the Collection.
	PayloadOut string
	// Logger receives progress lines; nil = discard.
	Logger *slog.Logger
	// Progress, when set, is called on progress (from several goroutines,
	// serialised) with Events of Stage "batch": the scenes done of the run's
	// (Unit "scenes"), the Subject the scene a tile of which was stitched
	// (with its tiles as the parts and the classification's Message) or the
	// scene just finished (0 of 0 parts, its status as the Message).
	Progress progress.Func
	// Version is the software version written to the Items ("" = version.String).
	Version string
	// HTTPClient fetches STAC documents by URL; nil = http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock (tests); nil = time.Now.
	Now func() time.Time
	// beforeWork, when set, checks the expanded inputs of every shard
	// before any work (RunPayload's path_template check); its error stops
	// the run.
	beforeWork func([]Input) error
	// onScene, when set, is given each scene's report as it is done
	// (serialised), before Progress.
	onScene func(SceneReport)
	// OnDrift is what happens to a scene whose drift verdict is fail
	// (drift.Report): OnDriftWarn (the default) publishes it and reports the
	// verdict, OnDriftSkip withholds its product and Item (status
	// refused), OnDriftFail withholds them and counts the scene as failed.
	OnDrift OnDrift

	// ReportHTML, when set, is the HTML page the run writes at its end
	// (WriteHTMLReport): its summary, a row per scene of the output
	// folder's catalog, thumbnails and footprints.
	ReportHTML string
	// noCatalog: no root Catalog in OutDir without a Collection (a STAC
	// task payload's run, whose output Items have no root).
	noCatalog bool

	// keep is the run's inputs, which no sweep of stale temporaries
	// removes whatever their names (set by Run).
	keep *samefile.Set
	// temps is the output folder's temporaries when the scenes started
	// (listed once by runJobs: once per scene was O(n^2) over a batch),
	// or tempsErr why it could not be listed, which fails each scene as
	// the listing per scene did.
	temps    *tempfiles.Listing
	tempsErr error
}

// OnDrift is Config.OnDrift.
type OnDrift string

// What Run does with a scene whose drift verdict is fail.
const (
	OnDriftWarn OnDrift = "warn" // publish, report the verdict (default)
	OnDriftSkip OnDrift = "skip" // withhold product and Item; status refused
	OnDriftFail OnDrift = "fail" // withhold product and Item; status failed
)

// ParseOnDrift reads an OnDrift ("" = OnDriftWarn).
func ParseOnDrift(s string) (OnDrift, error) {
	switch o := OnDrift(strings.ToLower(strings.TrimSpace(s))); o {
	case "", OnDriftWarn:
		return OnDriftWarn, nil
	case OnDriftSkip, OnDriftFail:
		return o, nil
	}
	return "", fmt.Errorf("drift action %q: want warn, skip or fail", s)
}

// prepareOutput checks what cfg asks for before any work: the shard, the
// licence, and an output directory that exists (made if missing) and can be
// written.
func prepareOutput(cfg Config) error {
	if err := cfg.Shard.Validate(); err != nil {
		return err
	}
	if cfg.OutDir == "" {
		return errors.New("no output directory given")
	}
	if err := stac.CheckLicense(cfg.License); err != nil {
		return err
	}
	if err := cfg.checkModelItemHref(); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return fmt.Errorf("output directory %s: %w", cfg.OutDir, err)
	}
	if err := checkWritable(cfg.OutDir); err != nil {
		return fmt.Errorf("output directory %s: %w", cfg.OutDir, err)
	}
	if err := checkCollection(cfg.Collection); err != nil {
		return err
	}
	if cat := cfg.catalog(); cat != "" {
		if err := stac.CheckRootFile(cat, "Catalog"); err != nil {
			return err
		}
	}
	return checkReportHTMLDir(cfg.ReportHTML)
}

// checkReportHTMLDir refuses, before any work, a report page whose
// directory is missing or not writable (found only at the run's end before).
func checkReportHTMLDir(page string) error {
	if page == "" {
		return nil
	}
	dir := filepath.Dir(page)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("report page %s: %w", page, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("report page %s: %s is not a directory", page, dir)
	}
	if err := checkWritable(dir); err != nil {
		return fmt.Errorf("report page %s: directory %s: %w", page, dir, err)
	}
	return nil
}

// catalog is the root Catalog the run keeps in OutDir: "" with a
// Collection (the Collection is the root) or without a catalog.
func (cfg *Config) catalog() string {
	if cfg.Collection != "" || cfg.noCatalog || cfg.OutDir == "" {
		return ""
	}
	return filepath.Join(cfg.OutDir, stac.CatalogFile)
}

// rootDoc is the root document the Items are linked from: the
// Collection, else the Catalog ("" = none).
func (cfg *Config) rootDoc() string {
	if cfg.Collection != "" {
		return cfg.Collection
	}
	return cfg.catalog()
}

// checkNotInputs refuses, before any work, a run that would write over one
// of its inputs: out-dir holding the scenes (a product would replace its
// scene), a source Item in out-dir (its product's Item would replace it),
// the Collection or the report being an input. Every input of every shard
// is checked, so that all shards agree.
func (cfg *Config) checkNotInputs(inputs []Input, ins *samefile.Set) error {
	runFiles := []samefile.Named{{Path: cfg.Collection, Role: "the STAC Collection"}, {Path: cfg.ReportPath, Role: "the run report"},
		{Path: cfg.catalog(), Role: "the STAC Catalog"}, {Path: cfg.ReportHTML, Role: "the HTML report"}}
	products, err := cfg.planOutputs(inputs)
	if err != nil {
		return err
	}
	if err := cfg.checkPayloadOut(ins, runFiles); err != nil {
		return err
	}
	if err := ins.Check(append(runFiles, products...)...); err != nil {
		return err
	}
	// A directory in place of an output was found only when the finished
	// file was renamed onto it, after the scene's work.
	for _, o := range append(products, runFiles...) {
		if o.Path == "" {
			continue
		}
		if st, err := os.Stat(o.Path); err == nil && st.IsDir() {
			return fmt.Errorf("%s %s: %w: it is a directory", o.Role, o.Path, processor.ErrBadOutput)
		}
	}
	// Nor may a product or an Item replace the Collection, the report or
	// the output payload (a scene named collection.tif beside
	// collection.json, say).
	var run samefile.Set
	run.Add(runFiles...)
	if cfg.PayloadOut != "-" {
		run.Add(samefile.Named{Path: cfg.PayloadOut, Role: "the output payload"})
	}
	return run.Check(products...)
}

// checkPayloadOut refuses a --payload-out that is one of the run's inputs
// (ins), the model's STAC Item, the report or the Collection; checked
// against the products with the other run files.
func (cfg *Config) checkPayloadOut(ins *samefile.Set, runFiles []samefile.Named) error {
	if cfg.PayloadOut == "" || cfg.PayloadOut == "-" {
		return nil
	}
	out := samefile.Named{Path: cfg.PayloadOut, Role: "the output payload"}
	if err := ins.Check(out); err != nil {
		return err
	}
	var others samefile.Set
	others.Add(runFiles...)
	if cfg.ModelPath != "" {
		others.Add(samefile.Named{Path: stac.ModelItemPath(cfg.ModelPath), Role: "the model's STAC Item"})
	}
	if cfg.ModelItem != "" {
		others.Add(samefile.Named{Path: cfg.ModelItem, Role: "the model's STAC Item"})
	}
	if err := others.Check(out); err != nil {
		var c *samefile.Conflict
		if errors.As(err, &c) {
			return fmt.Errorf("the output payload %s is %s %s: %w", cfg.PayloadOut, c.InputRole, c.Input, ErrOutputCollision)
		}
		return err
	}
	return nil
}

// inputSet is every file the run reads that is known before its scenes
// start: scenes, source Items, the inputs as named, the model, the masks,
// and the local files their VRTs read at any depth.
func (cfg *Config) inputSet(inputs []Input) *samefile.Set {
	ins := &samefile.Set{}
	// addReads adds a dataset and, for a VRT, the local files it reads at
	// any depth. The VRTs of a catalog under the policy are left to the
	// scene's policy check (checkOpens), which reads nothing the catalog
	// may not name; the scene's own check (processor) still lists them.
	addReads := func(name, role string, confined bool) {
		ins.Add(samefile.Named{Path: name, Role: role})
		if confined || !samefile.Local(name) {
			return
		}
		for _, f := range geo.VRTFiles(name) {
			ins.Add(samefile.Named{Path: f, Role: "a file " + role + " reads,"})
		}
	}
	for _, in := range inputs {
		addReads(in.Name, "the scene", in.catalog != "")
		if in.Item != "" {
			ins.Add(samefile.Named{Path: in.Item, Role: "the source STAC Item"})
		}
	}
	for _, a := range cfg.Inputs { // catalogs and collections named as inputs
		ins.Add(samefile.Named{Path: a, Role: "the input"})
	}
	if cfg.Model == nil {
		ins.Add(samefile.Named{Path: cfg.ModelPath, Role: "the model"})
	}
	if m := cfg.Mask; m != "" && !strings.Contains(m, "{key}") && MaskRole(m) == "" {
		addReads(m, "the mask", false)
	}
	for _, in := range inputs {
		if in.Mask != "" {
			addReads(in.Mask, "the mask of "+in.Key, in.catalog != "")
		}
	}
	for _, m := range cfg.Options.QualityMasks {
		addReads(m.Path, "the quality mask", false)
	}
	return ins
}

// ErrOutputCollision: two outputs of one batch are one file (a scene's
// product and another's probabilities file, a product's Item and the
// model's Item); Run refuses to start.
var ErrOutputCollision = errors.New("two outputs of the batch are one file")

// planOutputs lists every file the run writes into the output directory,
// for every input of every shard (so that all shards agree): each scene's
// product files, its Item and the model's Item when the run may write it
// there. It refuses, before any work, two of them being one file: a scene's
// product would replace another's companion file (in/a.tif and
// in/a.probabilities.tif: a.probabilities.tif is both the first product's
// probabilities file and the second's product), or a product's Item the
// model's (scene x.pnec.tif, model x.pnec). A product's companion files are
// claimed whatever the options, since a product without them removes stale
// ones of its name.
func (cfg *Config) planOutputs(inputs []Input) ([]samefile.Named, error) {
	type claim struct{ role, input string }
	claims := map[string]claim{}
	var out []samefile.Named
	add := func(path, role, input string) error {
		key := filepath.Clean(path)
		if c, ok := claims[key]; ok {
			of := func(role, input string) string {
				switch {
				case input == "":
					return role
				case strings.HasPrefix(role, "the product's "):
					return "the " + strings.TrimPrefix(role, "the product's ") + " of the product of " + input
				}
				return role + " of " + input
			}
			return fmt.Errorf("%w: %s would be %s and %s; rename one of the inputs, or classify them in separate output directories",
				ErrOutputCollision, path, of(c.role, c.input), of(role, input))
		}
		claims[key] = claim{role, input}
		out = append(out, samefile.Named{Path: path, Role: role})
		return nil
	}
	if cfg.ModelItem == "" && cfg.ModelPath != "" {
		// Written into the output directory when no Item of the model is
		// found beside it (newModelItem): claimed either way, so that the
		// plan does not depend on what lies beside the model.
		if err := add(filepath.Join(cfg.OutDir, filepath.Base(stac.ModelItemPath(cfg.ModelPath))), "the model's STAC Item", ""); err != nil {
			return nil, err
		}
	}
	for _, in := range inputs {
		product := filepath.Join(cfg.OutDir, in.Key+".tif")
		paths, roles := geo.ProductFiles(product, true)
		prob := geo.ProbabilitiesPath(product)
		paths, roles = append(paths, prob+".aux.xml"), append(roles, "the product's probabilities sidecar")
		paths, roles = append(paths, filepath.Join(cfg.OutDir, in.Key+".json")), append(roles, "the product's STAC Item")
		for i := range paths {
			if err := add(paths[i], roles[i], in.Name); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// checkCollection refuses, before any work, a Collection file that could
// not take the Items: its directory missing, or an existing file that is
// not a STAC Collection. (Found per scene, it failed every scene after
// classifying it.)
func checkCollection(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("collection %s: directory %s: %w", path, dir, err)
	} else if !st.IsDir() {
		return fmt.Errorf("collection %s: %s is not a directory", path, dir)
	}
	if err := checkWritable(dir); err != nil {
		return fmt.Errorf("collection %s: directory %s: %w", path, dir, err)
	}
	b, err := regular.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // created with the first Item
	}
	if err != nil {
		return fmt.Errorf("collection %s: %w", path, err)
	}
	var coll map[string]any
	if err := json.Unmarshal(b, &coll); err != nil {
		return fmt.Errorf("collection %s: bad JSON: %w", path, err)
	}
	if coll["type"] != "Collection" {
		return fmt.Errorf("collection %s: type %v, want Collection", path, coll["type"])
	}
	return nil
}

// checkWritable creates and removes a file in dir, so that an unwritable
// output directory fails the run at once rather than every scene.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".pnec-write-check-tmp-*")
	if err != nil {
		return fmt.Errorf("not writable: %w", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// stamp records the run's shard and engine in a scene's report line.
func (cfg *Config) stamp(r *SceneReport) {
	if cfg.Shard.Count > 1 {
		r.Shard = cfg.Shard.String()
	}
	r.Engine, r.JobID = cfg.Engine.Name, cfg.Engine.JobID
}
