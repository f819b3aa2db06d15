package main

import (
	"github.com/pnec/pnec/model"
	"github.com/urfave/cli/v2"
)

// The options several commands share are defined here once, as rio defines
// creation_options and output_opt once, so that a flag means and says the
// same in every command. Each call returns a new flag: urfave/cli keeps
// parse state in the flag value. The groups of flags are beside the code
// that reads them: planFlags and productFlags (classify.go), modelFlags
// (train.go), bandFlags, qualityMaskFlag and radiometryFlag (bands.go).

// backendNames lists what --backend takes.
const backendNames = "go, xla:cpu, xla:cuda, xla:/abs/plugin.so"

// backendFlag is --backend, the compute backend of a command that runs the
// network.
func backendFlag() cli.Flag {
	return &cli.StringFlag{Name: "backend", Usage: "compute backend `NAME`: " + backendNames + " (default: $GOMLX_BACKEND, else XLA when a GPU plugin is found and the job is faster there, else go: pnec backends)"}
}

// quietFlag is --quiet (-q): the results and errors only.
func quietFlag() cli.Flag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress, log lines or summary (results and errors still appear)"}
}

// jsonFlag is --json; what says what is printed, e.g. "one object".
func jsonFlag(what string) cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON (" + what + ") instead of text"}
}

// modelFlag is --model, a model file from 'pnec train'; note, when not
// empty, says when it is needed or what the command does with it.
func modelFlag(required bool, note string) cli.Flag {
	usage := "trained model `MODEL` (a .pnec file from 'pnec train')"
	if note != "" {
		usage += "; " + note
	}
	return &cli.StringFlag{Name: "model", Required: required, Usage: usage}
}

// sceneFlag is --scene; role names the scene's part in the command and
// note, when not empty, adds what else the command asks of it.
func sceneFlag(role, note string, required bool) cli.Flag {
	usage := role + " `SCENE`: any GDAL dataset name (GeoTIFF, ENVI, VRT, /vsicurl/...) or a sensor's delivery pnec reads (docs/sensors.md)"
	if note != "" {
		usage += "; " + note
	}
	return &cli.StringFlag{Name: "scene", Required: required, Usage: usage}
}

// labelsFlag is --labels, the ground truth of train, evaluate and experiment.
func labelsFlag() cli.Flag {
	return &cli.StringFlag{Name: "labels", Required: true, Usage: "label raster `LABELS`: class values, 0 = unlabelled, same size as the scene"}
}

// splitFlags are the training split and class names train and experiment
// share.
func splitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "train-mask", Usage: "fixed split: raster `TRAIN` of the training pixels' class values (0 elsewhere); overrides --train-per-class and --split-seed"},
		&cli.IntFlag{Name: "train-per-class", Value: model.DefaultTrainPerClass, Usage: "training `PIXELS` drawn per class without --train-mask (fewer when a class has fewer)"},
		&cli.Int64Flag{Name: "split-seed", Value: model.DefaultSplitSeed, Usage: "`SEED` of the training pixel draw without --train-mask"},
		&cli.StringFlag{Name: "class-names", Usage: "`FILE` of class names, one 'VALUE NAME' a line (e.g. '1 Brocoli_green_weeds_1')"},
		&cli.StringSliceFlag{Name: "class-name", Usage: "class name `VALUE=NAME` (repeatable); overrides --class-names"},
	}
}

// stacBaseURLFlag is --stac-base-url; root names the folder the URL stands
// for and links what gets self links under it.
func stacBaseURLFlag(root, links string) cli.Flag {
	return &cli.StringFlag{Name: "stac-base-url", Usage: "public `URL` of " + root + ": " + links + " (without it, none)"}
}

// modelNameFlag is --model-name, the model's name in its STAC Item.
func modelNameFlag() cli.Flag {
	return &cli.StringFlag{Name: "model-name", Usage: "`NAME` of the model in its STAC Item (mlm:name; default: the file name, made valid for MLM: 2024_model.pnec -> pnec-2024_model, m.pnec -> pnec-m)"}
}

// creationOptionsFlag is --co, a GDAL creation option of driver; note says
// what else the command does with them, e.g. how it checks them.
func creationOptionsFlag(driver, note, example string) cli.Flag {
	usage := driver + " creation option `KEY=VALUE` (repeatable"
	if note != "" {
		usage += "; " + note
	}
	return &cli.StringSliceFlag{Name: "co", Usage: usage + "), e.g. " + example}
}

// flagList joins groups of flags in order.
func flagList(groups ...[]cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}
