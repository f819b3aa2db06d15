// Command netbench times pnec's network on a synthetic scene, for the
// side-by-side comparison with the PyTorch reference (bench/cmd/torchcmp).
//
// In one process it measures either full-scene inference (normalisation,
// network, bilinear upsampling, softmax and the AvgPool recovery, then the
// class argmax: what the reference's infer() computes) or one full training
// step (forward with the training labels, the four losses, backward, Adam,
// prototype update, evidence calibration on). The first operation, which
// includes compilation, is reported apart; the result is one JSON line with
// the median seconds per operation of -steps timed operations. Peak RSS is
// measured by the caller (wait4), as for the PyTorch side.
//
// The scene is the same deterministic pattern bench/torch/netbench.py builds.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/progress"
	"github.com/pnec/pnec/tiling"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench: "+err.Error())
		os.Exit(1)
	}
}

// result is the JSON line netbench prints; torchcmp reads the same fields
// from the PyTorch side.
type result struct {
	Impl    string  `json:"impl"`
	Backend string  `json:"backend"`
	FirstS  float64 `json:"first_s"` // first operation, compilation included
	MedianS float64 `json:"median_s"`
	MinS    float64 `json:"min_s"`
	MaxS    float64 `json:"max_s"`
	Steps   int     `json:"steps"`
	// MedianCPUS is the median process CPU time (user + system, all
	// threads) per timed operation: on a machine shared with other work it
	// moves much less than the wall time.
	MedianCPUS float64 `json:"median_cpu_s"`
}

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("netbench", flag.ContinueOnError)
	rows := fs.Int("rows", 610, "scene rows")
	cols := fs.Int("cols", 340, "scene columns")
	bands := fs.Int("bands", 103, "bands")
	classes := fs.Int("classes", 9, "classes")
	encoder := fs.String("encoder", "cell", "encoder: paper or cell")
	input := fs.String("input", model.InputStretch, "network input (stretch, the reference's; shape, pnec's default; stretch+shape; snv)")
	augment := fs.String("augment", "off", "training augmentation (off, the reference's; or pnec train's --augment spec)")
	mode := fs.String("mode", "infer", "infer (full-scene inference) or train (one training step)")
	steps := fs.Int("steps", 3, "timed operations after the first")
	backend := fs.String("backend", "go", "backend (go, or xla:...)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed operations to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *steps < 1 {
		return fmt.Errorf("-steps %d: want at least 1", *steps)
	}
	s, labels := scene(*rows, *cols, *bands, *classes)
	// The profile starts with the first timed operation (after compilation).
	startProfile := func() error { return nil }
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		startProfile = func() error { return pprof.StartCPUProfile(f) }
		defer pprof.StopCPUProfile()
	}
	cfg, err := netConfig(*encoder, *input, *augment)
	if err != nil {
		return err
	}
	var times, cpus []float64
	var res result
	res.Impl, res.Steps = "pnec", *steps
	switch *mode {
	case "train":
		times, cpus, err = timeTrain(ctx, s, labels, cfg, *backend, *steps, startProfile, &res)
	case "infer":
		// The weights come from one epoch on a small crop, so that the
		// process's peak RSS is inference's, not a full-scene training's.
		cs, cl := scene(min(*rows, 64), min(*cols, 64), *bands, *classes)
		times, cpus, err = timeInfer(ctx, s, cs, cl, cfg, *backend, *steps, startProfile, &res)
	default:
		return fmt.Errorf("-mode %s: want infer or train", *mode)
	}
	if err != nil {
		return err
	}
	slices.Sort(times)
	slices.Sort(cpus)
	res.MedianS, res.MinS, res.MaxS = times[len(times)/2], times[0], times[len(times)-1]
	res.MedianCPUS = cpus[len(cpus)/2]
	return json.NewEncoder(os.Stdout).Encode(res)
}

// netConfig is the network's configuration for -encoder, -input and
// -augment, with evidence calibration on from the first step.
func netConfig(encoder, input, augment string) (model.Config, error) {
	cfg := model.DefaultConfig()
	if err := setEncoder(&cfg, encoder); err != nil {
		return cfg, err
	}
	cfg.ECWarmupEpochs = 0 // calibration on in every timed step, as in the reference's timing
	// By default the reference's network: its per-band stretch, no
	// augmentation (pnec's defaults divide by the spectrum's
	// mean and augment, which the PyTorch reference does not).
	aug, err := model.ParseAugment(augment)
	if err != nil {
		return cfg, fmt.Errorf("-augment: %w", err)
	}
	cfg.Input, cfg.Augment = input, aug
	return cfg, nil
}

// timeTrain trains 1 + steps epochs on s and returns the wall and CPU
// seconds of each epoch after the first, which goes into res.FirstS.
func timeTrain(ctx context.Context, s model.Scene, labels []int32, cfg model.Config, backend string, steps int, startProfile func() error, res *result) (times, cpus []float64, err error) {
	cfg.Epochs = 1 + steps
	var last time.Duration
	lastCPU := cpuSeconds()
	_, err = model.Train(ctx, s, labels, model.TrainOptions{Config: cfg, Backend: backend,
		Progress: func(e progress.Event) {
			d := e.Elapsed - last
			last = e.Elapsed
			c := cpuSeconds()
			dc := c - lastCPU
			lastCPU = c
			if e.Done == 1 {
				res.FirstS = d.Seconds()
				if err := startProfile(); err != nil {
					fmt.Fprintln(os.Stderr, "netbench: cpu profile:", err)
				}
				return
			}
			times = append(times, d.Seconds())
			cpus = append(cpus, dc)
		}})
	if err != nil {
		return nil, nil, err
	}
	res.Backend = backend
	return times, cpus, nil
}

// timeInfer trains one epoch on the crop cs (labels cl) for weights, then
// classifies s 1 + steps times and returns the wall and CPU seconds of
// each run after the first, which goes into res.FirstS.
func timeInfer(ctx context.Context, s, cs model.Scene, cl []int32, cfg model.Config, backend string, steps int, startProfile func() error, res *result) (times, cpus []float64, err error) {
	cfg.Epochs = 1
	m, err := model.Train(ctx, cs, cl, model.TrainOptions{Config: cfg, Backend: backend})
	if err != nil {
		return nil, nil, err
	}
	p, err := model.NewPredictor(m, backend)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	res.Backend = p.Backend()
	rec := cfg.Recovery
	op := func() error {
		pred, err := p.Predict(ctx, s)
		if err != nil {
			return err
		}
		prob := tiling.Recover(pred.Prob, s.Valid, pred.Rows, pred.Cols, pred.Classes, rec)
		_ = tiling.Argmax(prob, pred.Classes)
		return nil
	}
	for i := 0; i <= steps; i++ {
		t0, c0 := time.Now(), cpuSeconds()
		if err := op(); err != nil {
			return nil, nil, err
		}
		d, dc := time.Since(t0).Seconds(), cpuSeconds()-c0
		if i == 0 {
			res.FirstS = d
			if err := startProfile(); err != nil {
				return nil, nil, err
			}
		} else {
			times = append(times, d)
			cpus = append(cpus, dc)
		}
	}
	return times, cpus, nil
}

// scene builds the benchmark scene: class blocks of 37x29 pixels and a
// per-band sinusoid, values in [0, 1], all pixels valid. Labels are class
// values 1..classes.
func scene(rows, cols, bands, classes int) (model.Scene, []int32) {
	s := model.Scene{Rows: rows, Cols: cols, Bands: bands, Data: make([]float32, rows*cols*bands),
		Valid: make([]bool, rows*cols)}
	labels := make([]int32, rows*cols)
	for r := range rows {
		for c := range cols {
			k := ((r/37)*7 + c/29) % classes
			i := r*cols + c
			labels[i] = int32(k + 1)
			s.Valid[i] = true
			for b := range bands {
				s.Data[i*bands+b] = float32(0.2 + 0.6*float64(k+1)/float64(classes+1) +
					0.1*math.Sin(float64(b)/7+float64(k)))
			}
		}
	}
	return s, labels
}
