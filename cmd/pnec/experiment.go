package main

import (
	"fmt"

	"github.com/pnec/pnec/evaluation"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/model/backend"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "experiment",
		Usage:     "repeat training and evaluation over seeds: the paper's protocol and tables",
		UsageText: "pnec experiment --scene SCENE --labels LABELS [--train-mask TRAIN] [--runs 10] [--ablation] [--json]",
		Description: "Trains --runs models with seeds --first-seed, --first-seed+1, ... (the paper: 202501..202510)\n" +
			"on one split, scores each on the test pixels, and prints per-class accuracy (mean) and OA, AA,\n" +
			"kappa (mean ± std over runs, percent) in the layout of the paper's class-wise tables, with the\n" +
			"training and full-scene inference time of every run and each reliability candidate's error\n" +
			"AUROC. --ablation adds the columns Base (no evidence calibration), w/o EC (s = 0) and w/o RC\n" +
			"(the full network's runs scored without the recovery step). std is the population standard\n" +
			"deviation (divisor n, numpy's default).\n\n" +
			"Examples:\n" +
			"  pnec experiment --scene salinasA.tif --labels salinasA_gt.tif --train-mask salinasA_train.tif\n" +
			"  pnec experiment --scene jasper.tif --labels jasper_gt.tif --train-mask jasper_train.tif --runs 10 --ablation --json",
		Flags: flagList([]cli.Flag{
			sceneFlag("scene", "", true),
			labelsFlag(),
		}, splitFlags(), []cli.Flag{
			&cli.IntFlag{Name: "runs", Value: 10, Usage: "`RUNS` per variant"},
			&cli.Int64Flag{Name: "first-seed", Value: model.DefaultSeed, Usage: "`SEED` of the first run; run i uses first-seed + i"},
			&cli.BoolFlag{Name: "shift", Usage: "the acquisition-shift protocol instead of the paper's: each run's model scored on the scene changed in brightness, spectral tilt, offset, noise, band position and class mix (sub-areas), alone and in pairs, plus a spatially disjoint split (docs/acquisitions.md)"},
			&cli.BoolFlag{Name: "disjoint", Value: true, Usage: "with --shift: also the spatially disjoint split (one more model per run, trained on one half of the scene and scored on the other)"},
			&cli.StringFlag{Name: "other", Usage: "with --shift: a `SCENE` of other land cover, run as one more case (resampled to the model's band count when it differs; no accuracy, only the drift verdict)"},
			&cli.StringFlag{Name: "models", Usage: "with --shift: keep each run's model in `DIR` and reuse the ones kept there by an earlier run of the same scene and settings (their drift statistics measured again): a rerun without the training"},
			jsonFlag("one object"),
			quietFlag(),
		}, experimentModelFlags()),
		Action: experimentAction,
	})
}

// experimentModelFlags are modelFlags with --ablation as a switch: an
// experiment runs all variants or only the full model.
func experimentModelFlags() []cli.Flag {
	var out []cli.Flag
	for _, f := range modelFlags() {
		if f.Names()[0] == "ablation" {
			out = append(out, &cli.BoolFlag{Name: "ablation", Usage: "also run the Base, w/o EC, w/o RC (gate G = 1) and w/o recovery variants"})
			continue
		}
		out = append(out, f)
	}
	return out
}

func experimentAction(c *cli.Context) error {
	configureBackends(func(s *backend.Settings) { s.XLAQuickCompile = true })
	cfg, err := configFromFlags(c, false)
	if err != nil {
		return err
	}
	runs := c.Int("runs")
	if runs < 1 {
		return fmt.Errorf("--runs %d: want at least 1", runs)
	}
	if c.Int("train-per-class") < 1 {
		return fmt.Errorf("--train-per-class %d: want at least 1", c.Int("train-per-class"))
	}
	if c.Int64("first-seed") == 0 || c.Int64("split-seed") == 0 {
		return fmt.Errorf("--first-seed and --split-seed: 0 is reserved for the default; give another value")
	}
	names, err := classNamesFromFlags(c)
	if err != nil {
		return err
	}
	opts := evaluation.ExperimentOptions{
		Runs: runs, FirstSeed: c.Int64("first-seed"), Ablation: c.Bool("ablation"),
		Train: model.TrainOptions{Config: cfg, TrainPerClass: c.Int("train-per-class"),
			SplitSeed: c.Int64("split-seed"), Backend: c.String("backend"), ClassNames: names},
		Eval: evaluation.EvalOptions{Backend: c.String("backend")},
	}
	if !c.Bool("quiet") {
		trainings := runs
		if opts.Ablation {
			trainings = 3 * runs
		}
		if c.Bool("shift") && c.Bool("disjoint") {
			trainings = 2 * runs // the disjoint split trains a model of its own
		}
		total := trainings * cfg.Epochs
		rep := newEpochReporter(stderrOf(c), total, "experiment")
		defer rep.finish()
		opts.Progress = rep.report
	}
	if c.Bool("shift") {
		if opts.Ablation {
			return fmt.Errorf("--shift and --ablation: give one of them")
		}
		so := evaluation.ShiftOptions{Runs: runs, FirstSeed: opts.FirstSeed, Train: opts.Train, Eval: opts.Eval,
			Disjoint: c.Bool("disjoint"), ModelDir: c.String("models"), Progress: opts.Progress}
		exp, err := evaluation.RunShiftFiles(c.Context, c.String("scene"), c.String("labels"), c.String("train-mask"), c.String("other"), so)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return exp.WriteJSON(stdoutOf(c))
		}
		return exp.WriteText(stdoutOf(c))
	}
	if c.String("other") != "" || c.IsSet("disjoint") || c.String("models") != "" {
		return fmt.Errorf("--other, --disjoint and --models need --shift")
	}
	exp, err := evaluation.RunExperimentFiles(c.Context, c.String("scene"), c.String("labels"), c.String("train-mask"), opts)
	if err != nil {
		return wordTrainMemory(err, cfg)
	}
	if c.Bool("json") {
		return exp.WriteJSON(stdoutOf(c))
	}
	return exp.WriteText(stdoutOf(c))
}
