package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	gostac "github.com/planetlabs/go-stac"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/oneline"
	"github.com/pnec/pnec/internal/regular"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/stac"
	"github.com/pnec/pnec/version"
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

// Scene statuses in a SceneReport.
const (
	StatusDone    = "done"
	StatusSkipped = "skipped" // product up to date
	StatusFailed  = "failed"
	StatusBusy    = "busy" // another process holds the scene's lock
	// StatusStopped: the run was stopped (a signal) while or before the
	// scene was done; nothing of it was published and a rerun does it.
	StatusStopped = "stopped"
	// StatusRefused: the scene's drift verdict was fail under OnDriftSkip;
	// nothing of it was published and every run tries it again.
	StatusRefused = "refused"
)

// StageSeconds is a scene's time per stage, in seconds.
type StageSeconds struct {
	Read    float64 `json:"read_s"`
	Network float64 `json:"network_s"`
	Stitch  float64 `json:"stitch_s"`
	Write   float64 `json:"write_s"`
	STAC    float64 `json:"stac_s"`
	Total   float64 `json:"total_s"`
}

// SceneReport is one line of the run report.
type SceneReport struct {
	Input       string        `json:"input"`
	Output      string        `json:"output,omitempty"`
	Item        string        `json:"item,omitempty"`
	Status      string        `json:"status"`
	Reason      string        `json:"reason,omitempty"`
	Times       *StageSeconds `json:"times,omitempty"`
	Pixels      int64         `json:"pixels,omitempty"`
	ValidPixels int64         `json:"valid_pixels,omitempty"`
	Tiles       int           `json:"tiles,omitempty"`
	Backend     string        `json:"backend,omitempty"`
	Shard       string        `json:"shard,omitempty"`  // "i/n" when the run is one shard
	Engine      string        `json:"engine,omitempty"` // slurm, kubernetes, aws-batch
	JobID       string        `json:"job_id,omitempty"` // the engine's id of this task
	// Bands says how the model's bands were made from the scene's
	// (processor.DescribeBandPlan); Warnings what classifying it assumed or
	// converted.
	Bands    string   `json:"bands,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	err      error    // why it failed (not in the report: Reason says it)
	// notStarted: stopped before a job took it (Summary.NotStarted).
	notStarted bool
	// Drift is the scene's drift verdict (ok, warn, fail; absent for a
	// model without drift statistics) and DriftReasons why it is not ok.
	Drift        string   `json:"drift,omitempty"`
	DriftReasons []string `json:"drift_reasons,omitempty"`
	// DriftRefused is true when the product was withheld for its verdict
	// (OnDriftSkip, OnDriftFail).
	DriftRefused bool `json:"drift_refused,omitempty"`
}

// Summary totals a run.
type Summary struct {
	Scenes, Done, Skipped, Failed, Busy, Stopped int
	// NotStarted counts the Stopped scenes a stop kept from starting.
	NotStarted int
	// Refused counts scenes withheld for their drift (OnDriftSkip;
	// under OnDriftFail they count as Failed and in DriftRefused).
	Refused int
	// DriftWarn and DriftFail count the scenes classified with each
	// verdict, published or not; DriftRefused those withheld.
	DriftWarn, DriftFail, DriftRefused int
	Pixels                             int64 // pixels classified (done scenes)
	Elapsed                            time.Duration
	Jobs                               int
	Backend                            string
	TempFilesRemoved                   int
	MaxMemoryBytesPerJob               int64 // each job's share of the memory budget
}

// String is the one-paragraph summary printed at the end of a run.
func (s Summary) String() string {
	backend := s.Backend
	if backend == "" {
		backend = "default"
	}
	out := fmt.Sprintf("%d scenes: %d done, %d skipped (up to date), %d failed, %d busy; %d pixels in %s with %d jobs on backend %s",
		s.Scenes, s.Done, s.Skipped, s.Failed, s.Busy, s.Pixels, s.Elapsed.Round(time.Millisecond), s.Jobs, backend)
	if s.MaxMemoryBytesPerJob > 0 {
		out += fmt.Sprintf(", memory budget %s per job", memory.FormatBytes(s.MaxMemoryBytesPerJob))
	}
	if s.Stopped > 0 {
		out += fmt.Sprintf("; %d stopped before they finished", s.Stopped)
		if s.NotStarted > 0 {
			out += fmt.Sprintf(" (%d not started)", s.NotStarted)
		}
	}
	if s.DriftWarn+s.DriftFail > 0 {
		out += fmt.Sprintf("; drift: %d warn, %d fail", s.DriftWarn, s.DriftFail)
		if s.DriftRefused > 0 {
			out += fmt.Sprintf(" (%d withheld)", s.DriftRefused)
		}
	}
	return out
}

// ErrScenesFailed is wrapped by Run's error when at least one scene failed.
var ErrScenesFailed = errors.New("scenes failed")

// FailedError is Run's error when scenes failed; it wraps ErrScenesFailed
// and quotes the first failure, so that a one-line message names an input
// and its problem.
type FailedError struct {
	Failed, Scenes int
	First          string
	// FirstErr is the first failure's error (an *InputError for an input
	// that could not be expanded, the scene's error otherwise), so that
	// callers and errors.Is see its cause.
	FirstErr error
	// Drift counts the failed scenes refused for their drift (OnDriftFail).
	Drift int
}

func (e *FailedError) Error() string {
	if e.Failed == 1 {
		return fmt.Sprintf("1 of %d scenes failed: %s", e.Scenes, e.First)
	}
	return fmt.Sprintf("%d of %d scenes failed (see the report); first: %s", e.Failed, e.Scenes, e.First)
}

func (e *FailedError) Unwrap() []error {
	if e.FirstErr == nil {
		return []error{ErrScenesFailed}
	}
	return []error{ErrScenesFailed, e.FirstErr}
}

// Run classifies the inputs of cfg. It returns an error wrapping
// ErrScenesFailed when any scene (or input argument) failed, after every
// other scene has been done; other errors mean the run could not start
// (model, output directory) or was cancelled. A run that would write a
// file (a product, its Item, the Collection, the report) that is one of
// its inputs (a scene, a source STAC document, the model), through any
// name, link or hard link, does not start: its error is
// processor.ErrOutputIsInput, naming both.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	start := time.Now()
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = version.String
	}
	t := &tally{}
	onDrift, err := ParseOnDrift(string(cfg.OnDrift))
	if err != nil {
		return t.sum, err
	}
	cfg.OnDrift = onDrift
	if err := prepareOutput(cfg); err != nil {
		return t.sum, err
	}
	inputs, inErrs, err := Expand(ctx, cfg.Inputs, ExpandOptions{Asset: cfg.Asset, HTTPClient: cfg.HTTPClient, MaskRole: MaskRole(cfg.Mask),
		Items: cfg.Items, ItemsBase: cfg.ItemsBase, AllowOutsideCatalog: cfg.AllowOutsideCatalog})
	if err != nil {
		return t.sum, err
	}
	// The inputs' set is made once: each member resolves its path (links
	// at every level), a cost per scene the check and the sweeps share.
	cfg.keep = cfg.inputSet(inputs)
	if err := cfg.checkNotInputs(inputs, cfg.keep); err != nil {
		return t.sum, err
	}
	if cfg.beforeWork != nil {
		if err := cfg.beforeWork(inputs); err != nil {
			return t.sum, err
		}
	}
	mine := cfg.Shard.Select(inputs)
	rep := &reporter{w: cfg.Report, onEvent: cfg.Progress, onScene: cfg.onScene, total: len(mine) + len(inErrs)}
	for _, ie := range inErrs {
		if cfg.Shard.Count > 1 && !cfg.Shard.Has(ie.Input) {
			rep.total--
			continue // another shard reports it
		}
		r := SceneReport{Input: ie.Input, Status: StatusFailed, Reason: oneline.Fold(ie.Error()), err: ie}
		cfg.stamp(&r)
		log.Warn("input failed", "input", ie.Input, "reason", ie.Err)
		rep.scene(&r)
		t.add(r)
	}
	log.Info("batch", "inputs", len(inputs), "shard", cfg.Shard.String(), "scenes", len(mine), "out_dir", cfg.OutDir)

	m := cfg.Model
	if m == nil && len(mine) > 0 {
		if m, err = model.Load(cfg.ModelPath); err != nil {
			return t.sum, fmt.Errorf("model %s: %w", cfg.ModelPath, err)
		}
	}
	jobs, opts := jobsAndOptions(cfg, m, len(mine), log, &t.sum)
	setupErr := runJobs(ctx, &cfg, m, opts, jobs, mine, rep, t, log, now)

	// Leftovers of killed runs of scenes this process did not touch (another
	// shard's crashed run, or scenes skipped as up to date) go too, when free.
	t.sum.TempFilesRemoved += removeStaleTemps(cfg.OutDir, inputs, cfg.keep.Has)
	t.sum.Elapsed = time.Since(start)
	if setupErr != nil {
		return t.sum, setupErr
	}
	var pageErr error
	if cfg.ReportHTML != "" && ctx.Err() == nil {
		pageErr = WriteHTMLReport(cfg.ReportHTML, HTMLReport{Summary: t.sum, Scenes: rep.all, Root: cfg.rootDoc(), OutDir: cfg.OutDir, Now: now()})
		if pageErr != nil {
			log.Error("report page not written", "error", pageErr)
		}
	}
	if err := ctx.Err(); err != nil {
		return t.sum, fmt.Errorf("batch interrupted after %d of %d scenes: %w", t.sum.Scenes-t.sum.Stopped, rep.total, err)
	}
	if t.sum.Failed > 0 {
		// The scenes' failure is the error (the page's, if any, was logged).
		return t.sum, &FailedError{Failed: t.sum.Failed, Scenes: t.sum.Scenes, First: t.firstFailure, FirstErr: t.firstErr, Drift: t.driftFailed}
	}
	return t.sum, pageErr
}

// tally counts the scenes' outcomes into the Summary, from several jobs.
type tally struct {
	mu           sync.Mutex
	sum          Summary
	firstFailure string
	firstErr     error
	driftFailed  int // failed scenes refused for their drift (OnDriftFail)
}

func (t *tally) add(r SceneReport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch r.Drift {
	case string(drift.Warn):
		t.sum.DriftWarn++
	case string(drift.Fail):
		t.sum.DriftFail++
	}
	if r.DriftRefused {
		t.sum.DriftRefused++
	}
	switch r.Status {
	case StatusDone:
		t.sum.Done++
		t.sum.Pixels += r.Pixels
		if r.Backend != "" {
			t.sum.Backend = r.Backend
		}
	case StatusSkipped:
		t.sum.Skipped++
	case StatusBusy:
		t.sum.Busy++
	case StatusStopped:
		t.sum.Stopped++
		if r.notStarted {
			t.sum.NotStarted++
		}
	case StatusRefused:
		t.sum.Refused++
	default:
		t.sum.Failed++
		if r.DriftRefused {
			t.driftFailed++
		}
		if t.firstFailure == "" {
			t.firstFailure, t.firstErr = r.Reason, r.err
		}
	}
	t.sum.Scenes++
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

// jobsAndOptions is how many scenes run at once and the Classifier options
// of each (its share of the budget, the run's logger), recorded in sum.
func jobsAndOptions(cfg Config, m *model.Model, scenes int, log *slog.Logger, sum *Summary) (int, processor.Options) {
	jobs, label := cfg.Jobs, cfg.Options.Backend
	opts := cfg.Options
	if scenes > 0 {
		var b backend.Backend
		var err error
		if jobs, b, err = chooseJobs(m, cfg.Jobs, cfg.Options, scenes); err == nil {
			// Every classifier opens the backend decided here: the default
			// is decided once for the batch, not again per job.
			label, opts.Backend = b.Label(), b.Name
		}
	}
	jobs = max(1, min(jobs, scenes))
	sum.Jobs, sum.Backend = jobs, label
	// The budget, given or the default (which respects cgroup limits), is
	// the whole process's: each job gets its share.
	opts.MaxMemoryBytes = memory.Budget(opts.MaxMemoryBytes) / int64(jobs)
	sum.MaxMemoryBytesPerJob = opts.MaxMemoryBytes
	if opts.Logger == nil {
		opts.Logger = log
	}
	if scenes == 0 {
		jobs = 0
	}
	return jobs, opts
}

// runJobs classifies the scenes of mine with jobs workers, each with its
// own Classifier, and tallies their reports; it returns the error of a
// worker that could not start (its scenes go to the others, or wait).
func runJobs(ctx context.Context, cfg *Config, m *model.Model, opts processor.Options, jobs int, mine []Input,
	rep *reporter, t *tally, log *slog.Logger, now func() time.Time) error {
	var classes []stac.ClassObject
	var geoClasses []geo.ClassInfo
	if m != nil {
		for _, c := range m.Classes() {
			geoClasses = append(geoClasses, geo.ClassInfo{Value: c.Value, Name: c.Name, Color: c.Color})
		}
		classes = stac.ClassObjects(geoClasses)
	}

	var mItem *modelItem
	if len(mine) > 0 {
		var err error
		if mItem, err = newModelItem(cfg, m, now()); err != nil {
			return err
		}
	}

	collID := cfg.CollectionID
	if cfg.Collection != "" && collID == "" {
		abs, _ := filepath.Abs(cfg.Collection)
		collID = filepath.Base(filepath.Dir(abs))
	}
	inColl := stac.CollectionItems(cfg.rootDoc())
	if len(mine) > 0 {
		cfg.temps, cfg.tempsErr = tempfiles.List(cfg.OutDir)
	}
	work := make(chan Input)
	var wg sync.WaitGroup
	var errMu, newMu sync.Mutex
	var setupErr error
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{cfg: cfg, model: m, classes: classes, modelItem: mItem, nodata: geo.ProductNoData(geoClasses), collID: collID, inCollection: inColl, rep: rep, log: log, now: now}
			o := opts
			if cfg.OnDrift == OnDriftSkip || cfg.OnDrift == OnDriftFail {
				o.DriftCheck = drift.Refuse(drift.Fail)
			}
			// Classifiers are made one at a time: backend discovery in
			// go-xla v0.4.1 (GetAvailablePlugins) writes package state
			// unguarded, a data race when predictors start concurrently.
			newMu.Lock()
			c, err := processor.NewClassifier(m, o)
			newMu.Unlock()
			if err != nil {
				errMu.Lock()
				setupErr = errors.Join(setupErr, fmt.Errorf("prepare classifier: %w", err))
				errMu.Unlock()
				for range work {
				}
				return
			}
			defer c.Close()
			w.classifier = c
			for in := range work {
				r := w.scene(ctx, in)
				t.add(r)
				rep.scene(&r)
			}
		}()
	}
	fed := 0
feed:
	for _, in := range mine {
		select {
		case work <- in:
			fed++
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	// Every scene gets its line: those a stop kept from starting too.
	for _, in := range mine[fed:] {
		r := SceneReport{Input: in.Name, Status: StatusStopped, notStarted: true,
			Reason: fmt.Sprintf("not started: the run was stopped (%v); a rerun does it", context.Cause(ctx))}
		cfg.stamp(&r)
		t.add(r)
		rep.scene(&r)
	}
	return setupErr
}

// removeStaleTemps removes the temporaries of killed runs of inputs' scenes
// whose lock is free, none that keep reports, and returns how many it removed.
// It lists the folder once (anew: a run killed during this one may have left
// some since the scenes started) and locks only the scenes that have some.
func removeStaleTemps(outDir string, inputs []Input, keep func(string) bool) int {
	temps, err := tempfiles.List(outDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, in := range inputs {
		if !temps.Has(in.Key) {
			continue
		}
		if l, err := tempfiles.TryLock(outDir, in.Key); err == nil {
			k, _ := temps.Remove(in.Key, keep)
			n += k
			l.Release()
		}
	}
	return n
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

// chooseJobs decides the batch's backend once (backend.Decide, for
// the batch's scenes) and applies the --jobs default: 1 on an accelerator
// (backend.Backend.OnDevice); on CPU as many scenes as the memory budget
// holds when each job's share is at least the smallest budget a scene of
// one model tile runs in (processor.SmallestBudget of a
// CanonicalTile-square scene with the model's bands: a share below it
// would refuse every scene), capped at the number of CPUs (each scene's
// network already uses every core, so more jobs mainly overlap reading and
// writing), and at least 1. Wider scenes need more (their canvas stripe
// spans their width): a share too small for one is refused with the
// budget it needs, as pnec classify refuses it. An error is a backend name
// that does not parse.
func chooseJobs(m *model.Model, jobs int, o processor.Options, scenes int) (int, backend.Backend, error) {
	b, err := backend.Decide(o.Backend, backend.Job{Task: backend.TaskClassify, Scenes: scenes})
	if err != nil {
		return jobs, b, err
	}
	if jobs > 0 {
		return jobs, b, nil
	}
	if b.OnDevice() {
		return 1, b, nil
	}
	budget := memory.Budget(o.MaxMemoryBytes)
	t := processor.CanonicalTile
	per, err := processor.SmallestBudget(t, t, m.Bands(), m, o)
	if err != nil || per <= 0 || budget <= 0 {
		return 1, b, nil
	}
	return int(max(1, min(int64(runtime.NumCPU()), budget/per))), b, nil
}

// reporter serialises report lines and events.
type reporter struct {
	mu      sync.Mutex
	w       io.Writer
	onEvent progress.Func
	onScene func(SceneReport)
	total   int
	done    int
	all     []SceneReport // every line, for the HTML report
}

func (r *reporter) scene(s *SceneReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	r.all = append(r.all, *s)
	if r.w != nil {
		b, _ := json.Marshal(s)
		r.w.Write(append(b, '\n'))
	}
	if r.onScene != nil {
		r.onScene(*s)
	}
	if r.onEvent != nil {
		r.onEvent(progress.Event{Stage: "batch", Subject: s.Input, Done: int64(r.done), Total: int64(r.total), Unit: "scenes",
			Message: string(s.Status)})
	}
}

// tiles reports the progress ev of the scene being classified as the
// batch's.
func (r *reporter) tiles(ev progress.Event) {
	if r.onEvent == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onEvent(progress.Event{Stage: "batch", Subject: ev.Subject, Done: int64(r.done), Total: int64(r.total), Unit: "scenes",
		Part: ev.Part, Parts: ev.Parts, Elapsed: ev.Elapsed, ETA: ev.ETA, Message: ev.Message})
}

type worker struct {
	cfg        *Config
	model      *model.Model
	classifier *processor.Classifier
	classes    []stac.ClassObject
	nodata     int        // the products' shared no-data value
	modelItem  *modelItem // the model's STAC Item, which the products' Items point at
	collID     string
	// inCollection: item hrefs the collection held when the run started (read-only).
	inCollection map[string]bool
	rep          *reporter
	log          *slog.Logger
	now          func() time.Time
}

// tileProgress reports a tile of the scene in progress stitched: to the
// run's Progress, and as a line to its Logger (pixels done, pixels/s and
// the time left).
func (w *worker) tileProgress(ev progress.Event) {
	w.rep.tiles(ev)
	if w.cfg.Logger != nil {
		w.log.Info("tile", "scene", ev.Subject, "progress", ev.Message)
	}
}

// scene does one scene: lock, skip if up to date, clear stale temporaries,
// classify, describe in STAC. Errors become the report's reason.
func (w *worker) scene(ctx context.Context, in Input) SceneReport {
	t0 := time.Now()
	product := filepath.Join(w.cfg.OutDir, in.Key+".tif")
	itemPath := filepath.Join(w.cfg.OutDir, in.Key+".json")
	r := SceneReport{Input: in.Name, Output: product, Item: itemPath}
	w.cfg.stamp(&r)
	fail := func(err error) SceneReport { return w.failed(ctx, in, r, err) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	lock, err := tempfiles.TryLock(w.cfg.OutDir, in.Key)
	if errors.Is(err, tempfiles.ErrBusy) {
		r.Status, r.Reason = StatusBusy, errBusy.Error()
		return r
	}
	if err != nil {
		return fail(err)
	}
	defer lock.Release()
	mask, err := sceneMask(w.cfg.Mask, in)
	if err != nil {
		return fail(err)
	}
	if err := w.removeTemps(in, mask); err != nil {
		return fail(err)
	}
	src := w.source(in, mask)
	if !w.cfg.Force {
		skip, err := w.skipUpToDate(in, product, itemPath, src)
		if err != nil {
			return fail(err)
		}
		if skip {
			r.Status = StatusSkipped
			return r
		}
	}

	// What a catalog's VRTs open is checked before GDAL opens them (the
	// datetime check below opens the scene).
	if err := checkOpens(in); err != nil {
		return fail(err)
	}
	if err := w.checkDatetime(in); err != nil {
		return fail(err)
	}
	res, err := w.classifier.Run(ctx, processor.Request{Scene: in.Name, Mask: mask, Out: product, Progress: w.tileProgress})
	var refused *drift.RefusedError
	if errors.As(err, &refused) {
		return w.refused(ctx, in, r, refused, err)
	}
	if err != nil {
		return fail(err)
	}
	w.record(in, &r, res)

	tSTAC := time.Now()
	if err := w.describe(in, product, itemPath, src, res); err != nil {
		// The product is complete but undescribed: the next run redoes it
		// (no Item means not up to date).
		return fail(err)
	}
	r.Times.STAC = time.Since(tSTAC).Seconds()
	r.Times.Total = time.Since(t0).Seconds()
	r.Status = StatusDone
	w.log.Info("scene done", "input", in.Name, "output", product, "pixels", r.Pixels, "seconds", r.Times.Total)
	return r
}

// failed is r for a scene that failed with err: stopped when the run is
// stopping (not the scene's fault), else failed with a one-line reason
// that names the input.
func (w *worker) failed(ctx context.Context, in Input, r SceneReport, err error) SceneReport {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Not the scene's fault: the run is stopping.
		r.Status = StatusStopped
		r.Reason = fmt.Sprintf("stopped before it finished (%v); nothing was published, a rerun does it", context.Cause(ctx))
		w.log.Warn("scene stopped", "input", in.Name)
		return r
	}
	r.Status, r.err = StatusFailed, err
	r.Reason = oneline.Fold(err.Error())
	r.err = err
	if !strings.Contains(r.Reason, in.Name) {
		r.Reason = in.Name + ": " + r.Reason
	}
	w.log.Warn("scene failed", "input", in.Name, "reason", r.Reason)
	return r
}

// removeTemps removes the temporaries an earlier, killed run of the scene
// left in the output folder (never an input, nor the scene's mask).
func (w *worker) removeTemps(in Input, mask string) error {
	keep := func(p string) bool { return w.cfg.keep.Has(p) || (mask != "" && samefile.Same(p, mask)) }
	if w.cfg.tempsErr != nil {
		return fmt.Errorf("remove stale temporary files: %w", w.cfg.tempsErr)
	}
	n, err := w.cfg.temps.Remove(in.Key, keep)
	if err != nil {
		return fmt.Errorf("remove stale temporary files: %w", err)
	}
	if n > 0 {
		w.log.Info("removed stale temporary files", "input", in.Name, "files", n)
	}
	return nil
}

// source is the record of what the scene's product is made from (the
// input, its mask and the quality masks), naming the files as the Item's
// links do (relative when under the Item's root), so that the Item stays
// portable and the up-to-date check stable.
func (w *worker) source(in Input, mask string) stac.SourceRecord {
	src := sourceRecord(in)
	maskRecord(&src, mask)
	src.Name = stac.PortableHref(src.Name, w.root(), w.cfg.OutDir)
	if src.Mask != "" {
		src.Mask = stac.PortableHref(src.Mask, w.root(), w.cfg.OutDir)
	}
	qualityMaskRecord(&src, w.cfg.Options, func(p string) string { return stac.PortableHref(p, w.root(), w.cfg.OutDir) })
	return src
}

// skipUpToDate reports whether the scene's product and Item are up to date
// for src and the model (and then keeps the Item in the collection and the
// model's Item beside it).
func (w *worker) skipUpToDate(in Input, product, itemPath string, src stac.SourceRecord) (bool, error) {
	ok, why := upToDate(product, itemPath, src, w.model.Checksum(), w.cfg.Options.ReliabilityFloat32)
	if ok && !w.cfg.Options.NoThumbnail {
		ok, why = thumbnailUpToDate(itemPath, product)
	}
	if ok {
		ok, why = probabilitiesUpToDate(itemPath, product, w.cfg.Options.Probabilities, w.cfg.Options.TopK)
	}
	if !ok {
		w.log.Debug("scene to do", "input", in.Name, "why", why)
		return false, nil
	}
	// A run killed between writing the Item and adding it to the
	// collection left it out: add it now (a no-op when it is in).
	if root := w.cfg.rootDoc(); root != "" && !w.inCollection[stac.ItemHref(root, itemPath)] {
		if err := w.addToRoot(itemPath, nil); err != nil {
			return false, err
		}
	}
	// Its Item points at the model's Item: keep that there too.
	if err := w.modelItem.ensure(); err != nil {
		return false, err
	}
	w.log.Info("scene up to date", "input", in.Name, "output", product)
	return true, nil
}

// refused is r for a scene whose product the drift policy withheld
// (refused, found in the classifier's error err): refused under
// OnDriftSkip, failed otherwise.
func (w *worker) refused(ctx context.Context, in Input, r SceneReport, refused *drift.RefusedError, err error) SceneReport {
	r.Drift, r.DriftReasons, r.DriftRefused = string(refused.Report.Verdict), refused.Report.Reasons, true
	r.Output, r.Item = "", ""
	if w.cfg.OnDrift == OnDriftSkip {
		r.Status, r.Reason = StatusRefused, in.Name+": product withheld (drift policy skip): "+refused.Error()
		w.log.Warn("scene refused for drift", "input", in.Name, "drift", refused.Report.Summary())
		return r
	}
	return w.failed(ctx, in, r, fmt.Errorf("product withheld: %w", err))
}

// record puts the classification's figures in the scene's report: drift,
// backend, bands, pixels, tiles and stage times.
func (w *worker) record(in Input, r *SceneReport, res processor.Result) {
	if d := res.Drift; d != nil {
		r.Drift, r.DriftReasons = string(d.Verdict), d.Reasons
		if d.Verdict != drift.OK {
			w.log.Warn("scene drifted from the training data", "input", in.Name, "drift", d.Summary())
		}
	}
	r.Backend = res.Backend
	r.Bands, r.Warnings = res.Bands, res.Warnings // the classifier logged the warnings
	r.Pixels = int64(res.Rows) * int64(res.Cols)
	r.ValidPixels = res.ValidPixels
	r.Tiles = res.Tiles
	r.Times = &StageSeconds{
		Read: res.Times.Read.Seconds(), Network: res.Times.Network.Seconds(),
		Stitch: res.Times.Stitch.Seconds(), Write: res.Times.Write.Seconds(),
	}
}

// root is the directory the Items' relative hrefs stay under: the
// Collection's, else the output directory.
func (w *worker) root() string { return w.cfg.itemsRoot() }

// collection is what a new or updated Collection says of the products.
func (w *worker) collection() stac.CollectionMeta {
	return stac.CollectionMeta{ID: w.collID, License: w.cfg.License, Classes: w.classes, NoData: w.nodata, BaseURL: w.cfg.STACBaseURL,
		ReliabilityF32: w.cfg.Options.ReliabilityFloat32, Thumbnail: !w.cfg.Options.NoThumbnail}
}

// describe writes the product's STAC Item (and adds it to the collection).
// The scene's metadata and the product's statistics come from the
// classification's result: the scene is opened once per run (by processor)
// and the product is not read back, only opened for its georeference as
// GDAL gives it, which is also the check that it opens.
func (w *worker) describe(in Input, product, itemPath string, src stac.SourceRecord, res processor.Result) error {
	info, err := productInfo(product)
	if err != nil {
		return err
	}
	info.Metadata = res.SceneInfo.Metadata // the acquisition time is the input's
	files, err := stac.AssetFiles(product, w.cfg.Options.ReliabilityFloat32, w.cfg.Options.Probabilities != processor.ProbabilitiesOff,
		!w.cfg.Options.NoThumbnail)
	if err != nil {
		return fmt.Errorf("product %s: %w", product, err)
	}
	checksum := res.ModelChecksum
	if checksum == "" {
		checksum = w.model.Checksum()
	}
	item, err := stac.BuildItem(w.itemParams(in, product, itemPath, src, res, info, files, checksum))
	if err != nil {
		return fmt.Errorf("STAC item for %s: %w", product, err)
	}
	if err := w.modelItem.ensure(); err != nil {
		return err
	}
	if err := stac.WriteJSON(itemPath, item); err != nil {
		return err
	}
	if err := w.addToRoot(itemPath, item); err != nil {
		// Without the Item the scene is not up to date, so the next
		// run redoes it and adds it then.
		os.Remove(itemPath)
		return err
	}
	return nil
}

// addToRoot links the Item at itemPath (item: the one just written, nil =
// read it from the file) from the run's root document: the Collection
// (extent widened) or the Catalog; nothing without either.
func (w *worker) addToRoot(itemPath string, item *gostac.Item) error {
	switch {
	case w.cfg.Collection != "" && item == nil:
		return stac.AddItemFileToCollection(w.cfg.Collection, w.collection(), itemPath, w.cfg.keep.Has)
	case w.cfg.Collection != "":
		return stac.AddToCollection(w.cfg.Collection, w.collection(), itemPath, item.Bbox, stac.ItemInterval(item.Properties), w.cfg.keep.Has)
	case w.cfg.catalog() != "":
		return stac.AddToCatalog(w.cfg.catalog(), stac.CatalogMeta{ID: w.catalogID(), BaseURL: w.cfg.STACBaseURL}, itemPath, w.cfg.keep.Has)
	}
	return nil
}

// catalogID is the id of a new root Catalog: the output folder's name.
func (w *worker) catalogID() string {
	abs, err := filepath.Abs(w.cfg.OutDir)
	if err != nil {
		return "pnec"
	}
	return filepath.Base(abs)
}

// itemParams is what the product's Item says: the scene, the product, the
// run and the classification's result.
func (w *worker) itemParams(in Input, product, itemPath string, src stac.SourceRecord, res processor.Result,
	info geo.Info, files map[string]stac.FileInfo, checksum string) stac.ItemParams {
	p := stac.ItemParams{
		ID: in.Key, Scene: in.Name, SourceItem: in.Item, SourceItemDatetime: in.ItemDatetime,
		ProductPath: product, ItemPath: itemPath, Info: info, Stats: res.Stats,
		Classes: w.classes, ReliabilityF32: w.cfg.Options.ReliabilityFloat32, Thumbnail: !w.cfg.Options.NoThumbnail,
		ModelChecksum: checksum, Backend: res.Backend, Version: w.cfg.Version,
		Source: src, QualityMasks: res.QualityMasks, Files: files, Now: w.now(), CollectionID: w.collID,
		CollectionPath: w.cfg.Collection, CatalogPath: w.cfg.catalog(), Datetime: w.cfg.Datetime, DatetimeEnd: w.cfg.DatetimeEnd, NoData: w.nodata,
		ModelItem: w.modelItem.href, ModelName: w.modelItem.name, BaseURL: w.cfg.STACBaseURL,
		Engine: w.cfg.Engine.Name, JobID: w.cfg.Engine.JobID,
		Probabilities: stac.Probabilities{Stage: string(w.cfg.Options.Probabilities),
			OfNetwork: w.cfg.Options.Probabilities == processor.ProbabilitiesNetwork, TopK: w.cfg.Options.TopK},
	}
	if w.cfg.Shard.Count > 1 {
		p.Shard = w.cfg.Shard.String()
	}
	if d := res.Drift; d != nil {
		p.DriftVerdict, p.Drift = string(d.Verdict), drift.JSON(*d)
	}
	return p
}

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

// stamp records the run's shard and engine in a scene's report line.
func (cfg *Config) stamp(r *SceneReport) {
	if cfg.Shard.Count > 1 {
		r.Shard = cfg.Shard.String()
	}
	r.Engine, r.JobID = cfg.Engine.Name, cfg.Engine.JobID
}

// checkDatetime refuses, before any work, a scene whose Item could have no
// acquisition time (stac.ErrNoDatetime): none given, none in its source Item,
// and none in its metadata (the scene is opened for it; a scene that does
// not open is left to the classifier to report).
func (w *worker) checkDatetime(in Input) error {
	if !w.cfg.Datetime.IsZero() {
		return nil
	}
	if _, err := time.Parse(time.RFC3339Nano, in.ItemDatetime); err == nil {
		return nil
	}
	sc, err := geo.Open(in.Name)
	if err != nil {
		return nil
	}
	defer sc.Close()
	if _, ok := stac.SceneDatetime(sc.Info().Metadata); ok {
		return nil
	}
	return fmt.Errorf("%s: %w", in.Name, stac.ErrNoDatetime)
}
