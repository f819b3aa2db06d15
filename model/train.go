package model

import (
	"context"

	"fmt"
	"github.com/gomlx/compute"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/progress"

	"github.com/pnec/pnec/model/internal/kernels"
)

// withDefaults fills zero fields of o with the paper's values, each on its
// own: Config{Epochs: 5} trains 5 epochs of the paper's network. The fields
// that must be positive (the sizes, TauInit, LearningRate, Epochs, the
// recovery window) take their default whenever they are zero. The weights
// and switches where zero is a setting (Momentum, GateFloor, Alpha, Beta,
// the loss weights, ECWarmupEpochs, the recovery strength) take their
// defaults only when all of them are zero: a Config that sets none of them
// wants the paper's; one that sets any (DefaultConfig() with
// ECWarmupEpochs = 0, say) means its zeros. Input and Augment are left as
// they are: "" is the reference's per-band stretch and a zero Augment is
// off, as in a model file, so a partial Config trains the paper's network;
// pnec's defaults (DefaultInput, DefaultAugment) come with DefaultConfig().
func (o TrainOptions) withDefaults() TrainOptions {
	def := DefaultConfig()
	c := &o.Config
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&c.Hidden, def.Hidden}, {&c.DState, def.DState}, {&c.DConv, def.DConv}, {&c.Expand, def.Expand},
		{&c.HeadDim, def.HeadDim}, {&c.Chunk, def.Chunk}, {&c.Groups, def.Groups}, {&c.DiffWindow, def.DiffWindow},
		{&c.Epochs, def.Epochs}, {&c.Recovery.Window, def.Recovery.Window},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.TauInit == 0 {
		c.TauInit = def.TauInit
	}
	if c.LearningRate == 0 {
		c.LearningRate = def.LearningRate
	}
	if c.Momentum == 0 && c.GateFloor == 0 && c.Alpha == 0 && c.Beta == 0 && c.LambdaBranch == 0 &&
		c.LambdaProto == 0 && c.LambdaCon == 0 && c.ECWarmupEpochs == 0 && c.Recovery.Eta == 0 {
		c.Momentum, c.GateFloor, c.Alpha, c.Beta = def.Momentum, def.GateFloor, def.Alpha, def.Beta
		c.LambdaBranch, c.LambdaProto, c.LambdaCon = def.LambdaBranch, def.LambdaProto, def.LambdaCon
		c.ECWarmupEpochs, c.Recovery.Eta = def.ECWarmupEpochs, def.Recovery.Eta
	}
	if c.Ablation == "" {
		c.Ablation = AblationFull
	}
	if c.Encoder == "" {
		c.Encoder = def.Encoder
	}
	if o.TrainPerClass == 0 {
		o.TrainPerClass = DefaultTrainPerClass
	}
	if o.SplitSeed == 0 {
		o.SplitSeed = DefaultSplitSeed
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	return o
}

// validateConfig checks the values a user can set.
func validateConfig(c Config) error {
	switch c.Ablation {
	case AblationFull, AblationBase, AblationNoEC, AblationNoRC, AblationNoRecovery:
	default:
		return fmt.Errorf("ablation %q: want full, base, no-ec, no-rc or no-recovery", c.Ablation)
	}
	switch c.Encoder {
	case EncoderPaper, EncoderCell:
	default:
		return fmt.Errorf("encoder %q: want paper or cell", c.Encoder)
	}
	switch c.Input {
	case "", InputStretch, InputShape, InputStretchShape, InputSNV:
	default:
		return fmt.Errorf("input %q: want %s, %s, %s or %s", c.Input, InputStretch, InputShape, InputStretchShape, InputSNV)
	}
	if err := c.Augment.validate(); err != nil {
		return err
	}
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("epochs %d: need at least 1", c.Epochs)
	case !(c.LearningRate > 0):
		return fmt.Errorf("learning rate %g: must be positive", c.LearningRate)
	case c.GateFloor < 0 || c.GateFloor > 1:
		return fmt.Errorf("gate floor %g: must be in [0,1]", c.GateFloor)
	case c.Momentum < 0 || c.Momentum >= 1:
		return fmt.Errorf("momentum %g: must be in [0,1)", c.Momentum)
	case !(c.TauInit > 0):
		return fmt.Errorf("tau %g: must be positive", c.TauInit)
	case c.Recovery.Window < 1 || c.Recovery.Window%2 == 0:
		return fmt.Errorf("recovery window %d: must be odd and positive", c.Recovery.Window)
	case c.Recovery.Eta < 0 || c.Recovery.Eta > 1:
		return fmt.Errorf("recovery eta %g: must be in [0,1]", c.Recovery.Eta)
	case c.InputLevels != 0 && (c.InputLevels < 2 || c.InputLevels > 1<<16):
		return fmt.Errorf("input levels %d: 0 (off) or 2..65536", c.InputLevels)
	}
	return nil
}

// trainData is everything a training step needs besides the weights.
type trainData struct {
	x *tensors.Tensor // the network's input (netInput)
	// xAug, when set, is an augmented input: the step runs the network on
	// it with the GroupNorm statistics of x (see trainer.augExec).
	xAug     *tensors.Tensor
	masks    []*tensors.Tensor // netMasks: valid rows of the grids GroupNorm runs on
	anchor   *tensors.Tensor   // [L] int32 dense class of cells holding a training pixel, else -1
	wtr      *tensors.Tensor   // [Ntr, L] bilinear weights of the training pixels
	ytr      *tensors.Tensor   // [Ntr] int32 dense class
	cellMask *tensors.Tensor   // [L] 1 for cells with a valid pixel
}

// Train fits a model on scene s. labels holds class values (row-major,
// Rows*Cols, 0 = unlabelled); the training pixels are picked from them
// (or given by opts.TrainMask) and all other labelled pixels are test pixels.
func Train(ctx context.Context, s Scene, labels []int32, opts TrainOptions) (m *Model, err error) {
	start := time.Now()
	opts = opts.withDefaults()
	cfg := opts.Config
	setup, err := newTrainSetup(s, labels, opts)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	desc, err := DecideBackend(opts.Backend, Job{Task: TaskTrain, Pixels: int64(s.Rows * s.Cols), Epochs: cfg.Epochs})
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	b, err := desc.Open()
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	closeBackend := sync.OnceFunc(b.Finalize)
	defer closeBackend()
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("train on %s: %v", desc.Label(), r)
		}
	}()

	run := &trainRun{s: s, cfg: cfg, desc: desc, setup: setup}
	defer run.finalize()
	if err := run.prepare(b, opts.Seed); err != nil {
		return nil, err
	}
	loss, acc, err := run.fit(ctx, opts.Progress, start)
	if err != nil {
		return nil, err
	}
	params, protos, err := run.weights()
	if err != nil {
		return nil, fmt.Errorf("train: read weights: %w", err)
	}
	// The step's state and compiled graph are done with: release them
	// before the statistics passes below, which compile and run inference
	// graphs of their own (held together they made the peak).
	run.finalize()
	m = newTrainedModel(run, opts, params, protos, loss, acc, start)
	if err := m.meta.setBandRecord(opts.Bands); err != nil {
		return nil, fmt.Errorf("train: band record: %w", err)
	}
	m.meta.setProvenance(opts.Provenance)
	m.meta.spectralSpectra, m.meta.SpectralClasses = trainSpectra(s, setup.trainIdx, setup.ytrain)
	if m.meta.GroupNormStats, err = groupNormStats(b, m, s, run.fr); err != nil {
		return nil, fmt.Errorf("train: group norm statistics on %s: %w", desc.Label(), err)
	}
	// The drift pass predicts on a backend of its own: the training
	// backend's buffers go first, so that its memory is reused rather than
	// added to (measured at Pavia size, cell encoder: peak RSS 2065 ->
	// 2004 MB; the drift pass still adds about 300 MB to training's peak).
	closeBackend()
	runtime.GC()
	if m.meta.Drift, err = trainDriftStats(ctx, m, s, desc.Name); err != nil {
		return nil, fmt.Errorf("train: drift statistics on %s: %w", desc.Label(), err)
	}
	if _, sum, err := m.fileBytes(); err == nil {
		m.checksum = sum
	}
	// The kernels compiled here serve the next processes; a cache that
	// cannot be written only costs a later run time.
	_ = PublishCompileCache()
	return m, nil
}

// trainSetup is what Train takes from its inputs before it opens a
// backend: the classes, the training pixels and the network's sizes.
type trainSetup struct {
	values   []int32 // the class values, ascending
	classes  []Class
	trainIdx []int   // the training pixels, row-major
	ytrain   []int32 // their dense classes
	split    string  // "seed" or "mask"
	d        dims
	lo, hi   []float32 // the per-band stretch
}

// newTrainSetup checks Train's inputs and derives its setup; its errors
// are Train's without the "train: " prefix.
func newTrainSetup(s Scene, labels []int32, opts TrainOptions) (*trainSetup, error) {
	cfg := opts.Config
	if err := checkTrainInputs(s, labels, opts); err != nil {
		return nil, err
	}
	st := &trainSetup{values: trainClassValues(s, labels, opts.TrainMask)}
	if len(st.values) < 2 {
		return nil, fmt.Errorf("labels hold %d classes among valid pixels, need at least 2", len(st.values))
	}
	var denseOf map[int32]int32
	denseOf, st.classes = trainClasses(st.values, opts)
	st.trainIdx, st.split = trainSplit(s, labels, opts, denseOf, len(st.values))
	if len(st.trainIdx) == 0 {
		return nil, fmt.Errorf("no training pixels")
	}
	st.ytrain = trainTargetClasses(st.trainIdx, labels, opts.TrainMask, denseOf)
	var err error
	if st.d, err = makeDims(cfg, s.Bands, len(st.values)); err != nil {
		return nil, err
	}
	if err := checkTrainMemory(st.d, cfg, s, opts.MaxMemoryBytes); err != nil {
		return nil, err
	}
	if st.lo, st.hi, err = bandStretch(s); err != nil {
		return nil, fmt.Errorf("normalisation statistics: %w", err)
	}
	return st, nil
}

// checkTrainInputs checks the configuration, the scene and that the labels
// and the training mask cover the scene.
func checkTrainInputs(s Scene, labels []int32, opts TrainOptions) error {
	if err := validateConfig(opts.Config); err != nil {
		return err
	}
	if err := checkScene(s); err != nil {
		return err
	}
	npix := s.Rows * s.Cols
	if len(labels) != npix {
		return fmt.Errorf("labels have %d values, scene %d pixels", len(labels), npix)
	}
	if opts.TrainMask != nil && len(opts.TrainMask) != npix {
		return fmt.Errorf("training mask has %d values, scene %d pixels", len(opts.TrainMask), npix)
	}
	return nil
}

// trainClassValues is every value in the labels and the training mask at
// valid pixels, ascending.
func trainClassValues(s Scene, labels, trainMask []int32) []int32 {
	seen := map[int32]bool{}
	for _, vs := range [][]int32{labels, trainMask} {
		for i, v := range vs {
			if v > 0 && s.valid(i) {
				seen[v] = true
			}
		}
	}
	values := make([]int32, 0, len(seen))
	for v := range seen {
		values = append(values, v)
	}
	slices.Sort(values)
	return values
}

// trainClasses numbers the class values densely and names and colours
// them from opts (a class without a name is "class N").
func trainClasses(values []int32, opts TrainOptions) (denseOf map[int32]int32, classes []Class) {
	denseOf = map[int32]int32{}
	classes = make([]Class, len(values))
	for k, v := range values {
		denseOf[v] = int32(k)
		classes[k] = Class{Value: int(v), Name: opts.ClassNames[int(v)], Color: PaletteColor(int(v))}
		if classes[k].Name == "" {
			classes[k].Name = fmt.Sprintf("class %d", v)
		}
		if c, ok := opts.Colors[int(v)]; ok {
			classes[k].Color = c
		}
	}
	return denseOf, classes
}

// trainSplit picks the training pixels: the training mask's valid pixels
// when there is one ("mask"), else opts.TrainPerClass per class drawn with
// opts.SplitSeed ("seed").
func trainSplit(s Scene, labels []int32, opts TrainOptions, denseOf map[int32]int32, classes int) (trainIdx []int, split string) {
	if opts.TrainMask != nil {
		for i, v := range opts.TrainMask {
			if v > 0 && s.valid(i) {
				trainIdx = append(trainIdx, i)
			}
		}
		return trainIdx, "mask"
	}
	dense := make([]int32, len(labels))
	for i, v := range labels {
		dense[i] = -1
		if v > 0 && s.valid(i) {
			dense[i] = denseOf[v]
		}
	}
	return pickSplit(dense, classes, opts.TrainPerClass, opts.SplitSeed), "seed"
}

// trainTargetClasses is the dense class of each training pixel, from the
// training mask when there is one, else from the labels.
func trainTargetClasses(trainIdx []int, labels, trainMask []int32, denseOf map[int32]int32) []int32 {
	ytrain := make([]int32, len(trainIdx))
	for t, i := range trainIdx {
		if trainMask != nil {
			ytrain[t] = denseOf[trainMask[i]]
		} else {
			ytrain[t] = denseOf[labels[i]]
		}
	}
	return ytrain
}

// checkTrainMemory checks the memory budget and that training fits in it.
func checkTrainMemory(d dims, cfg Config, s Scene, maxBytes int64) error {
	if maxBytes < 0 {
		return fmt.Errorf("memory budget %d bytes: must be 0 (default) or positive", maxBytes)
	}
	if need, budget := trainBytes(d, cfg, s.Rows, s.Cols), memory.TrainBudget(maxBytes); budget > 0 && need > budget {
		return &MemoryError{NeedBytes: need, LimitBytes: budget}
	}
	return nil
}

// trainRun is one training run on its backend: the step's constant
// inputs, the augmentation (on the host, in a graph of its own, or of the
// kernels' scene) and the trainer.
type trainRun struct {
	s     Scene
	cfg   Config
	desc  Backend
	setup *trainSetup
	in    inputSpec
	fr    *kernels.FullRes
	td    trainData
	aug   *augmenter
	ag    *augGraph
	st    *trainer
	// frChanged is whether fr is on an augmented scene.
	frChanged bool
}

// prepare builds the run's parts on b; its errors carry Train's prefix.
func (r *trainRun) prepare(b compute.Backend, seed int64) error {
	s, cfg, setup := r.s, r.cfg, r.setup
	r.in = newInputSpec(cfg.Input, cfg.InputLevels, setup.lo, setup.hi)
	// The augmentation runs in a graph of its own on XLA (augGraph: the scene
	// goes to the device once), on the host on the Go backend.
	inGraph, err := augmentInGraph(r.desc)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	inGraph = inGraph && cfg.Augment.On()
	// On the Go backend the paper encoder's full-resolution stage runs on
	// pnec's own kernels beside the graph (kernels.FullRes; see encState), for the
	// reference's input without augmentation (fullResTraining), unless the
	// augmentation graph makes the network's input.
	if useFullRes && r.desc.Kind == BackendGo && fullResTraining(cfg) && !inGraph {
		r.fr = newFullRes(setup.d, s, r.in, runtime.GOMAXPROCS(0))
	}
	r.td = newTrainData(s, r.in, setup.trainIdx, setup.ytrain, cfg.Encoder, r.fr != nil || inGraph)
	r.aug = newAugmenter(cfg.Augment, s, r.in, cfg.Encoder, seed)
	if inGraph {
		if r.ag, err = newAugGraph(b, s, r.in, cfg.Encoder, setup.trainIdx, setup.ytrain, len(setup.values), seed); err != nil {
			return fmt.Errorf("train: augmentation graph on %s: %w", r.desc.Label(), err)
		}
		if err := r.ag.clean(&r.td); err != nil {
			return fmt.Errorf("train: clean scene on %s: %w", r.desc.Label(), err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d616d6261))
	params := initParams(setup.d, cfg, rng)
	if r.st, err = newTrainer(b, setup.d, cfg, params, r.fr); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// fit runs the epochs, reporting each to onEpoch when set; it returns the
// last epoch's loss and training accuracy.
func (r *trainRun) fit(ctx context.Context, onEpoch progress.Func, start time.Time) (loss, acc float64, err error) {
	for epoch := 1; epoch <= r.cfg.Epochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return 0, 0, fmt.Errorf("train: stopped at epoch %d: %w", epoch, err)
		}
		if loss, acc, err = r.epoch(epoch); err != nil {
			return 0, 0, err
		}
		if onEpoch != nil {
			onEpoch(epochEvent(epoch, r.cfg.Epochs, loss, acc, time.Since(start)))
		}
	}
	return loss, acc, nil
}

// epoch runs one training step (epoch counts from 1).
func (r *trainRun) epoch(epoch int) (loss, acc float64, err error) {
	step, err := r.stepInput(epoch)
	if err != nil {
		return 0, 0, err
	}
	loss, acc, err = r.st.step(step, r.calibration(epoch))
	r.aug.done()
	if r.ag != nil {
		r.ag.done()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("train: epoch %d on %s: %w", epoch, r.desc.Label(), err)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, 0, fmt.Errorf("train: epoch %d: loss is %g", epoch, loss)
	}
	return loss, acc, nil
}

// calibration is the step's calibration weight: 0 during the warm-up
// epochs and in the ablations without it, else 1.
func (r *trainRun) calibration(epoch int) float32 {
	cfg := r.cfg
	if epoch <= cfg.ECWarmupEpochs || cfg.Ablation == AblationBase || cfg.Ablation == AblationNoEC {
		return 0
	}
	return 1
}

// stepInput is the step's input at epoch: the clean inputs, or an
// augmented scene (of the kernels, from the augmentation graph or from the
// host's augmenter), cropped when the draw crops.
func (r *trainRun) stepInput(epoch int) (trainData, error) {
	step := r.td
	switch {
	case r.fr != nil:
		r.setKernelScene(epoch)
	case r.ag != nil:
		if st, ok := r.aug.draw(epoch, r.cfg.Epochs); ok {
			o, err := r.ag.step(st)
			if err != nil {
				return trainData{}, fmt.Errorf("train: epoch %d: augmentation on %s: %w", epoch, r.desc.Label(), err)
			}
			step.setAugmented(o.x, r.cfg.Augment.ImageNorm)
			step.masks, step.anchor, step.ytr, step.cellMask = o.masks, o.anchor, o.ytr, o.cellMask
		}
	default:
		if x := r.aug.next(epoch, r.cfg.Epochs); x != nil {
			step.setAugmented(x, r.cfg.Augment.ImageNorm)
		}
	}
	if r.aug.cropped {
		step = r.aug.cropStep(step, r.setup.trainIdx, r.setup.ytrain, r.fr != nil)
	}
	return step, nil
}

// setKernelScene points the kernels at epoch's scene: they take the scene
// itself, and an augmented step (per-image statistics: fullResTraining)
// points them at the changed one.
func (r *trainRun) setKernelScene(epoch int) {
	changed, ok := r.aug.nextScene(epoch, r.cfg.Epochs)
	switch {
	case ok:
		setFullResScene(r.fr, changed, r.in)
		r.frChanged = true
	case r.frChanged:
		setFullResScene(r.fr, r.s, r.in)
		r.frChanged = false
	}
}

// weights reads the trained weights and prototypes, and points the kernels
// back at the clean scene, whose statistics come next.
func (r *trainRun) weights() (paramSet, []float32, error) {
	params, protos, err := r.st.weights()
	if err != nil {
		return nil, nil, err
	}
	if r.frChanged {
		setFullResScene(r.fr, r.s, r.in)
	}
	return params, protos, nil
}

// finalize releases the trainer, the augmentation graph and the step's
// inputs; it may be called again.
func (r *trainRun) finalize() {
	if r.st != nil {
		r.st.finalize()
	}
	if r.ag != nil {
		r.ag.finalize()
	}
	r.td.finalize()
}

// newTrainedModel is the model of a finished run, before its band record,
// provenance and statistics.
func newTrainedModel(r *trainRun, opts TrainOptions, params paramSet, protos []float32, loss, acc float64, start time.Time) *Model {
	s, setup := r.s, r.setup
	m := &Model{
		meta: modelMeta{
			Version: Version, Backend: r.desc.Label(), Config: r.cfg, Bands: s.Bands,
			WavelengthsNM: slices.Clone(s.WavelengthsNM), Classes: setup.classes, StretchLo: setup.lo, StretchHi: setup.hi,
			SceneRows: s.Rows, SceneCols: s.Cols, TrainSplit: setup.split, SplitSeed: opts.SplitSeed, Seed: opts.Seed,
			TrainIndices: setup.trainIdx, FinalLoss: loss, TrainAccuracy: acc,
			TrainSeconds: time.Since(start).Seconds(),
		},
		params: params,
		protos: protos,
	}
	if setup.split == "seed" {
		m.meta.TrainPerClass = opts.TrainPerClass
	}
	return m
}

// setBandRecord records the scene's band metadata from br and checks it.
func (m *modelMeta) setBandRecord(br BandRecord) error {
	m.FWHMNM, m.WavelengthUnits = slices.Clone(br.FWHMNM), br.WavelengthUnits
	m.BadBands, m.BandSelection = slices.Clone(br.BadBands), br.Selection
	if len(br.BandsUsed) > 0 {
		m.SceneBands, m.BandsUsed = br.SceneBands, slices.Clone(br.BandsUsed)
	}
	m.Quantity, m.QuantityScale, m.RadiometricUnits = br.Radiometry.Quantity, br.Radiometry.Scale, br.Radiometry.Units
	return m.validateBandRecord()
}

// setAugmented makes x the step's augmented input: the network's input
// itself with per-image statistics (imageNorm), else the input normalised
// with the clean input's statistics (xAug).
func (td *trainData) setAugmented(x *tensors.Tensor, imageNorm bool) {
	if imageNorm {
		td.x = x
	} else {
		td.xAug = x
	}
}

// newTrainData prepares the constant inputs of the training step: the
// normalised padded scene, the anchor class of cells holding a training
// pixel, the bilinear weights from the stride-4 grid to each training pixel,
// and the valid-cell mask.
//
// With kernels (the paper encoder's full-resolution stage on pnec's own
// kernels, kernels.FullRes) the graph's input is the stage's output, made at every
// step: x stays nil and only the low-resolution mask is kept. Train passes
// kernels also when the augmentation graph makes the input (augGraph.clean
// then fills x and the masks).
func newTrainData(s Scene, in inputSpec, trainIdx []int, ytrain []int32, encoder string, kernels bool) trainData {
	hs, ws := lowRes(s.Rows, encoder), lowRes(s.Cols, encoder)
	l := hs * ws
	var td trainData
	if !kernels {
		x, xdims := netInput(s, in, encoder)
		td.x = tensorOf(x, xdims...)
	}
	masks := stepMasks(s, encoder, kernels)
	for _, mk := range masks {
		td.masks = append(td.masks, tensorOf(mk, len(mk)))
	}
	anchor, ytr := trainTargets(s, encoder, trainIdx, ytrain)
	ur, uc := upMatrix(s.Rows, hs), upMatrix(s.Cols, ws)
	ntr := len(trainIdx)
	wtr := make([]float32, ntr*l)
	for t, i := range trainIdx {
		r, c := i/s.Cols, i%s.Cols
		for a := 0; a < hs; a++ {
			if wa := ur[r*hs+a]; wa != 0 {
				for bb := 0; bb < ws; bb++ {
					wtr[t*l+a*ws+bb] = wa * uc[c*ws+bb]
				}
			}
		}
	}
	td.anchor, td.cellMask = tensorOf(anchor, l), tensorOf(masks[len(masks)-1], l)
	td.wtr, td.ytr = tensorOf(wtr, ntr, l), tensorOf(ytr, ntr)
	return td
}

// stepMasks are the valid masks the training step takes for s (netMasks;
// with kernels only the low-resolution one, the last).
func stepMasks(s Scene, encoder string, kernels bool) [][]float32 {
	masks := netMasks(s, encoder)
	if kernels {
		masks = masks[len(masks)-1:]
	}
	return masks
}

// trainTargets are the step's anchors, [Hs*Ws], the dense class of the cell
// each training pixel lies in, else -1 (the last pixel wins, like the
// reference; pixels past the paper's floor grid go to the nearest cell),
// and the training pixels' classes, -1 for a pixel not valid in s (outside
// a sub-area of Augment.Crop: its one-hot row is zero, so it has no loss
// term and no prototype update).
func trainTargets(s Scene, encoder string, trainIdx []int, ytrain []int32) (anchor, ytr []int32) {
	hs, ws := lowRes(s.Rows, encoder), lowRes(s.Cols, encoder)
	anchor = make([]int32, hs*ws)
	for i := range anchor {
		anchor[i] = -1
	}
	ytr = make([]int32, len(trainIdx))
	for t, i := range trainIdx {
		ytr[t] = -1
		if !s.valid(i) {
			continue
		}
		ytr[t] = ytrain[t]
		r, c := i/s.Cols, i%s.Cols
		anchor[min(r/Stride, hs-1)*ws+min(c/Stride, ws-1)] = ytr[t]
	}
	return anchor, ytr
}

// stepInputs are the training step's inputs by name, in the order step
// passes them (and splitStepInputs takes them): the data (x, anchor, wtr,
// ytr, cellMask), the schedule (calib, and Adam's bias-corrected scales a1
// and c2), the valid masks (trainData.masks), then the state (trainer.state):
// the prototype bank and its initialised flags, the parameters, Adam's
// first and second moments; an augmented step's scene comes last.
type stepInputs struct {
	x, anchor, wtr, ytr, cellMask *Node
	calib, a1, c2                 *Node
	masks                         []*Node
	protos, protoInit             *Node
	params, adamM, adamV          []*Node
	xAug                          *Node // the augmented scene (augmented steps only, after the state)
}

// stepDataInputs is how many inputs come before the valid masks: the data
// and the schedule of stepInputs.
const stepDataInputs = 8

// splitStepInputs names in: masks valid masks, np parameters (and as many
// moments of each kind).
func splitStepInputs(in []*Node, masks, np int) stepInputs {
	take := func(n int) []*Node {
		s := in[:n]
		in = in[n:]
		return s
	}
	var s stepInputs
	d := take(stepDataInputs)
	s.x, s.anchor, s.wtr, s.ytr, s.cellMask, s.calib, s.a1, s.c2 = d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
	s.masks = take(masks)
	bank := take(2)
	s.protos, s.protoInit = bank[stateProtos], bank[stateProtoInit]
	s.params, s.adamM, s.adamV = take(np), take(np), take(np)
	if len(in) > 0 {
		s.xAug = in[0]
	}
	return s
}

// Indices into trainer.state: the bank, its flags, then the parameters
// (then Adam's moments).
const (
	stateProtos    = 0
	stateProtoInit = 1
	stateParams    = 2
)

// finalize releases the tensors of td.
func (td *trainData) finalize() {
	for _, t := range append([]*tensors.Tensor{td.x, td.anchor, td.wtr, td.ytr, td.cellMask}, td.masks...) {
		if t != nil {
			t.FinalizeAll()
		}
	}
	*td = trainData{}
}

// augmenter makes the network input of each augmented training step: the
// training scene changed by a Radiometric drawn from the Augment bounds,
// normalised with the clean scene's statistics (in). Its random source is
// its own (seeded from the run seed), so training without augmentation
// draws exactly what it drew before augmentation existed.
type augmenter struct {
	cfg     Augment
	s       Scene
	in      inputSpec
	encoder string
	means   []float64
	rng     *rand.Rand
	buf     []float32       // the changed scene's values
	x       *tensors.Tensor // the current step's input, released by done
	// Sub-areas (Augment.Crop): their own random source, so that the
	// radiometric stream is the same with and without them.
	cropRng *rand.Rand
	valid   []bool            // the current sub-area's valid mask
	cropped bool              // the current step sees only the pixels valid in valid
	held    []*tensors.Tensor // the current step's other inputs, released by done
}

func newAugmenter(cfg Augment, s Scene, in inputSpec, encoder string, seed int64) *augmenter {
	a := &augmenter{cfg: cfg, s: s, in: in, encoder: encoder}
	if cfg.On() {
		a.means = BandMeans(s)
		a.rng = rand.New(rand.NewPCG(uint64(seed), 0x61756720))
	}
	if cfg.Crop > 0 {
		a.cropRng = rand.New(rand.NewPCG(uint64(seed), 0x63726f70))
		a.valid = make([]bool, s.Rows*s.Cols)
	}
	return a
}

// next returns the input of step epoch of epochs (from 1), or nil for the
// clean input.
func (a *augmenter) next(epoch, epochs int) *tensors.Tensor {
	changed, ok := a.nextScene(epoch, epochs)
	if !ok {
		return nil
	}
	x, dims := netInput(changed, a.in, a.encoder)
	a.x = tensorOf(x, dims...)
	return a.x
}

// nextScene is next's changed scene itself (its values in a.buf and its
// valid mask in a.valid, both valid until the next call), or false for the
// clean scene. next and nextScene draw the same random numbers, so training
// on the graph and on pnec's kernels (kernels.FullRes, which takes the scene) sees
// the same steps.
func (a *augmenter) nextScene(epoch, epochs int) (Scene, bool) {
	st, ok := a.draw(epoch, epochs)
	if !ok {
		return Scene{}, false
	}
	return a.apply(st), true
}

// apply makes the scene of draw st on the host (nextScene).
func (a *augmenter) apply(st augDraw) Scene {
	changed := a.s
	if !st.r.IsIdentity() {
		if a.buf == nil {
			a.buf = make([]float32, len(a.s.Data))
		}
		// The noise comes from the same stream as the changes (as it always
		// has: the Go backend's training results stay as they were).
		st.r.applyInto(a.buf, a.s, a.means, a.rng)
		changed.Data = a.buf
	}
	if st.crop {
		for i := range a.valid {
			row, col := i/a.s.Cols, i%a.s.Cols
			a.valid[i] = a.s.valid(i) && row >= st.r0 && row < st.r1 && col >= st.c0 && col < st.c1
		}
		changed.Valid = a.valid
		a.cropped = true
	}
	return changed
}

// augDraw is one training step's augmentation: the radiometric change r
// and, when crop, the sub-area rows [r0, r1) and columns [c0, c1).
type augDraw struct {
	r              Radiometric
	r0, r1, c0, c1 int
	crop           bool
}

// draw picks step epoch's change (of epochs, from 1): false for the clean
// scene (no augmentation, the clean tail, or nothing drawn). The random
// numbers drawn do not depend on the outcome, so that every step draws
// the same whatever the schedule.
func (a *augmenter) draw(epoch, epochs int) (augDraw, bool) {
	a.cropped = false
	if a.rng == nil {
		return augDraw{}, false
	}
	var st augDraw
	st.r = a.cfg.draw(a.rng)
	st.r0, st.r1, st.c0, st.c1, st.crop = a.drawCrop()
	if float64(epoch) > float64(epochs)*(1-a.cfg.CleanTail) {
		return augDraw{}, false // the clean tail (drawn all the same: the stream stays the same)
	}
	if st.r.IsIdentity() && !st.crop {
		return augDraw{}, false
	}
	return st, true
}

// drawCrop draws one step's sub-area (Augment.Crop), rows [r0, r1) and
// columns [c0, c1): false for the whole scene. The cut is at a multiple of
// Stride, so that the sub-area's cells are the scene's, as a sub-area of a
// new acquisition cut from the same grid would be.
func (a *augmenter) drawCrop() (r0, r1, c0, c1 int, ok bool) {
	if a.cropRng == nil {
		return 0, 0, 0, 0, false
	}
	rng := a.cropRng
	u, acrossCols, low, keep := rng.Float64(), rng.IntN(2) == 1, rng.IntN(2) == 1, 0.4+0.35*rng.Float64()
	r0, r1, c0, c1 = 0, a.s.Rows, 0, a.s.Cols
	if u >= a.cfg.Crop {
		return r0, r1, c0, c1, false
	}
	n := a.s.Rows
	if acrossCols {
		n = a.s.Cols
	}
	share := keep
	if !low {
		share = 1 - keep
	}
	cut := Stride * int(math.Round(share*float64(n)/Stride))
	if cut <= 0 || cut >= n {
		return r0, r1, c0, c1, false
	}
	lo, hi := 0, cut
	if !low {
		lo, hi = cut, n
	}
	if acrossCols {
		c0, c1 = lo, hi
	} else {
		r0, r1 = lo, hi
	}
	return r0, r1, c0, c1, true
}

// cropStep is the step data td for the current sub-area (a.cropped): the
// valid masks, anchors and valid cells of the sub-area, and the training
// pixels outside it out of the loss and the prototype update (class -1,
// whose one-hot row is zero). The tensors are released by done.
func (a *augmenter) cropStep(td trainData, trainIdx []int, ytrain []int32, kernels bool) trainData {
	s := a.s
	s.Valid = a.valid
	step := td
	step.masks = nil
	masks := stepMasks(s, a.encoder, kernels)
	for _, mk := range masks {
		step.masks = append(step.masks, tensorOf(mk, len(mk)))
	}
	anchor, ytr := trainTargets(s, a.encoder, trainIdx, ytrain)
	step.anchor, step.cellMask, step.ytr = tensorOf(anchor, len(anchor)), tensorOf(masks[len(masks)-1], len(anchor)), tensorOf(ytr, len(ytr))
	a.held = append(append(a.held, step.masks...), step.anchor, step.cellMask, step.ytr)
	return step
}

// done releases the step's input.
func (a *augmenter) done() {
	if a.x != nil {
		a.x.FinalizeAll()
		a.x = nil
	}
	for _, t := range a.held {
		t.FinalizeAll()
	}
	a.held = a.held[:0]
}

// trainer holds the compiled training step and the current state as tensors.
type trainer struct {
	exec *Exec
	// augExec is the step on an augmented input normalised with the
	// GroupNorm statistics of the clean input (trainData.xAug), built on
	// first use: a pass of the network over the clean scene gives the
	// statistics, the augmented pass uses them as constants. At inference
	// every scene is normalised with the training scene's statistics, so
	// this is how a changed scene is normalised there; per-image statistics
	// (Augment.ImageNorm) would normalise much of a brightness change away
	// during training and teach the network nothing about it.
	augExec *Exec
	build   func(aug bool) func(g *Graph, in []*Node) []*Node
	b       compute.Backend
	cfg     Config
	names   []string          // every weight, initParams' order
	gidx    []int             // positions in names of the graph's weights
	state   []*tensors.Tensor // protos, protoInit, graph params..., adamM..., adamV...
	t       int
	masks   int // valid masks the step takes (trainData.masks)
	enc     *encState
}

// encState is the paper encoder's full-resolution stage when it trains on
// pnec's own kernels (kernels.FullRes) beside the graph: the graph's input is the
// stage's output F0 and the graph returns the loss's gradient with respect
// to it; FullRes.Backward turns that into the stage's weight gradients and
// Adam updates them here, with the graph's formula.
type encState struct {
	fr      *kernels.FullRes
	idx     []int // positions in the trainer's names, in fullResNames order
	w, m, v [][]float32
	f0      []float32
	l, d    int
}

// trainGraphBuilds counts the training step's graph builds, each of which
// the backend compiles (tests check that epochs do not recompile it).
var trainGraphBuilds atomic.Int64

// traceTrainGraph, when set, sees the training step's graph (diagnostics).
var traceTrainGraph func(g *Graph, outs []*Node)

// useFullRes lets Train and NewPredictor run the paper encoder's
// full-resolution stage on pnec's own kernels where they are available;
// tests turn it off to compare with the graph.
var useFullRes = true

// fullResNames are the weights of the paper encoder's full-resolution
// stage, in the order FullRes.Backward returns their gradients.
var fullResNames = [6]string{"embed.w", "embed.b", "embed.gn.g", "embed.gn.b", "conv.w", "conv.b"}

const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

// newTrainer compiles the training step for the weights params (the
// full-resolution stage's on fr's kernels when fr is set) and holds its
// initial state.
func newTrainer(b compute.Backend, d dims, cfg Config, params paramSet, fr *kernels.FullRes) (*trainer, error) {
	tr := &trainer{cfg: cfg}
	for _, p := range params {
		tr.names = append(tr.names, p.Name)
	}
	if fr != nil {
		enc, err := newEncState(fr, d, tr.names, params)
		if err != nil {
			return nil, err
		}
		tr.enc = enc
	}
	for i := range params {
		if tr.enc == nil || !slices.Contains(tr.enc.idx, i) {
			tr.gidx = append(tr.gidx, i)
		}
	}
	n := &net{d: d, cfg: cfg, f0Input: fr != nil, training: true}
	tr.masks = 1 // valid masks (netMasks): the stride-4 grid, and full resolution for the paper encoder in the graph
	if cfg.Encoder == EncoderPaper && fr == nil {
		tr.masks = 2
	}
	build := func(aug bool) func(g *Graph, in []*Node) []*Node { return tr.stepGraph(n, aug) }
	exec, err := NewExec(b, build(false))
	if err != nil {
		return nil, err
	}
	tr.exec = exec.WithName("pnec_train_step")
	tr.build, tr.b = build, b
	tr.state = initialTrainState(d, params, tr.gidx)
	return tr, nil
}

// newEncState holds the full-resolution stage's weights (fullResNames,
// found in names) and their Adam moments for fr.
func newEncState(fr *kernels.FullRes, d dims, names []string, params paramSet) (*encState, error) {
	cellRows, cellCols := fr.Cells()
	enc := &encState{fr: fr, l: cellRows * cellCols, d: d.D}
	enc.f0 = make([]float32, enc.l*d.D)
	for _, name := range fullResNames {
		i := slices.Index(names, name)
		if i < 0 {
			return nil, fmt.Errorf("no weight %s", name)
		}
		enc.idx = append(enc.idx, i)
		enc.w = append(enc.w, slices.Clone(params[i].Data))
		enc.m = append(enc.m, make([]float32, len(params[i].Data)))
		enc.v = append(enc.v, make([]float32, len(params[i].Data)))
	}
	return enc, nil
}

// initialTrainState is the trainer's state before the first step: an
// empty prototype bank and its init flags, the graph's weights (gidx of
// params) and zero Adam moments.
func initialTrainState(d dims, params paramSet, gidx []int) []*tensors.Tensor {
	state := []*tensors.Tensor{tensorOf(make([]float32, d.K*d.D), d.K, d.D), tensorOf(make([]float32, d.K), d.K)}
	for _, i := range gidx {
		state = append(state, tensorOf(params[i].Data, params[i].Shape...))
	}
	for range 2 {
		for _, i := range gidx {
			state = append(state, tensorOf(make([]float32, len(params[i].Data)), params[i].Shape...))
		}
	}
	return state
}

// stepGraph builds the training step's graph on n: the loss, the accuracy
// and the updated prototype bank, then Adam's update of the graph's
// weights, and, with the kernels, the loss's gradient with respect to F0.
// aug makes the step on an augmented input normalised with the clean
// input's statistics (trainer.augExec).
func (tr *trainer) stepGraph(n *net, aug bool) func(g *Graph, in []*Node) []*Node {
	nm, np := tr.masks, len(tr.gidx)
	return func(g *Graph, in []*Node) []*Node {
		trainGraphBuilds.Add(1) // one per compilation: GoMLX builds a graph per new input shape
		if traceTrainGraph != nil {
			g.SetTraced(true)
		}
		s := splitStepInputs(in, nm, np)
		x, anchor, wtr, ytr, cellMask, calib, a1, c2 := s.x, s.anchor, s.wtr, s.ytr, s.cellMask, s.calib, s.a1, s.c2
		n.setMasks(s.masks...)
		protos, protoInit := s.protos, s.protoInit
		pNodes, mNodes, vNodes := s.params, s.adamM, s.adamV
		n.p = make(map[string]*Node, np)
		for j, i := range tr.gidx {
			n.p[tr.names[i]] = pNodes[j]
		}
		n.normCalls, n.fixedNorm, n.recordNorm = nil, nil, nil
		if aug {
			n.fixNormFrom(x, protos, anchor, calib)
			x = s.xAug
		}
		loss, acc, newProtos, newInit := n.loss(x, anchor, wtr, ytr, cellMask, calib, protos, protoInit)
		n.fixedNorm = nil
		wrt := pNodes
		if tr.enc != nil {
			wrt = append(slices.Clone(pNodes), x) // and dLoss/dF0 for the kernels' backward pass
		}
		grads := Gradient(loss, wrt...)
		forgetBMM(g)
		out := []*Node{loss, acc, newProtos, newInit}
		var dF0 *Node
		if tr.enc != nil {
			dF0, grads = grads[np], grads[:np]
		}
		out = append(out, adamNodes(grads, pNodes, mNodes, vNodes, a1, c2)...)
		if dF0 != nil {
			out = append(out, dF0)
		}
		if traceTrainGraph != nil {
			traceTrainGraph(g, out)
		}
		return out
	}
}

// fixNormFrom runs the network on the clean input x and fixes its
// GroupNorm statistics for the next pass. The gradient flows through the
// statistics as in per-image normalisation: with constant statistics
// training failed (SalinasA OA 67-79%).
func (n *net) fixNormFrom(x, protos, anchor, calib *Node) {
	var recs []normRecord
	n.recordNorm = &recs
	n.forward(x, func(*Node) *Node { return protos }, anchor, calib)
	n.recordNorm, n.normCalls = nil, nil
	n.fixedNorm = make(map[string][2]*Node, len(recs))
	for _, r := range recs {
		n.fixedNorm[r.key] = [2]*Node{r.mean, r.vr}
	}
}

// adamNodes is Adam's step on each weight p with gradient g and moments m,
// v (a1 and c2 fold in the bias corrections): the new weights, then the
// new first moments, then the new second moments.
func adamNodes(grads, pNodes, mNodes, vNodes []*Node, a1, c2 *Node) []*Node {
	var newP, newM, newV []*Node
	for i, gr := range grads {
		m := Add(MulScalar(mNodes[i], adamBeta1), MulScalar(gr, 1-adamBeta1))
		v := Add(MulScalar(vNodes[i], adamBeta2), MulScalar(Square(gr), 1-adamBeta2))
		step := Div(Mul(a1, m), AddScalar(Mul(Sqrt(v), c2), adamEps))
		newP = append(newP, Sub(pNodes[i], step))
		newM = append(newM, m)
		newV = append(newV, v)
	}
	out := append(newP, newM...)
	return append(out, newV...)
}

// loss is the training objective on one full-image forward pass (see
// Train), the accuracy on the training pixels, and the updated prototype bank.
func (n *net) loss(x, anchor, wtr, ytr, cellMask, calib, protos, protoInit *Node) (loss, acc, newProtos, newInit *Node) {
	d, cfg := n.d, n.cfg
	bank := func(f *Node) *Node {
		// The class means come from the features at the training pixels,
		// bilinearly sampled from the grid (as the reference does).
		feats := MatMul(wtr, n.sg(f)) // [Ntr, D]
		newProtos, newInit = updateBank(feats, ytr, protos, protoInit, d.K, cfg.Momentum)
		return newProtos
	}
	o := n.forward(x, bank, anchor, calib)
	ce := func(z *Node) *Node {
		logp := LogSoftmax(MatMul(wtr, z), 1)
		return Neg(ReduceAllMean(ReduceSum(Mul(logp, OneHot(ytr, d.K, logp.DType())), 1)))
	}
	loss = ce(o.Zcal)
	loss = Add(loss, MulScalar(Add(ce(o.Zspa), ce(o.Zdiff)), cfg.LambdaBranch))
	lambdaProto, lambdaCon := cfg.LambdaProto, cfg.LambdaCon
	if cfg.Ablation == AblationBase {
		lambdaProto, lambdaCon = 0, 0
	}
	if lambdaProto != 0 {
		loss = Add(loss, MulScalar(ce(o.S), lambdaProto))
	}
	if lambdaCon != 0 {
		// (1 - G~)-weighted KL(P_raw || P_cal) over the valid cells; P_raw
		// is the target, so no gradient flows into it (as in the reference).
		lraw, lcal := LogSoftmax(n.sg(o.Zraw), 1), LogSoftmax(o.Zcal, 1)
		kl := ReduceSum(Mul(Exp(lraw), Sub(lraw, lcal)), 1)
		w := Mul(OneMinus(n.sg(o.Gtilde)), cellMask)
		lcon := Div(ReduceAllSum(Mul(w, kl)), MaxScalar(ReduceAllSum(cellMask), 1))
		loss = Add(loss, MulScalar(lcon, lambdaCon))
	}
	pred := ArgMax(MatMul(wtr, o.Zcal), 1, dtypes.Int32)
	acc = ReduceAllMean(ConvertDType(Equal(pred, ytr), loss.DType()))

	return loss, acc, newProtos, newInit
}

// updateBank is the momentum update of the prototype bank from the class
// means of the features f [N, D] of rows with a class in anchor [N] (-1:
// none): an
// uninitialised prototype (init 0) takes the normalised mean, the others
// Norm(m p + (1-m) mean); classes absent from this step keep theirs.
func updateBank(f, anchor, protos, init *Node, k int, momentum float64) (newProtos, newInit *Node) {
	hot := OneHot(anchor, k, f.DType())     // rows of -1 are all zero
	sums := MatMul(Transpose(hot, 0, 1), f) // [K, D]
	counts := ReduceSum(hot, 0)             // [K]
	mean := l2normalize(Div(sums, InsertAxes(MaxScalar(counts, 1), -1)), 1)
	mixed := l2normalize(Add(MulScalar(protos, momentum), MulScalar(mean, 1-momentum)), 1)
	zero := ScalarZero(f.Graph(), f.DType())
	dd := f.Shape().Dimensions[1]
	has := BroadcastToDims(InsertAxes(GreaterThan(counts, zero), -1), k, dd)
	wasInit := BroadcastToDims(InsertAxes(GreaterThan(init, zero), -1), k, dd)
	newProtos = Where(has, Where(wasInit, mixed, mean), protos)
	newInit = Max(init, ConvertDType(GreaterThan(counts, zero), f.DType()))
	return newProtos, newInit
}

// step runs one full-image training step and keeps the new state.
func (tr *trainer) step(td trainData, calib float32) (loss, acc float64, err error) {
	tr.t++
	bc1 := 1 - math.Pow(adamBeta1, float64(tr.t))
	bc2 := 1 - math.Pow(adamBeta2, float64(tr.t))
	a1 := float32(tr.cfg.LearningRate / bc1)
	c2 := float32(1 / math.Sqrt(bc2))
	var x any = td.x
	if e := tr.enc; e != nil {
		w := e.w
		e.fr.SetWeights(w[0], w[1], w[2], w[3], w[4], w[5])
		e.fr.Forward(nil, nil, e.f0, true)
		x = tensorOf(e.f0, e.l, e.d)
	}
	args := []any{x, td.anchor, td.wtr, td.ytr, td.cellMask, calib, a1, c2} // stepInputs' order
	if len(td.masks) != tr.masks {
		return 0, 0, fmt.Errorf("training data has %d valid masks, the step takes %d", len(td.masks), tr.masks)
	}
	for _, t := range td.masks {
		args = append(args, t)
	}
	for _, t := range tr.state {
		args = append(args, t)
	}
	exec := tr.exec
	if td.xAug != nil {
		if tr.augExec == nil {
			e, err := NewExec(tr.b, tr.build(true))
			if err != nil {
				return 0, 0, err
			}
			tr.augExec = e.WithName("pnec_train_step_augmented")
		}
		exec = tr.augExec
		args = append(args, td.xAug)
	}
	out, err := exec.Call(args...)
	if err != nil {
		return 0, 0, err
	}
	lossV, err := tensors.CopyFlatData[float32](out[0])
	if err != nil {
		return 0, 0, err
	}
	accV, err := tensors.CopyFlatData[float32](out[1])
	if err != nil {
		return 0, 0, err
	}
	out[0].FinalizeAll()
	out[1].FinalizeAll()
	for _, t := range tr.state {
		t.FinalizeAll()
	}
	if e := tr.enc; e != nil {
		last := out[len(out)-1]
		dF0, err := tensors.CopyFlatData[float32](last)
		last.FinalizeAll()
		out = out[:len(out)-1]
		if err != nil {
			return 0, 0, err
		}
		dwe, dbe, dg, db, dwc, dbc := e.fr.Backward(dF0)
		for k, g := range [][]float32{dwe, dbe, dg, db, dwc, dbc} {
			adamStep(e.w[k], e.m[k], e.v[k], g, a1, c2)
		}
	}
	tr.state = out[2:]
	return float64(lossV[0]), float64(accV[0]), nil
}

// adamStep is the graph's Adam update of weights w with moments m, v and
// gradient g, in float32: a1 is the learning rate over the first moment's
// bias correction, c2 one over the square root of the second's.
func adamStep(w, m, v, g []float32, a1, c2 float32) {
	for i, gi := range g {
		m[i] = m[i]*adamBeta1 + gi*(1-adamBeta1)
		v[i] = v[i]*adamBeta2 + gi*gi*(1-adamBeta2)
		w[i] -= a1 * m[i] / (float32(math.Sqrt(float64(v[i])))*c2 + adamEps)
	}
}

// weights copies the trained parameters and the prototype bank out of the state.
func (tr *trainer) weights() (paramSet, []float32, error) {
	protos, err := tensors.CopyFlatData[float32](tr.state[stateProtos])
	if err != nil {
		return nil, nil, err
	}
	ps := make(paramSet, len(tr.names))
	for j, i := range tr.gidx {
		t := tr.state[stateParams+j]
		data, err := tensors.CopyFlatData[float32](t)
		if err != nil {
			return nil, nil, err
		}
		ps[i] = param{Name: tr.names[i], Shape: t.Shape().Dimensions, Data: data}
	}
	if e := tr.enc; e != nil {
		d, bands := e.d, len(e.w[0])/e.d
		shapes := [][]int{{bands, d}, {d}, {d}, {d}, {9 * d, d}, {d}}
		for k, i := range e.idx {
			ps[i] = param{Name: tr.names[i], Shape: shapes[k], Data: slices.Clone(e.w[k])}
		}
	}
	return ps, protos, nil
}

func (tr *trainer) finalize() {
	for _, t := range tr.state {
		t.FinalizeAll()
	}
	tr.state = nil
	if tr.exec != nil {
		tr.exec.Finalize()
		tr.exec = nil
	}
	if tr.augExec != nil {
		tr.augExec.Finalize()
		tr.augExec = nil
	}
}

// epochEvent is the progress event after epoch (from 1) of epochs, elapsed
// since training started: the time left at the rate so far, and the
// epoch's loss and training accuracy.
func epochEvent(epoch, epochs int, loss, acc float64, elapsed time.Duration) progress.Event {
	return progress.Event{Stage: "train", Done: int64(epoch), Total: int64(epochs), Unit: "epochs",
		Elapsed: elapsed, ETA: time.Duration(float64(elapsed) / float64(epoch) * float64(epochs-epoch)),
		Message: fmt.Sprintf("epoch %d/%d", epoch, epochs),
		Metrics: []progress.Metric{{Name: "loss", Value: loss}, {Name: "train_acc", Value: acc}}}
}
