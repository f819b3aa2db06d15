package evaluation

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/regular"
	"github.com/pnec/pnec/internal/resources"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/spectral"
	"github.com/pnec/pnec/tiling"
)

// ReadScene reads the scene named name (any GDAL dataset name, or a
// product pnec reads: see package geo) into memory as the network takes it
// for training: every band the scene does not declare bad, in order (the
// bad ones are left out without making any pixel invalid). Info describes
// all of the scene's bands; BandRecordOf(info) says which were kept.
func ReadScene(ctx context.Context, name string) (model.Scene, geo.Info, error) {
	return readScene(ctx, name, func(info geo.Info) (*spectral.Plan, error) { return trainPlan(info), nil })
}

// readScene reads a scene through the band plan plan gives for it (nil:
// every band as it is).
func readScene(ctx context.Context, name string, plan func(geo.Info) (*spectral.Plan, error)) (model.Scene, geo.Info, error) {
	ds, info, p, err := openPlanned(name, plan)
	if err != nil {
		return model.Scene{}, info, err
	}
	defer ds.Close()
	s, err := heldScene(ctx, ds, info, p)
	return s, info, err
}

// heldScene reads all of ds (opened with plan p) into memory.
func heldScene(ctx context.Context, ds *geo.Scene, info geo.Info, p *spectral.Plan) (model.Scene, error) {
	b, err := ds.ReadWindow(ctx, geo.Window{Cols: info.Cols, Rows: info.Rows})
	if err != nil {
		return model.Scene{}, err
	}
	return model.Scene{Rows: info.Rows, Cols: info.Cols, Bands: b.Bands, Data: b.Data, Valid: b.Valid, WavelengthsNM: plannedCentres(info, p)}, nil
}

// openPlanned opens a scene and sets the band plan plan gives for it
// (nil: every band as it is); the plan is returned beside the scene.
func openPlanned(name string, plan func(geo.Info) (*spectral.Plan, error)) (*geo.Scene, geo.Info, *spectral.Plan, error) {
	ds, err := geo.Open(name)
	if err != nil {
		return nil, geo.Info{}, nil, err
	}
	info := ds.Info()
	p, err := plan(info)
	if err != nil {
		ds.Close()
		return nil, info, nil, fmt.Errorf("%s: %w", name, err)
	}
	if p != nil && !p.Identity(info.Bands) {
		if err := ds.SetBandPlan(p); err != nil {
			ds.Close()
			return nil, info, nil, err
		}
	}
	return ds, info, p, nil
}

// plannedCentres are the band centres of the bands plan p reads, when
// every band read has one (a model records all or none; JSON has no NaN).
func plannedCentres(info geo.Info, p *spectral.Plan) []float64 {
	switch bs := info.BandSet(); {
	case p == nil || p.Identity(info.Bands):
		if bs.HasCentres() {
			return bs.CentresNM
		}
	case p.Weights == nil:
		if sub := bs.Subset(p.Read); sub.HasCentres() {
			return sub.CentresNM
		}
	}
	return nil
}

// streamTraining says a scene of rows x cols x bands with labels trains
// read by windows (model.NewStreamedScene) rather than held: when asked,
// or when the held run would not fit the training budget (so that the
// budget a refusal names then works, and the held run is taken wherever
// it fits). Scenes within one tile, and runs asked to train whole, are
// held.
func streamTraining(rows, cols, bands int, labels []int32, opts model.TrainOptions, asked bool) bool {
	tile := cmp.Or(opts.Tile, tiling.CanonicalTile)
	if opts.Whole || (rows <= tile && cols <= tile) {
		return false
	}
	return asked || !model.HeldTrainFits(rows, cols, bands, classCount(labels), opts)
}

// classCount is the number of distinct class values in labels.
func classCount(labels []int32) int {
	seen := make([]bool, MaxClassValue+1)
	n := 0
	for _, v := range labels {
		if v > 0 && int(v) < len(seen) && !seen[v] {
			seen[v] = true
			n++
		}
	}
	return n
}

// sceneSource is a scene read by windows for training.
type sceneSource struct{ ds *geo.Scene }

func (s sceneSource) ReadWindow(ctx context.Context, row, col, rows, cols, rowPixels int, data []float32, valid []bool) error {
	return s.ds.ReadWindowAt(ctx, geo.Window{Col: col, Row: row, Cols: cols, Rows: rows}, data, valid, rowPixels)
}

// trainPlan is the selection of the bands a scene does not declare bad
// (nil when it declares none).
func trainPlan(info geo.Info) *spectral.Plan {
	good := info.BandSet().Good()
	if len(good) == info.Bands || len(good) == 0 {
		return nil
	}
	return &spectral.Plan{Read: good, Out: len(good)}
}

// BandSelection chooses the bands of a training scene a model takes, so
// that it applies to other sensors' scenes (each resampled to its bands):
// the good bands within RangesNM (nil: all), and of those the ones every
// band set of CommonWith covers (spectral.CommonBands). The zero value
// takes every good band.
type BandSelection struct {
	RangesNM   [][2]float64
	CommonWith []NamedBandSet
}

// NamedBandSet is a scene's or a sensor's band set with its name for
// messages and the model's record.
type NamedBandSet struct {
	Name  string
	Bands spectral.BandSet
}

// IsZero reports whether the selection takes every good band.
func (s BandSelection) IsZero() bool { return len(s.RangesNM) == 0 && len(s.CommonWith) == 0 }

// Describe is the selection in words, as the model records it:
// "420-1330, 1470-1780 nm; shared with EnMAP, EMIT".
func (s BandSelection) Describe() string {
	var parts []string
	if len(s.RangesNM) > 0 {
		rs := make([]string, len(s.RangesNM))
		for i, r := range s.RangesNM {
			rs[i] = strconv.FormatFloat(r[0], 'f', -1, 64) + "-" + strconv.FormatFloat(r[1], 'f', -1, 64)
		}
		parts = append(parts, strings.Join(rs, ", ")+" nm")
	}
	if len(s.CommonWith) > 0 {
		ns := make([]string, len(s.CommonWith))
		for i, n := range s.CommonWith {
			ns[i] = n.Name
		}
		parts = append(parts, "shared with "+strings.Join(ns, ", "))
	}
	return strings.Join(parts, "; ")
}

// ErrBandSelection is returned (wrapped) when a band selection leaves no
// band of the training scene, or the scene has no wavelengths to select by.
var ErrBandSelection = errors.New("band selection")

// SelectBands returns the bands (0-based, ascending) of a scene of info
// that sel keeps: its good bands, within sel's ranges, covered by every
// band set sel names.
func SelectBands(info geo.Info, sel BandSelection) ([]int, error) {
	bs := info.BandSet()
	if sel.IsZero() {
		if good := bs.Good(); len(good) > 0 {
			return good, nil
		}
		return allBandsOf(info.Bands), nil // every band declared bad: read them all, as ever
	}
	if !bs.HasCentres() {
		return nil, fmt.Errorf("%w: the scene declares no band wavelengths, so bands cannot be chosen by wavelength", ErrBandSelection)
	}
	keep := bs.Good()
	if len(sel.RangesNM) > 0 {
		keep = spectral.InRanges(bs, sel.RangesNM)
	}
	if len(sel.CommonWith) > 0 {
		others := make([]spectral.BandSet, len(sel.CommonWith))
		for i, n := range sel.CommonWith {
			if !n.Bands.HasCentres() {
				return nil, fmt.Errorf("%w: %s declares no band wavelengths", ErrBandSelection, n.Name)
			}
			others[i] = n.Bands
		}
		common := spectral.CommonBands(bs, others...)
		keep = slices.DeleteFunc(keep, func(i int) bool { return !slices.Contains(common, i) })
	}
	if len(keep) == 0 {
		lo, hi := bs.Range(bs.Good())
		return nil, fmt.Errorf("%w: no good band of the scene (%.0f-%.0f nm) is left by the selection (%s)", ErrBandSelection, lo, hi, sel.Describe())
	}
	return keep, nil
}

func allBandsOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// selectionPlan is the band plan that reads the bands keep of a scene of
// info (nil when that is every band, in order).
func selectionPlan(info geo.Info, keep []int) *spectral.Plan {
	if len(keep) == info.Bands {
		return nil
	}
	return &spectral.Plan{Read: keep, Out: len(keep)}
}

// BandRecordOf is what a model trained on a scene of info records of its
// bands: the widths of the bands it keeps (those not declared bad), which
// they are when it leaves some out, the bad ones, the wavelength units and
// the radiometry.
func BandRecordOf(info geo.Info) model.BandRecord {
	return bandRecordOf(info, info.BandSet().Good(), "")
}

// bandRecordOf is BandRecordOf for a model that takes the bands good (a
// selection described by selection, "" for every good band).
func bandRecordOf(info geo.Info, good []int, selection string) model.BandRecord {
	bs := info.BandSet()
	rec := model.BandRecord{WavelengthUnits: info.WavelengthUnits, Radiometry: info.Radiometry, Selection: selection}
	if bs.FWHMNM != nil && bs.HasCentres() {
		// Widths only when every band kept has one (all or none).
		sub := bs.Subset(good)
		all := true
		for i := range sub.Bands {
			_, ok := sub.FWHM(i)
			all = all && ok
		}
		if all {
			rec.FWHMNM = sub.FWHMNM
		}
	}
	if len(good) < info.Bands && len(good) > 0 {
		rec.SceneBands, rec.BandsUsed = info.Bands, good
		for i, bad := range info.BadBands {
			if bad {
				rec.BadBands = append(rec.BadBands, i)
			}
		}
	}
	return rec
}

// ErrLabels is returned (wrapped) when a label raster cannot serve as labels
// for a scene: wrong size, several bands, or values that are not class values.
var ErrLabels = errors.New("not a usable label raster")

// MaxClassValue is the largest class value a label raster may hold: a
// product stores classes as UInt16 at most, 65535 being its no-data
// (geo.NoDataUInt16), so a model trained on that value could map nothing.
const MaxClassValue = geo.NoDataUInt16 - 1

// ReadLabels reads a single-band class raster of rows x cols pixels: class
// values 1..MaxClassValue (whole numbers), 0 = unlabelled; nodata pixels read as 0.
func ReadLabels(ctx context.Context, name string, rows, cols int) ([]int32, error) {
	ds, err := geo.Open(name)
	if err != nil {
		return nil, err
	}
	defer ds.Close()
	info := ds.Info()
	if info.Bands != 1 {
		return nil, fmt.Errorf("%s: %d bands; a label raster has one band of class values: %w", name, info.Bands, ErrLabels)
	}
	if info.Rows != rows || info.Cols != cols {
		return nil, fmt.Errorf("%s: %d x %d pixels (cols x rows); the scene has %d x %d: %w",
			name, info.Cols, info.Rows, cols, rows, ErrLabels)
	}
	b, err := ds.ReadWindow(ctx, geo.Window{Cols: cols, Rows: rows})
	if err != nil {
		return nil, err
	}
	out := make([]int32, rows*cols)
	for i, v := range b.Data {
		if !b.Valid[i] {
			continue
		}
		if v < 0 || v != float32(math.Trunc(float64(v))) || v > MaxClassValue {
			return nil, fmt.Errorf("%s: pixel (row %d, col %d) holds %g; class values are whole numbers 0..%d (0 = unlabelled, %d is the products' no-data): %w",
				name, i/cols, i%cols, v, MaxClassValue, geo.NoDataUInt16, ErrLabels)
		}
		out[i] = int32(v)
	}
	return out, nil
}

// ParseClassNames reads class names, one class a line: the class value,
// then a separator (tab, comma, '=', ':' or spaces), then the name. Blank
// lines and lines starting with '#' are skipped. The source names the input
// in errors.
func ParseClassNames(r io.Reader, source string) (map[int]string, error) {
	names := map[int]string{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		value, name, err := parseClassName(text)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", source, line, err)
		}
		if _, dup := names[value]; dup {
			return nil, fmt.Errorf("%s line %d: class %d named twice", source, line, value)
		}
		names[value] = name
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	return names, nil
}

// parseClassName splits "VALUE<sep>NAME".
func parseClassName(text string) (int, string, error) {
	i := strings.IndexFunc(text, func(r rune) bool {
		return r == '\t' || r == ',' || r == '=' || r == ':' || r == ' '
	})
	if i < 0 {
		return 0, "", fmt.Errorf("%q: want VALUE NAME (e.g. \"1 Brocoli_green_weeds_1\")", text)
	}
	vs := strings.TrimSpace(text[:i])
	name := strings.TrimSpace(strings.Trim(strings.TrimSpace(text[i+1:]), `"`))
	v, err := strconv.Atoi(vs)
	if err != nil || v < 1 || v > MaxClassValue {
		return 0, "", fmt.Errorf("%q: class value %q is not a whole number in 1..%d", text, vs, MaxClassValue)
	}
	if name == "" {
		return 0, "", fmt.Errorf("%q: class %d has an empty name", text, v)
	}
	return v, name, nil
}

// TrainRequest names the inputs of a training run.
type TrainRequest struct {
	Scene  string // scene (any GDAL dataset name)
	Labels string // label raster: class values, 0 = unlabelled
	// TrainMask, when set, is a raster of the training pixels (their class
	// values, 0 elsewhere): a fixed split instead of the seeded one.
	TrainMask string
	Options   model.TrainOptions
	// Radiometry, when known, says what the scene's values measure where
	// the scene does not (it overrides the scene's own statement).
	Radiometry spectral.Radiometry
	// Bands chooses the bands the model takes (zero: every good band).
	Bands BandSelection
	// ReadByWindows reads the scene by windows while training instead of
	// holding it (model.NewStreamedScene); without it, a scene that would
	// not fit the training budget held is read so anyway.
	ReadByWindows bool
}

// TrainResult describes a finished training run.
type TrainResult struct {
	Model             *model.Model
	Rows, Cols, Bands int
	LabelledPixels    int // labelled valid pixels of the labels raster
	TrainPixels       int
	Elapsed           time.Duration // reading included
	ReadTime, FitTime time.Duration
	Backend           string
	ReadByWindows     bool // the scene was read by windows, not held
}

// Train reads the scene and the labels (and the fixed split, if any) and
// fits a model on them.
func Train(ctx context.Context, req TrainRequest) (TrainResult, error) {
	start := time.Now()
	var keep []int
	plan := func(info geo.Info) (*spectral.Plan, error) {
		var err error
		if keep, err = SelectBands(info, req.Bands); err != nil {
			return nil, err
		}
		return selectionPlan(info, keep), nil
	}
	in, closeScene, err := readTrainInputs(ctx, req.Scene, req.Labels, plan, req.Options, req.ReadByWindows)
	if err != nil {
		return TrainResult{}, err
	}
	defer closeScene()
	var cache int64
	if in.scene.Streamed() {
		// The steps and the statistics passes read the scene by windows:
		// GDAL's block cache holds a row of its blocks across the scene
		// (the whole-scene passes read full-width strips), inside the
		// budget rather than GDAL's default share of the machine, and the
		// Go heap keeps to the rest.
		cache = processor.BlockCacheBytes(in.info, in.info.Cols)
	}
	budget := memory.TrainBudget(req.Options.MaxMemoryBytes)
	var need int64
	if !in.scene.Streamed() {
		need = model.WindowedTrainBytes(in.scene, classCount(in.labels), req.Options)
	}
	if budget > 0 && (need > 0 || cache > 0) {
		// A windowed run on a held scene holds the Go heap to its
		// estimate and the collector's headroom, even under a larger
		// budget (the default: all the memory the process may use): each
		// step's garbage then goes before the heap grows past what the
		// run holds. Without it a densely labelled 1000 px scene's 200
		// epochs grew to 3.06 GB. A run read by windows keeps to its
		// budget, as measured (4000 px at --max-memory 4G: 2.95 GB).
		if need > 0 {
			budget = min(budget, need+need/trainHeapHeadroom)
		}
		release := resources.Reserve(geo.Knobs{}, resources.Run{BudgetBytes: budget, OffHeapBytes: cache, BlockCacheBytes: cache})
		defer release()
	}
	opts := req.Options
	if cache > 0 && opts.MaxMemoryBytes > 0 {
		// The model checks its own parts against what the cache leaves.
		opts.MaxMemoryBytes = max(opts.MaxMemoryBytes-cache, 1)
	}
	opts.Bands = bandRecordOf(in.info, keep, req.Bands.Describe())
	if req.Radiometry.Known() {
		opts.Bands.Radiometry = req.Radiometry
	}
	if opts.Provenance == (model.Provenance{}) {
		opts.Provenance = model.Provenance{Scene: absIfFile(req.Scene), Labels: absIfFile(req.Labels), TrainMask: absIfFile(req.TrainMask)}
	}
	if req.TrainMask != "" {
		if opts.TrainMask, err = readTrainMask(ctx, req.TrainMask, req.Labels, in); err != nil {
			return TrainResult{}, err
		}
	}
	readTime := time.Since(start)
	fitStart := time.Now()
	m, err := model.Train(ctx, in.scene, in.labels, opts)
	if me := (*model.MemoryError)(nil); errors.As(err, &me) && cache > 0 {
		// The budget named is the run's, block cache included.
		me.NeedBytes += cache
		me.LimitBytes += cache
	}
	if err != nil {
		return TrainResult{}, err
	}
	res := TrainResult{
		Model: m, Rows: in.scene.Rows, Cols: in.scene.Cols, Bands: in.scene.Bands,
		LabelledPixels: countLabelled(in.labels, in.scene.Valid), TrainPixels: len(m.TrainIndices()),
		ReadTime: readTime, FitTime: time.Since(fitStart), Elapsed: time.Since(start), Backend: m.Backend(),
		ReadByWindows: in.scene.Streamed(),
	}
	return res, nil
}

// inputs is a scene and its labels in memory.
type inputs struct {
	scene  model.Scene
	info   geo.Info
	labels []int32
}

// readInputs reads a scene and its label raster and checks that they
// match. The scene is read through the band plan plan gives for it; nil
// reads it for training (ReadScene).
func readInputs(ctx context.Context, scene, labels string, plan func(geo.Info) (*spectral.Plan, error)) (inputs, error) {
	if plan == nil {
		plan = func(info geo.Info) (*spectral.Plan, error) { return trainPlan(info), nil }
	}
	s, info, err := readScene(ctx, scene, plan)
	if err != nil {
		return inputs{}, err
	}
	l, err := ReadLabels(ctx, labels, s.Rows, s.Cols)
	if err != nil {
		return inputs{}, err
	}
	if err := checkLabelled(l, s.Valid, scene, labels); err != nil {
		return inputs{}, err
	}
	return inputs{scene: s, info: info, labels: l}, nil
}

// trainHeapHeadroom is the collector's headroom over a windowed run's
// estimate, as a fraction of it (1/trainHeapHeadroom): a heap held
// at the estimate itself left the statistics passes after the epochs
// collecting without pause (a densely labelled 1000 px scene's took
// twice as long).
const trainHeapHeadroom = 5

// readTrainInputs is readInputs for training under opts: a scene too
// large to hold (streamTraining) is opened for reading by windows, and
// close closes it once training is done with it.
func readTrainInputs(ctx context.Context, scene, labels string, plan func(geo.Info) (*spectral.Plan, error), opts model.TrainOptions, byWindows bool) (in inputs, close func(), err error) {
	ds, info, p, err := openPlanned(scene, plan)
	if err != nil {
		return inputs{}, nil, err
	}
	closeDS := sync.OnceFunc(func() { ds.Close() })
	l, err := ReadLabels(ctx, labels, info.Rows, info.Cols)
	if err != nil {
		closeDS()
		return inputs{}, nil, err
	}
	var s model.Scene
	if streamTraining(info.Rows, info.Cols, ds.Bands(), l, opts, byWindows) {
		s, err = model.NewStreamedScene(ctx, sceneSource{ds}, info.Rows, info.Cols, ds.Bands(), plannedCentres(info, p))
	} else {
		s, err = heldScene(ctx, ds, info, p)
		closeDS() // held: the file is done with
	}
	if err != nil {
		closeDS()
		return inputs{}, nil, fmt.Errorf("%s: %w", scene, err)
	}
	if err := checkLabelled(l, s.Valid, scene, labels); err != nil {
		closeDS()
		return inputs{}, nil, err
	}
	return inputs{scene: s, info: info, labels: l}, closeDS, nil
}

// checkLabelled refuses labels with no labelled pixel over a valid one.
func checkLabelled(l []int32, valid []bool, scene, labels string) error {
	if countLabelled(l, valid) == 0 {
		return fmt.Errorf("%s: no labelled pixel (non-zero value) over a valid pixel of %s: %w", labels, scene, ErrLabels)
	}
	return nil
}

// readTrainMask reads a fixed split for the scene and labels of in.
func readTrainMask(ctx context.Context, path, labelsName string, in inputs) ([]int32, error) {
	mask, err := ReadLabels(ctx, path, in.scene.Rows, in.scene.Cols)
	if err != nil {
		return nil, fmt.Errorf("training mask: %w", err)
	}
	// A training pixel must carry the same class in the labels, or the
	// split and the labels describe different scenes.
	for i, v := range mask {
		if v != 0 && in.labels[i] != 0 && in.labels[i] != v {
			return nil, fmt.Errorf("%s: pixel (row %d, col %d) is class %d, but %s says %d: %w",
				path, i/in.scene.Cols, i%in.scene.Cols, v, labelsName, in.labels[i], ErrLabels)
		}
	}
	return mask, nil
}

func countLabelled(labels []int32, valid []bool) int {
	n := 0
	for i, v := range labels {
		if v != 0 && (valid == nil || valid[i]) {
			n++
		}
	}
	return n
}

// ReadClassNamesFile reads a class-names file (see ParseClassNames).
func ReadClassNamesFile(path string) (map[int]string, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseClassNames(f, path)
}

// absIfFile is name made absolute when it names a local file, so that the
// model's record of it holds from any directory; other dataset names
// (URLs, /vsi paths) stay as they are.
func absIfFile(name string) string {
	if name == "" {
		return ""
	}
	if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
		if abs, err := filepath.Abs(name); err == nil {
			return abs
		}
	}
	return name
}
