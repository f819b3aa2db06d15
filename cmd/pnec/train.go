package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pnec/pnec/evaluation"
	termbar "github.com/pnec/pnec/internal/progress"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/spectral"
	"github.com/pnec/pnec/stac"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "train",
		Usage:     "train a PNEC-Mamba model on a labelled scene",
		UsageText: "pnec train --scene SCENE --labels LABELS --out MODEL [--train-mask TRAIN] [options]",
		Description: "Trains the network on whole images (no patches), with the loss on the training pixels:\n" +
			"--train-per-class pixels of every class drawn with --split-seed from LABELS (a one-band raster\n" +
			"of class values, 0 = unlabelled), or the pixels of a fixed split given by --train-mask (a raster\n" +
			"holding the class values of the training pixels, 0 elsewhere). Every other labelled pixel is a\n" +
			"test pixel for 'pnec evaluate'. The model file records the weights, prototypes, normalisation,\n" +
			"classes, split, hyperparameters and the training inputs' paths. Beside it, MODEL.json is the\n" +
			"model's STAC Item (machine learning model extension; see 'pnec model-item'), which the products\n" +
			"of 'pnec batch' point at. Defaults are the paper's. The same seeds give the same\n" +
			"model on the same backend. On an XLA GPU backend, training turns XLA's autotuning off\n" +
			"(--xla_gpu_autotune_level=0 in XLA_FLAGS, unless XLA_FLAGS sets a level): it halves the wall\n" +
			"time of the default 200 epochs, most of which would otherwise go to compiling.\n\n" +
			"Scene size: a scene up to " + fmt.Sprint(processor.CanonicalTile) + " px a side trains whole, one step of the whole image an epoch\n" +
			"(the paper's way), and so does one that the tiles of 'pnec classify' (" + fmt.Sprint(processor.CanonicalTile) + " px, overlapping by 12 px)\n" +
			"cover with two, when the whole step fits --max-memory (on two tiles a label would train in about\n" +
			"half the steps: 1.1 OA points lower on a Pavia-sized scene). A larger one trains on those tiles:\n" +
			"each epoch one step on one tile that holds training pixels, the tiles in a shuffled\n" +
			"cycle, so memory and time per epoch are one tile's whatever the scene's size, and the network\n" +
			"learns on the contexts it is applied on. --tile N sets another tile side, --whole-scene trains any\n" +
			"scene as one image (memory grows with its area). The scene itself is held in memory (4 bytes a\n" +
			"value). --max-memory refuses a run whose estimate is above it, naming what it needs (docs/train.md).\n\n" +
			"One model for several sensors: --bands-common-with SCENE|SENSOR (repeatable) keeps the training\n" +
			"scene's bands that every named scene or sensor also covers, --bands RANGES those in wavelength\n" +
			"ranges; the model records them, and classify, evaluate and batch resample each sensor's delivery\n" +
			"to them (as --resample-bands does) instead of refusing a scene whose bands differ\n" +
			"(docs/sensors.md has the measured accuracy per pair of sensors).\n\n" +
			"Examples:\n" +
			"  D=../shared/data/SalinasA\n" +
			"  pnec import mat --cube $D/SalinasA_corrected.mat --out salinasA.tif --labels $D/SalinasA_gt.mat --labels-out salinasA_gt.tif\n" +
			"  pnec import mat --labels $D/SalinasA_train_seed12345.mat --labels-out salinasA_train.tif\n" +
			"  pnec train --scene salinasA.tif --labels salinasA_gt.tif --train-mask salinasA_train.tif --out salinasA.pnec\n" +
			"  pnec train --scene scene.tif --labels gt.tif --out m.pnec --epochs 50 --class-names names.txt\n" +
			"  pnec train --scene enmap/ --labels gt.tif --out all.pnec --bands-common-with EMIT --bands-common-with PRISMA",
		Flags: flagList([]cli.Flag{
			sceneFlag("training scene", "", true),
			labelsFlag(),
			&cli.StringFlag{Name: "out", Required: true, Usage: "model file `MODEL` to write"},
		}, splitFlags(), []cli.Flag{
			&cli.Int64Flag{Name: "seed", Value: model.DefaultSeed, Usage: "run `SEED`: weight initialisation and every other random source"},
			quietFlag(),
			radiometryFlag("the training scene's values"),
			&cli.StringFlag{Name: "bands", Usage: "train on the scene's good bands whose centres lie in the wavelength `RANGES` only (nm, e.g. 420-1330,1470-1780); the model records them and classify resamples any sensor's bands to them"},
			&cli.StringSliceFlag{Name: "bands-common-with", Usage: "train on the bands that `SCENE|SENSOR` also covers only (repeatable): a scene pnec reads (its good bands) or a sensor's band table (" + strings.Join(spectral.SensorNames(), ", ") + "); the model then applies to each of them, their bands resampled to its own"},
			stacBaseURLFlag("the model's directory", "the model's STAC Item (MODEL.json) gets an absolute self link"),
			modelNameFlag(),
			&cli.IntFlag{Name: "tile", Usage: fmt.Sprintf("train a scene larger than `N` px a side on tiles of N px (rounded up to the stride of 4), one tile a step; 0 = the grid classify runs the scene on (%d px)", processor.CanonicalTile)},
			&cli.BoolFlag{Name: "whole-scene", Usage: "train the scene as one image whatever its size (one whole-scene step an epoch; memory and time grow with its area)"},
			&cli.BoolFlag{Name: "read-by-windows", Usage: "read the scene by windows while training instead of holding it in memory (a scene whose held run would not fit --max-memory is read so anyway): memory follows the tiles, not the scene, for three reads of the whole file and one of each step's tile; the model is the same"},
			&cli.StringFlag{Name: "max-memory", Usage: "memory budget `SIZE` of training (e.g. 4G, 512M; default: all the memory the process may use); a run whose estimate is above it is refused before it starts, naming what it needs"},
		}, modelFlags()),
		Action: trainAction,
	})
}

// modelFlags are the hyperparameters train and experiment share; their
// defaults are pnec's (model.DefaultConfig; --paper: model.PaperConfig).
func modelFlags() []cli.Flag {
	d := model.DefaultConfig()
	return []cli.Flag{
		&cli.IntFlag{Name: "epochs", Value: d.Epochs, Usage: "training `EPOCHS` (full-image steps)"},
		&cli.IntFlag{Name: "hidden", Value: d.Hidden, Usage: "feature `CHANNELS` D (the paper uses 256 above 200 bands on HanChuan)"},
		&cli.Float64Flag{Name: "lr", Value: d.LearningRate, Usage: "Adam learning `RATE`"},
		&cli.IntFlag{Name: "warmup", Value: d.ECWarmupEpochs, Usage: "`EPOCHS` with evidence calibration off"},
		&cli.Float64Flag{Name: "gate-floor", Value: d.GateFloor, Usage: "gate floor `RHO` in 0..1"},
		&cli.IntFlag{Name: "window", Value: 0, Usage: "recovery window in `PIXELS` (odd), stored in the model; 0 takes the paper's 9 with --decision network and, with --decision fused, chooses it at training (the largest of 1, 3, ..., 9 at which the training pixels, each left out in turn, are classified as well as at any)"},
		&cli.StringFlag{Name: "decision", Value: model.DefaultDecision, Usage: "how the class band is decided, stored in the model: `MODE` fused (the network's probabilities weighed with the spectral angle to the model's training pixels and their augmented copies, the temperature chosen from the training pixels alone: the better map on the benchmark scenes and new ground, docs/model.md#the-decision) or network (the network's recovered probabilities alone: the paper's)"},
		&cli.BoolFlag{Name: "paper", Usage: "the paper's configuration: --input stretch --augment off --decision network --window 9 (what the PyTorch reference runs; not with any of those flags)"},
		&cli.Float64Flag{Name: "eta", Value: d.Recovery.Eta, Usage: "recovery strength `ETA` in 0..1, stored in the model"},
		&cli.StringFlag{Name: "ablation", Value: string(d.Ablation), Usage: "network `VARIANT`: full, base (no evidence calibration), no-ec (s = 0), no-rc (no reliability-aware calibration: gate G = 1), no-recovery (labels without the AvgPool recovery)"},
		&cli.StringFlag{Name: "encoder", Value: d.Encoder, Usage: "`ENCODER`, stored in the model: paper (the paper's: 1x1 conv + GroupNorm + SiLU at full resolution, 3x3 conv, MaxPool 2, GELU, AvgPool 2) or cell (the input averaged over 4x4 cells first, all work at stride 4)"},
		&cli.StringFlag{Name: "input", Value: d.Input, Usage: "network `INPUT`, stored in the model: stretch (each band stretched between the training scene's 2nd and 98th percentiles, the paper's), shape (each spectrum divided by its mean: brightness removed), stretch+shape (both) or snv (each spectrum's standard normal variate)"},
		&cli.StringFlag{Name: "augment", Value: d.Augment.String(), Usage: "training augmentation `SPEC`: off, or p=SHARE,gain=G,tilt=T,offset=O,noise=N,shift=BANDS,tail=SHARE,norm=clean|image,crop=SHARE (each step, with probability p, the training scene changed by a random gain in [1/(1+G), 1+G], tilt up to T, offset up to O and noise up to N of each band's mean, band shift up to BANDS; the last tail of the epochs clean; with probability crop, only a 40-75% part of the scene cut across its rows or columns seen, the rest no-data)"},
		&cli.IntFlag{Name: "input-levels", Value: d.InputLevels, Usage: "quantise the stretched input to `N` levels, stored in the model: 256 is MambaHSI's and the PyTorch reference's 8 bits; 0 keeps it as it is"},
		backendFlag(),
	}
}

// configFromFlags builds the model configuration from modelFlags; withAblation
// reads --ablation as the variant name (experiment has it as a switch).
func configFromFlags(c *cli.Context, withAblation bool) (model.Config, error) {
	cfg := model.DefaultConfig()
	cfg.Epochs = c.Int("epochs")
	cfg.Hidden = c.Int("hidden")
	cfg.LearningRate = c.Float64("lr")
	cfg.ECWarmupEpochs = c.Int("warmup")
	cfg.GateFloor = c.Float64("gate-floor")
	cfg.Recovery = model.RecoveryParams{Window: c.Int("window"), Eta: c.Float64("eta")}
	switch mode := strings.ToLower(c.String("decision")); mode {
	case model.DecisionFused:
		cfg.Decision = model.Decision{Mode: mode}
	case model.DecisionNetwork:
		cfg.Decision = model.Decision{} // as model files before the fused decision say it
	default:
		return cfg, fmt.Errorf("--decision %s: want %s or %s", c.String("decision"), model.DecisionFused, model.DecisionNetwork)
	}
	if cfg.Recovery.Window == 0 && cfg.Decision.Mode == model.DecisionNetwork {
		cfg.Recovery.Window = model.PaperRecoveryWindow
	}
	cfg.InputLevels = c.Int("input-levels")
	if withAblation {
		switch a := model.Ablation(strings.ToLower(c.String("ablation"))); a {
		case model.AblationFull, model.AblationBase, model.AblationNoEC, model.AblationNoRC, model.AblationNoRecovery:
			cfg.Ablation = a
		default:
			return cfg, fmt.Errorf("--ablation %s: want full, base, no-ec, no-rc or no-recovery", c.String("ablation"))
		}
	}
	switch e := strings.ToLower(c.String("encoder")); e {
	case model.EncoderPaper, model.EncoderCell:
		cfg.Encoder = e
	default:
		return cfg, fmt.Errorf("--encoder %s: want paper or cell", c.String("encoder"))
	}
	switch in := strings.ToLower(c.String("input")); in {
	case model.InputStretch, model.InputShape, model.InputStretchShape, model.InputSNV:
		cfg.Input = in
	default:
		return cfg, fmt.Errorf("--input %s: want %s, %s, %s or %s", c.String("input"), model.InputStretch, model.InputShape, model.InputStretchShape, model.InputSNV)
	}
	aug, err := model.ParseAugment(c.String("augment"))
	if err != nil {
		return cfg, fmt.Errorf("--augment: %w", err)
	}
	cfg.Augment = aug
	if c.Bool("paper") {
		for _, f := range []string{"input", "augment", "decision", "window"} {
			if c.IsSet(f) {
				return cfg, fmt.Errorf("--paper sets --%s (the paper's configuration): give one or the other", f)
			}
		}
		p := model.PaperConfig()
		cfg.Input, cfg.Augment, cfg.Decision, cfg.Recovery.Window = p.Input, p.Augment, p.Decision, p.Recovery.Window
	}
	switch {
	case cfg.Epochs < 1:
		return cfg, fmt.Errorf("--epochs %d: want at least 1", cfg.Epochs)
	case cfg.Hidden < 1:
		return cfg, fmt.Errorf("--hidden %d: want a positive number of channels", cfg.Hidden)
	case !(cfg.LearningRate > 0):
		return cfg, fmt.Errorf("--lr %g: want a positive learning rate", cfg.LearningRate)
	case cfg.ECWarmupEpochs < 0:
		return cfg, fmt.Errorf("--warmup %d: want 0 or more epochs", cfg.ECWarmupEpochs)
	case !(cfg.GateFloor >= 0 && cfg.GateFloor <= 1):
		return cfg, fmt.Errorf("--gate-floor %g: want a value in 0..1", cfg.GateFloor)
	case cfg.InputLevels != 0 && (cfg.InputLevels < 2 || cfg.InputLevels > 1<<16):
		return cfg, fmt.Errorf("--input-levels %d: want 0 (off) or 2..65536", cfg.InputLevels)
	}
	if cfg.Recovery.Window != 0 {
		if err := cfg.Recovery.Validate(); err != nil {
			return cfg, fmt.Errorf("--window/--eta: %w", err)
		}
	} else if !(cfg.Recovery.Eta >= 0 && cfg.Recovery.Eta <= 1) {
		return cfg, fmt.Errorf("--eta %g: must be in 0..1", cfg.Recovery.Eta)
	}
	return cfg, nil
}

// classNamesFromFlags merges --class-names FILE and --class-name VALUE=NAME.
func classNamesFromFlags(c *cli.Context) (map[int]string, error) {
	names := map[int]string{}
	if f := c.String("class-names"); f != "" {
		n, err := evaluation.ReadClassNamesFile(f)
		if err != nil {
			return nil, fmt.Errorf("--class-names: %w", err)
		}
		names = n
	}
	for _, kv := range c.StringSlice("class-name") {
		v, name, ok := strings.Cut(kv, "=")
		val, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil || val < 1 || val > evaluation.MaxClassValue || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("--class-name %s: want VALUE=NAME with VALUE a class value 1..%d", kv, evaluation.MaxClassValue)
		}
		names[val] = strings.TrimSpace(name)
	}
	return names, nil
}

// checkModelOutput refuses a model path that cannot be written: what
// processor.CheckOutput refuses (a directory, a missing directory), and a
// directory a file cannot be created in.
func checkModelOutput(out string) error {
	if strings.HasPrefix(out, "/vsi") {
		return fmt.Errorf("%s: %w: a model file is written to the local file system", out, processor.ErrBadOutput)
	}
	if err := processor.CheckOutput(out); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(out), ".pnec-write-check-*")
	if err != nil {
		return fmt.Errorf("%s: %w: %v", out, processor.ErrBadOutput, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func stdoutOf(c *cli.Context) io.Writer {
	if c.App.Writer != nil {
		return c.App.Writer
	}
	return os.Stdout
}

func stderrOf(c *cli.Context) io.Writer {
	if c.App.ErrWriter != nil {
		return c.App.ErrWriter
	}
	return os.Stderr
}

// epochReporter shows training progress: a bar (epoch, loss, training
// accuracy, ETA) on a terminal, else a log line every 5% of the epochs.
type epochReporter struct {
	w      io.Writer
	term   bool
	bar    *progressbar.ProgressBar
	log    *slog.Logger
	prefix string
}

func newEpochReporter(w io.Writer, total int, prefix string) *epochReporter {
	r := &epochReporter{w: w, prefix: prefix}
	if termbar.IsTerminal(w) {
		r.term = true
		r.bar = termbar.New(w, int64(total), termbar.Options{Description: prefix, Width: 24})
	} else {
		r.log = slog.New(slog.NewTextHandler(w, nil))
	}
	return r
}

// report shows one epoch: the bar at the epochs done (over an
// experiment's trainings), the event's message beside it.
func (r *epochReporter) report(ev progress.Event) {
	loss, _ := ev.Metric("loss")
	acc, _ := ev.Metric("train_acc")
	if r.term {
		// Set before Describe: each renders, and the last render must show both.
		_ = r.bar.Set64(ev.Done)
		r.bar.Describe(fmt.Sprintf("%s %s loss %.4f train acc %5.1f%%", r.prefix, ev.Message, loss, 100*acc))
		return
	}
	// A line every 5% of the training's epochs: an experiment's training
	// is its event's parts, a training the event itself.
	epoch, epochs := ev.Part, ev.Parts
	if epochs == 0 {
		epoch, epochs = int(ev.Done), int(ev.Total)
	}
	every := max(1, epochs/20)
	if epoch == 1 || epoch == epochs || epoch%every == 0 {
		r.log.Info(r.prefix, "progress", ev.Message, "loss", fmt.Sprintf("%.4f", loss),
			"train_acc", fmt.Sprintf("%.4f", acc), "elapsed", ev.Elapsed.Round(time.Second), "eta", ev.ETA.Round(time.Second))
	}
}

func (r *epochReporter) finish() {
	if r.bar != nil {
		_ = r.bar.Finish()
	}
}

// wordTrainMemory names the flag behind a training run refused for memory
// (model.MemoryError): --hidden sets the network's size.
func wordTrainMemory(err error, cfg model.Config) error {
	var me *model.MemoryError
	if errors.As(err, &me) {
		return fmt.Errorf("--hidden %d: %w on this scene; give --max-memory %.1fG or more, a smaller --hidden (default %d), a smaller --tile or a smaller scene",
			cfg.Hidden, me, math.Ceil(float64(me.NeedBytes)/1e8)/10, model.DefaultConfig().Hidden)
	}
	return err
}

func trainAction(c *cli.Context) error {
	configureBackends(func(s *backend.Settings) { s.XLAQuickCompile = true })
	cfg, err := configFromFlags(c, true)
	if err != nil {
		return err
	}
	if c.Int("train-per-class") < 1 {
		return fmt.Errorf("--train-per-class %d: want at least 1", c.Int("train-per-class"))
	}
	names, err := classNamesFromFlags(c)
	if err != nil {
		return err
	}
	if u := c.String("stac-base-url"); u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return fmt.Errorf("--stac-base-url %q: want an http(s) URL", u)
	}
	if n := c.String("model-name"); n != "" {
		if err := stac.CheckModelName(n); err != nil {
			return fmt.Errorf("--model-name: %w", err)
		}
	}
	// The model file is checked before training, not when it is saved
	// after hours of it: a path it can be written to, and none of the inputs.
	out := c.String("out")
	if err := checkModelOutput(out); err != nil {
		return fmt.Errorf("--out %w", err)
	}
	if err := processor.CheckOutput(stac.ModelItemPath(out)); err != nil {
		return fmt.Errorf("--out %s: the model's STAC Item %w", out, err)
	}
	inputs := []samefile.Named{{Path: c.String("scene"), Role: "--scene"}, {Path: c.String("labels"), Role: "--labels"}}
	for _, f := range []string{"train-mask", "class-names"} {
		if p := c.String(f); p != "" {
			inputs = append(inputs, samefile.Named{Path: p, Role: "--" + f})
		}
	}
	outputs := []samefile.Named{{Path: out, Role: "--out"}, {Path: stac.ModelItemPath(out), Role: "the model's STAC Item"}}
	if err := checkOutputsNotInputs(outputs, inputs); err != nil {
		return err
	}
	req := evaluation.TrainRequest{
		Scene: c.String("scene"), Labels: c.String("labels"), TrainMask: c.String("train-mask"),
		ReadByWindows: c.Bool("read-by-windows"),
		Options: model.TrainOptions{
			Config: cfg, TrainPerClass: c.Int("train-per-class"), SplitSeed: c.Int64("split-seed"),
			Seed: c.Int64("seed"), ClassNames: names, Backend: c.String("backend"),
		},
	}
	if err := trainSizeFromFlags(c, &req.Options); err != nil {
		return err
	}
	if req.Radiometry, err = radiometryFromFlag(c); err != nil {
		return err
	}
	if req.Bands, err = bandSelectionFromFlags(c); err != nil {
		return err
	}
	if req.Options.Seed == 0 || req.Options.SplitSeed == 0 {
		return fmt.Errorf("--seed and --split-seed: 0 is reserved for the default; give another value")
	}
	stderr := stderrOf(c)
	quiet := c.Bool("quiet")
	if !quiet {
		rep := newEpochReporter(stderr, cfg.Epochs, "train")
		defer rep.finish()
		req.Options.Progress = rep.report
	}
	res, err := evaluation.Train(c.Context, req)
	if errors.Is(err, evaluation.ErrBandSelection) {
		return fmt.Errorf("--bands/--bands-common-with: %w", err)
	}
	if err != nil {
		return wordTrainMemory(err, cfg)
	}
	if err := res.Model.Save(out); err != nil {
		return fmt.Errorf("save %s: %w", c.String("out"), err)
	}
	itemPath := stac.ModelItemPath(c.String("out"))
	if err := writeModelItem(res.Model, c.String("out"), itemPath, c.String("model-name"), c.String("stac-base-url"), c.String("scene"), time.Now(), false); err != nil {
		return err
	}
	if c.Bool("verbose") {
		slog.New(slog.NewTextHandler(stderr, nil)).Info("trained", "backend", res.Backend,
			"read_s", res.ReadTime.Seconds(), "fit_s", res.FitTime.Seconds())
	}
	if !quiet {
		printTrainSummary(stdoutOf(c), c.String("out"), itemPath, res)
	}
	return nil
}

// printTrainSummary prints what training made: the model out, its classes,
// training pixels, time, bands, decision and grid, and its STAC Item.
func printTrainSummary(w io.Writer, out, itemPath string, res evaluation.TrainResult) {
	m := res.Model
	classes := m.Classes()
	parts := make([]string, len(classes))
	for i, k := range classes {
		parts[i] = fmt.Sprintf("%d %s", k.Value, k.Name)
	}
	fmt.Fprintf(w, "%s: %d classes (%s), %d training of %d labelled pixels, %d epochs in %.1f s on %s, checksum %s\n",
		out, len(classes), strings.Join(parts, ", "), res.TrainPixels, res.LabelledPixels,
		m.Config().Epochs, res.FitTime.Seconds(), res.Backend, m.Checksum())
	fmt.Fprintf(w, "  bands: %s; values: %s\n", bandsSummary(m), m.Radiometry())
	fmt.Fprintf(w, "  decision: %s\n", decisionSummary(m))
	if t := m.TrainTile(); t > 0 {
		read := ""
		if res.ReadByWindows {
			read = ", the scene read by windows"
		}
		fmt.Fprintf(w, "  trained on: tiles of %d px, one a step%s (the scene is larger than a tile: docs/train.md)\n", t, read)
	} else {
		fmt.Fprintf(w, "  trained on: the whole scene, one step an epoch\n")
	}
	fmt.Fprintf(w, "%s: its STAC Item (machine learning model extension)\n", itemPath)
}

// trainSizeFromFlags sets how a scene trains by its size (--tile,
// --whole-scene) and the memory budget (--max-memory) in o.
func trainSizeFromFlags(c *cli.Context, o *model.TrainOptions) error {
	o.Tile, o.Whole = c.Int("tile"), c.Bool("whole-scene")
	if o.Tile < 0 {
		return fmt.Errorf("--tile %d: want 0 (the grid's, %d px) or a positive side", o.Tile, processor.CanonicalTile)
	}
	if o.Tile > 0 && o.Whole {
		return errors.New("--tile and --whole-scene: give one")
	}
	if o.Whole && c.Bool("read-by-windows") {
		return errors.New("--read-by-windows and --whole-scene: a scene trained as one image is held in memory; give one")
	}
	if s := c.String("max-memory"); s != "" {
		n, err := memory.ParseBytes(s)
		if err != nil || n <= 0 {
			return fmt.Errorf("--max-memory %q: want a size such as 4G or 512M", s)
		}
		o.MaxMemoryBytes = n
	}
	return nil
}

// decisionSummary says how m decides its class band, with what it chose
// at training.
func decisionSummary(m *model.Model) string {
	d, r := m.Decision(), m.Recovery()
	if d.Fused() {
		return fmt.Sprintf("fused (network and spectral angle to the mean of the %d nearest training pixels of each class, copy penalty %.3g rad; temperature %.4g rad and spectral weight %g chosen from the training pixels), recovery window %d", max(1, d.LocalMean), d.CopyPenaltyRad, d.TemperatureRad, d.Weight(), r.Window)
	}
	return fmt.Sprintf("network (the paper's), recovery window %d", r.Window)
}
