package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/samefile"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

func init() {
	register(&cli.Command{
		Name:      "model-item",
		Usage:     "write a model's STAC Item (machine learning model extension), for models trained before pnec train wrote it",
		UsageText: "pnec model-item --model MODEL [--out ITEM.json] [--training-scene SCENE] [--model-name NAME] [--stac-base-url URL]",
		Description: "Describes a model file as a STAC Item with the Machine Learning Model extension (MLM v1.5.2):\n" +
			"name, architecture, tasks, input bands (with wavelengths when the model records them), shape and\n" +
			"scaling, output classes, the model file as asset with its checksum and size (file extension),\n" +
			"the training scene and labels as derived_from links and the training accuracy. 'pnec train'\n" +
			"writes the same Item beside every model it trains; the products of 'pnec batch' point at it\n" +
			"(derived_from, processing:expression). Its geometry is the footprint of --training-scene (the\n" +
			"training scene the model records is linked, never opened: a model file could name any file or\n" +
			"URL); without it, null. Its datetime is the model file's modification time. Details:\n" +
			"docs/model-item.md.\n\n" +
			"Examples:\n" +
			"  pnec model-item --model salinas.pnec                      (writes salinas.pnec.json)\n" +
			"  pnec model-item --model salinas.pnec --training-scene Salinas.tif   (with its footprint)\n" +
			"  pnec model-item --model m.pnec --stac-base-url https://models.example.org/pnec",
		Flags: []cli.Flag{
			modelFlag(true, ""),
			&cli.StringFlag{Name: "out", Usage: "Item `FILE` to write (default: MODEL.json beside the model, e.g. salinas.pnec.json)"},
			&cli.StringFlag{Name: "training-scene", Usage: "training `SCENE` opened for the Item's footprint (the one the model records is never opened unless named here)"},
			stacBaseURLFlag("the Item's directory", "the Item gets an absolute self link"),
			modelNameFlag(),
			quietFlag(),
		},
		Action: modelItemAction,
	})
}

func modelItemAction(c *cli.Context) error {
	modelPath := c.String("model")
	out := c.String("out")
	if out == "" {
		out = stac.ModelItemPath(modelPath)
	}
	if err := processor.CheckOutput(out); err != nil {
		return fmt.Errorf("--out %w", err)
	}
	name := c.String("model-name")
	if name == "" {
		name = stac.ModelName(modelPath)
	} else if err := stac.CheckModelName(name); err != nil {
		return fmt.Errorf("--model-name: %w", err)
	}
	// The Item must not replace what it describes (classify refuses the same).
	inputs := []samefile.Named{{Path: modelPath, Role: "--model"}}
	if ts := c.String("training-scene"); ts != "" {
		inputs = append(inputs, samefile.Named{Path: ts, Role: "--training-scene"})
	}
	if err := checkOutputsNotInputs([]samefile.Named{{Path: out, Role: "--out"}}, inputs); err != nil {
		return err
	}
	m, err := model.Load(modelPath)
	if err != nil {
		return fmt.Errorf("%s: %w", modelPath, err)
	}
	st, err := os.Stat(modelPath)
	if err != nil {
		return err
	}
	// The training scene the model records is not opened: a model file
	// from elsewhere could name any local file or URL (/vsicurl/ sends
	// requests). The user names it to take its footprint.
	scene := c.String("training-scene")
	if err := writeModelItem(m, modelPath, out, name, c.String("stac-base-url"), scene, st.ModTime(), true); err != nil {
		return err
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(stdoutOf(c), "%s: STAC Item of %s (mlm:name %s)\n", out, modelPath, name)
		if rec := m.Provenance().Scene; scene == "" && rec != "" {
			fmt.Fprintf(stderrOf(c), "model-item: geometry null: the model records its training scene %s, which is not opened unless named; give --training-scene %s for its footprint\n", rec, rec)
		}
	}
	return nil
}

// writeModelItem writes the STAC Item of the model m saved at modelPath to
// itemPath under the mlm:name name ("" = from the file name). The training
// scene, when it opens, gives the footprint; one
// that does not is an error only when the user named it (mustOpen).
func writeModelItem(m *model.Model, modelPath, itemPath, name, baseURL, scene string, datetime time.Time, mustOpen bool) error {
	if baseURL != "" && !strings.HasPrefix(baseURL, "https://") && !strings.HasPrefix(baseURL, "http://") {
		return fmt.Errorf("--stac-base-url %q: want an http(s) URL", baseURL)
	}
	p := stac.ModelItemParams{Model: m, ModelPath: modelPath, ItemPath: itemPath, Name: name, BaseURL: baseURL,
		Datetime: datetime, Now: time.Now()}
	if scene != "" {
		sc, err := geo.Open(scene)
		switch {
		case err == nil:
			info := sc.Info()
			sc.Close()
			p.TrainInfo = &info
		case mustOpen:
			return fmt.Errorf("--training-scene: %w", err)
		}
	}
	if err := stac.WriteModelItem(p); err != nil {
		return errors.Join(fmt.Errorf("STAC item of %s", modelPath), err)
	}
	return nil
}
