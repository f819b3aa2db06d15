package pipelines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	gostac "github.com/planetlabs/go-stac"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/oneline"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/stac"
)

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

	// What a catalog's VRTs open is checked before GDAL opens them.
	if err := checkOpens(in); err != nil {
		return fail(err)
	}
	res, err := w.classifier.Run(ctx, processor.Request{Scene: in.Name, Mask: mask, Out: product, LockHeld: true,
		SceneCheck: w.datetimeCheck(in), Progress: w.tileProgress})
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

// datetimeCheck is the check Run makes of in's scene as it opens it
// (processor.Request.SceneCheck), before any work: a scene whose Item
// could have no acquisition time (no --datetime, none from its source
// Item, none in its metadata) is refused, naming it. nil where the time
// is known without the scene.
func (w *worker) datetimeCheck(in Input) func(geo.Info) error {
	if !w.cfg.Datetime.IsZero() {
		return nil
	}
	if _, err := time.Parse(time.RFC3339Nano, in.ItemDatetime); err == nil {
		return nil
	}
	return func(info geo.Info) error {
		if _, ok := stac.SceneDatetime(info.Metadata); ok {
			return nil
		}
		return fmt.Errorf("%s: %w", in.Name, stac.ErrNoDatetime)
	}
}
