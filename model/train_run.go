package model

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/gomlx/compute"

	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/model/internal/kernels"
	"github.com/pnec/pnec/progress"
)

// trainRun is one training run on its backend: the step's constant
// inputs, the augmentation (on the host, in a graph of its own, or of the
// kernels' scene) and the trainer.
type trainRun struct {
	s     Scene
	cfg   Config
	desc  backend.Backend
	where string // TrainOptions.AugmentWhere
	setup *trainSetup
	in    inputSpec
	fr    *kernels.FullRes
	td    trainData
	aug   *augmenter
	ag    *augGraph
	st    *trainer
	// frChanged is whether fr is on an augmented scene.
	frChanged bool
	// winTD is a windowed step's data (setup.win), released after the step.
	winTD *trainData
}

// prepare builds the run's parts on b; its errors carry Train's prefix.
func (r *trainRun) prepare(b compute.Backend, seed int64) error {
	s, cfg, setup := r.s, r.cfg, r.setup
	r.in = newInputSpec(cfg.Input, cfg.InputLevels, setup.lo, setup.hi)
	// The augmentation runs in a graph of its own on XLA (augGraph: the scene
	// goes to the device once), on the host on the Go backend.
	inGraph, err := augmentInGraph(r.desc, r.where)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	// A windowed run changes its tile's scene on the host: the graph
	// holds one scene on the device.
	inGraph = inGraph && cfg.Augment.On() && setup.win == nil
	// On the Go backend the paper encoder's full-resolution stage runs on
	// pnec's own kernels beside the graph (kernels.FullRes; see encState), for the
	// reference's input without augmentation (fullResTraining), unless the
	// augmentation graph makes the network's input.
	if useFullRes && r.desc.Kind == backend.Go && fullResTraining(cfg) && !inGraph {
		// A windowed run's kernels take one tile's scene at a time (all
		// tiles have one size).
		fs := s
		if setup.win != nil {
			fs = setup.win.sceneOf(s, setup.win.wins[0].tile)
		}
		r.fr = newFullRes(setup.d, fs, r.in, runtime.GOMAXPROCS(0))
	}
	if setup.win == nil {
		r.td = newTrainData(s, r.in, setup.trainIdx, setup.ytrain, cfg.Encoder, r.fr != nil || inGraph)
	}
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
		if err := r.s.readErr(); err != nil {
			return 0, 0, fmt.Errorf("train: epoch %d: %w", epoch, err)
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
	if r.winTD != nil {
		r.winTD.finalize()
		r.winTD = nil
	}
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
	trainIdx, ytrain := r.setup.trainIdx, r.setup.ytrain
	switch {
	case r.setup.win != nil:
		var ws Scene
		ws, step, trainIdx, ytrain = r.setup.win.stepData(r.s, r.setup.win.next(), r.in, r.cfg.Encoder, r.fr != nil)
		r.winTD = &trainData{}
		*r.winTD = step
		r.aug.setScene(ws)
		switch {
		case r.fr != nil:
			// The kernels take the step's tile, changed or clean.
			if changed, ok := r.aug.nextScene(epoch, r.cfg.Epochs); ok {
				ws = changed
			}
			setFullResScene(r.fr, ws, r.in)
		default:
			if x := r.aug.next(epoch, r.cfg.Epochs); x != nil {
				step.setAugmented(x, r.cfg.Augment.ImageNorm)
			}
		}
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
		step = r.aug.cropStep(step, trainIdx, ytrain, r.fr != nil)
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
	if r.winTD != nil {
		r.winTD.finalize()
		r.winTD = nil
	}
}
