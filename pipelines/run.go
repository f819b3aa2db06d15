package pipelines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/oneline"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
	"github.com/pnec/pnec/version"
)

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
