package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/tiling"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "tiles",
		Usage:     "print how 'pnec classify' would cut a scene into tiles",
		UsageText: "pnec tiles --scene SCENE [--model MODEL] [--tile N --overlap M] [--max-memory SIZE] [--geojson] [--all]",
		Description: "Plans the scene as 'pnec classify' does (the model's grid: the whole image when both sides are\n" +
			"at most " + fmt.Sprint(processor.CanonicalTile) + " px, else overlapping tiles of that side whose origins are multiples of the network's\n" +
			"stride of 4; inputs below the tile padded to a multiple of " + fmt.Sprint(tiling.LadderStep) + " px; --tile gives another grid) and prints\n" +
			"the plan: one line per tile with its network input, the window read from the scene and its core\n" +
			"(the pixels it owns after cropping), the memory budget's planned peak and how many tiles it\n" +
			"holds in flight (the budget never changes the grid). With --geojson it prints a GeoJSON\n" +
			"FeatureCollection of the tiles' footprints in the scene's CRS (pixel coordinates when the\n" +
			"scene has no georeference). Without --model the memory estimate is a generic one.\n" +
			"Plans of more than 1000 tiles (a VRT mosaic declaring millions of pixels a side) print the\n" +
			"summary and the first 1000 tiles; --all lists every one.\n\n" +
			"Examples:\n" +
			"  pnec tiles --scene big.vrt --max-memory 2G\n" +
			"  pnec tiles --scene paviau.tif --tile 256 --overlap 64 --geojson > tiles.geojson",
		Flags: append([]cli.Flag{
			sceneFlag("scene", "", true),
			modelFlag(false, "plan for its memory estimate and recovery window"),
			&cli.BoolFlag{Name: "geojson", Usage: "print the tiles' footprints as a GeoJSON FeatureCollection in the scene's CRS"},
			&cli.BoolFlag{Name: "all", Usage: fmt.Sprintf("list every tile (default: at most %d; the summary always counts them all)", maxListedTiles)},
		}, append(bandFlags(), planFlags()...)...),
		Action: tilesAction,
	})
}

// maxListedTiles is how many tiles pnec tiles lists without --all: a plan
// of a huge mosaic has millions, and listing them takes minutes and
// gigabytes of output nobody reads.
const maxListedTiles = 1000

func tilesAction(c *cli.Context) error {
	opts, err := planOptions(c)
	if err != nil {
		return err
	}
	var m *model.Model
	if p := c.String("model"); p != "" {
		if m, err = model.Load(p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	name := c.String("scene")
	sc, err := geo.Open(name)
	if err != nil {
		return err
	}
	info := sc.Info()
	if err := sc.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if m != nil {
		// The scene's bands must give the model's, as classify checks.
		rad, err := radiometryFromFlag(c)
		if err != nil {
			return err
		}
		if info.Radiometry.Known() {
			rad = info.Radiometry
		}
		bp, err := m.BandPlan(info.BandSet(), rad, c.Bool("resample-bands"))
		if err != nil {
			return bandHint(fmt.Errorf("%s: %w", name, err))
		}
		printWarnings(stderrOf(c), name, bp.Warnings)
	}
	// The plan does not depend on the budget: one too small for it is
	// said beside the plan (classify refuses it), not instead of it.
	plan, budget, err := processor.PlanSceneLazy(info, m, opts)
	var be *processor.BudgetError
	if err != nil && !errors.As(err, &be) {
		return fmt.Errorf("%s: plan: %w", name, err)
	}
	memory := ""
	if be != nil {
		memory = fmt.Sprintf("memory budget %d MiB too small: one tile in flight needs at least %d MiB (classify needs --max-memory %s or more)",
			budget>>20, be.NeedBytes>>20, be.NeedSize())
	} else {
		flight, planned, err := processor.PlanFlight(plan, info, m, opts, budget, tiling.DeviceMemory{})
		if err != nil {
			return fmt.Errorf("%s: plan: %w", name, err)
		}
		memory = fmt.Sprintf("memory budget %d MiB (planned peak %d MiB, %s)", budget>>20, planned>>20, describeFlight(flight))
	}
	w := c.App.Writer
	if w == nil {
		w = os.Stdout
	}
	listed := plan.NumTiles()
	if !c.Bool("all") {
		listed = min(listed, maxListedTiles)
	}
	if c.Bool("geojson") {
		return plan.WriteGeoJSON(w, name, info.GeoTransform, info.EPSG, listed)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s: %s\n", name, plan)
	fmt.Fprintf(bw, "%s, stride %d, blend margin %d px\n", memory, plan.Stride, plan.Margin)
	for i := 0; i < listed; i++ {
		t := plan.Tile(i)
		fmt.Fprintf(bw, "tile %d (row %d, col %d): input %v, read %v, core %v\n", t.Index, t.Row, t.Col, t.Input, t.Read, t.Core)
	}
	if more := plan.NumTiles() - listed; more > 0 {
		fmt.Fprintf(bw, "... %d more tiles not listed (--all lists every one)\n", more)
	}
	return bw.Flush()
}
