package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/spectral"
)

// bandFlags are the flags that say how a scene's bands and values meet a
// model's, shared by classify, batch, evaluate and tiles.
func bandFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "resample-bands", Usage: "make the model's bands from a scene whose bands differ from them (Gaussian spectral response functions of the model bands' centres and FWHM over the scene's good bands) instead of refusing it; a model band the scene cannot cover is still refused"},
		radiometryFlag("the scene's values"),
	}
}

// qualityMaskFlag is --quality-mask, shared by classify and batch. It is
// not --mask, the area of interest (non-zero = inside): a quality mask's
// non-zero pixels are the ones left out.
func qualityMaskFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "quality-mask", Usage: "quality mask `QMASK` whose flagged pixels become no-data (repeatable; combines with --mask, the area of interest): 'product' for the masks the scene's product delivers (EnMAP pixel/cloud/cirrus/cloud-shadow masks, EMIT's L2A mask file beside the scene, Tanager's cloud and cirrus masks: docs/sensors.md), or a raster on the scene's grid, PATH[:BANDS] (pixels non-zero in any of the 1-based BANDS, default band 1)"}
}

// qualityMasksFromFlag reads --quality-mask into processor options.
func qualityMasksFromFlag(c *cli.Context, o *processor.Options) error {
	for _, v := range c.StringSlice("quality-mask") {
		if v == "product" {
			o.ProductQualityMasks = true
			continue
		}
		m, err := parseQualityMask(v)
		if err != nil {
			return fmt.Errorf("--quality-mask %s: %w", v, err)
		}
		o.QualityMasks = append(o.QualityMasks, m)
	}
	return nil
}

// parseQualityMask reads PATH[:BANDS]: a trailing ":1,3" (1-based band
// numbers) selects bands; any other colon belongs to the path (GDAL names
// such as NETCDF:"f.nc":mask have them).
func parseQualityMask(v string) (processor.QualityMask, error) {
	m := processor.QualityMask{Path: v}
	i := strings.LastIndex(v, ":")
	if i <= 0 {
		return m, nil
	}
	var bands []int
	for _, f := range strings.Split(v[i+1:], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return m, nil // not a band list: part of the path
		}
		if n < 1 {
			return m, fmt.Errorf("band %d: bands count from 1", n)
		}
		bands = append(bands, n-1)
	}
	m.Path, m.Bands = v[:i], bands
	return m, nil
}

// radiometryFlag is --radiometry, saying what whose values measure.
func radiometryFlag(whose string) cli.Flag {
	return &cli.StringFlag{Name: "radiometry", Usage: "what " + whose + " measure where the scene does not say: reflectance:SCALE (`QUANTITY`; SCALE is the value of reflectance 1, e.g. reflectance:1 or reflectance:10000) or radiance[:UNITS]; a product's own statement wins"}
}

// radiometryFromFlag reads --radiometry (zero when not given).
func radiometryFromFlag(c *cli.Context) (spectral.Radiometry, error) {
	v := c.String("radiometry")
	if v == "" {
		return spectral.Radiometry{}, nil
	}
	r, err := parseRadiometry(v)
	if err != nil {
		return r, fmt.Errorf("--radiometry %s: %w", v, err)
	}
	return r, nil
}

// parseRadiometry reads "reflectance:SCALE", "reflectance" or "radiance[:UNITS]".
func parseRadiometry(v string) (spectral.Radiometry, error) {
	q, arg, _ := strings.Cut(strings.TrimSpace(v), ":")
	switch strings.ToLower(q) {
	case spectral.QuantityReflectance:
		r := spectral.Radiometry{Quantity: spectral.QuantityReflectance}
		if arg != "" {
			f, err := strconv.ParseFloat(arg, 64)
			if err != nil {
				return r, fmt.Errorf("scale %q: %w", arg, spectral.ErrScale)
			}
			if err := spectral.CheckScale(f); err != nil {
				return r, err
			}
			r.Scale = f
		}
		return r, nil
	case spectral.QuantityRadiance:
		return spectral.Radiometry{Quantity: spectral.QuantityRadiance, Units: arg}, nil
	}
	return spectral.Radiometry{}, errors.New("want reflectance:SCALE (e.g. reflectance:10000) or radiance[:UNITS]")
}

// bandHint adds, to an error refusing a scene's bands, the flag that
// would make the model's bands from them.
func bandHint(err error) error {
	if errors.Is(err, spectral.ErrBandsDiffer) {
		return fmt.Errorf("%w (--resample-bands computes the model's bands from the scene's)", err)
	}
	return err
}

// printWarnings writes a scene's warnings to w, one line each.
func printWarnings(w io.Writer, scene string, warnings []string) {
	for _, msg := range warnings {
		fmt.Fprintf(w, "pnec: warning: %s: %s\n", scene, msg)
	}
}

// bandsSummary describes a model's input bands: "200 bands, 400-2500 nm,
// FWHM 10 nm (6 bad bands of the 206-band training scene left out)".
func bandsSummary(m *model.Model) string {
	s := m.BandSet().Describe()
	if r := m.BandRecord(); r.SceneBands > 0 {
		s += fmt.Sprintf(" (%d of the %d-band training scene; %d bad left out)", m.Bands(), r.SceneBands, len(r.BadBands))
	}
	return s
}
