package main

import (
	"fmt"

	"github.com/pnec/pnec/evaluation"
	"github.com/pnec/pnec/model"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "evaluate",
		Usage:     "score a model on the test pixels of a labelled scene",
		UsageText: "pnec evaluate --model MODEL --scene SCENE --labels LABELS [--json]",
		Description: "Runs the model on the whole scene and scores it on the test pixels: the labelled valid pixels\n" +
			"of LABELS that were not training pixels (the split is stored in the model; on a scene of\n" +
			"another size every labelled pixel is a test pixel). Prints OA, AA, Cohen's kappa, per-class\n" +
			"accuracy (percent) without and with the AvgPool recovery, the confusion matrix of the final\n" +
			"labels, and the paper's reliability table for each reliability candidate: mean uncertainty\n" +
			"(1 - reliability) of correct and of wrong test pixels, error AUROC (0.5 = chance, 1 = every\n" +
			"error more uncertain than every correct pixel) and the share of errors among the 20% most\n" +
			"uncertain test pixels. The spectral candidates (spectral, spectral-margin) compare each pixel's\n" +
			"spectrum with the training pixels' spectra stored in the model; the row marked (default) is the\n" +
			"kind 'pnec classify' writes for this model.\n\n" +
			"Examples:\n" +
			"  pnec evaluate --model salinasA.pnec --scene salinasA.tif --labels salinasA_gt.tif\n" +
			"  pnec evaluate --model salinasA.pnec --scene salinasA.tif --labels salinasA_gt.tif --json > eval.json",
		Flags: append([]cli.Flag{
			modelFlag(true, ""),
			sceneFlag("scene", "with the model's bands", true),
			labelsFlag(),
			jsonFlag("one object; ratios 0..1, null where undefined"),
			&cli.IntFlag{Name: "window", DefaultText: "the model's", Usage: "recovery window in `PIXELS` (odd)"},
			&cli.Float64Flag{Name: "eta", DefaultText: "the model's", Usage: "recovery strength `ETA` in 0..1"},
			&cli.Float64Flag{Name: "top", Value: evaluation.DefaultTopFraction, Usage: "`SHARE` (0..1) of most uncertain test pixels for the error recall column"},
			backendFlag(),
		}, bandFlags()...),
		Action: evaluateAction,
	})
}

func evaluateAction(c *cli.Context) error {
	m, err := model.Load(c.String("model"))
	if err != nil {
		return fmt.Errorf("%s: %w", c.String("model"), err)
	}
	opts := evaluation.EvalOptions{Backend: c.String("backend"), TopFraction: c.Float64("top"), ResampleBands: c.Bool("resample-bands")}
	if opts.Radiometry, err = radiometryFromFlag(c); err != nil {
		return err
	}
	if !(opts.TopFraction > 0 && opts.TopFraction <= 1) {
		return fmt.Errorf("--top %g: want a share in (0, 1]", opts.TopFraction)
	}
	if c.IsSet("window") || c.IsSet("eta") {
		opts.Recovery = m.Recovery()
		if c.IsSet("window") {
			opts.Recovery.Window = c.Int("window")
		}
		if c.IsSet("eta") {
			opts.Recovery.Eta = c.Float64("eta")
		}
		if err := opts.Recovery.Validate(); err != nil {
			return fmt.Errorf("--window/--eta: %w", err)
		}
	}
	ev, err := evaluation.EvaluateFiles(c.Context, m, c.String("scene"), c.String("labels"), opts)
	if err != nil {
		return bandHint(err)
	}
	if c.Bool("json") {
		return ev.WriteJSON(stdoutOf(c))
	}
	return ev.WriteText(stdoutOf(c))
}
