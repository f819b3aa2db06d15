package main

import (
	"fmt"

	"github.com/pnec/pnec/geo"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "info",
		Usage:     "describe a scene as pnec sees it",
		ArgsUsage: "SCENE",
		UsageText: "pnec info [--json] [--skip-valid] --scene SCENE\n   pnec info [--json] [--skip-valid] SCENE",
		Description: "Prints what the classifier will see of SCENE: size, bands, data type, nodata, CRS (with\n" +
			"its EPSG code where it has one), geotransform, the footprint in WGS84 lon/lat as GeoJSON,\n" +
			"the share of valid pixels (no band nodata, NaN or masked; read window by window, exactly for\n" +
			"scenes up to 4 Mpixels and estimated from a regular sample of 4 Mpixels for larger ones, so that\n" +
			"a VRT mosaic of any declared size answers in seconds) and band wavelengths in nanometres when\n" +
			"the scene says them.\n\n" +
			"SCENE is any GDAL dataset name: a GeoTIFF, an ENVI .img/.hdr, a VRT, an HDF5 subdataset,\n" +
			"or a /vsizip/, /vsicurl/, /vsis3/ path. --scene gives it as every command does; the SCENE\n" +
			"argument alone is the short spelling.\n\n" +
			"Examples:\n" +
			"  pnec info --scene salinasA.tif\n" +
			"  pnec info salinasA.tif\n" +
			"  pnec info --json salinasA.tif | jq .footprint\n" +
			"  pnec info /vsizip/scenes.zip/cube.img\n" +
			"  pnec --config AWS_NO_SIGN_REQUEST=YES info --skip-valid /vsis3/bucket/scene.tif",
		Flags: []cli.Flag{
			sceneFlag("the", "", false),
			jsonFlag("one object"),
			&cli.BoolFlag{Name: "skip-valid", Usage: "do not compute the valid-pixel fraction (it reads the scene, or a 4 Mpixel sample of a larger one)"},
		},
		Action: infoAction,
	})
}

func infoAction(c *cli.Context) error {
	scene := c.String("scene")
	switch {
	case scene != "" && c.NArg() > 0:
		return fmt.Errorf("info: --scene %s and the argument %q: give the scene once", scene, c.Args().First())
	case scene == "" && c.NArg() != 1:
		return fmt.Errorf("info: want one scene, --scene SCENE or the SCENE argument, got %d arguments (see pnec info --help)", c.NArg())
	case scene == "":
		scene = c.Args().First()
	}
	s, err := geo.Open(scene)
	if err != nil {
		return err
	}
	defer s.Close()
	rep := geo.NewReport(s.Info())
	if !c.Bool("skip-valid") {
		f, exact, err := s.ValidFractionEstimate(c.Context)
		if err != nil {
			return err
		}
		rep.ValidFraction, rep.ValidEstimated = &f, !exact
	}
	if c.Bool("json") {
		return rep.WriteJSON(c.App.Writer)
	}
	return rep.WriteText(c.App.Writer, "--json gives the WKT")
}
