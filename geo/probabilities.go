package geo

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airbusgeo/godal"
)

// ProbabilitySpec asks CreateProduct for the class probabilities companion
// (ProbabilitiesPath): a COG of the product's size, sample type and no-data
// value, every probability stored as a rounded percent 0-100.
type ProbabilitySpec struct {
	// TopK > 0 keeps the TopK most probable classes of each pixel, as pairs
	// of bands class_1, probability_1, class_2, ... (class values, then
	// percent); 0 writes one band per class, in the order of the product's
	// classes, named after it.
	TopK int
	// Stage says which probabilities these are, for the metadata
	// (PNEC_PROBABILITIES_STAGE); the writer does not interpret it.
	Stage string
}

// ProbabilityNoData marks a pixel without data in the values given to
// WriteProbabilities; the file stores the product's no-data value there.
const ProbabilityNoData = math.MaxUint16

// ProbabilitiesPath is where a product at path keeps its class
// probabilities: KEY.tif -> KEY.probabilities.tif.
func ProbabilitiesPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".probabilities.tif"
}

// ProbabilityBandCount is the number of bands of a probabilities file of
// classes classes keeping the topK most probable (0 = all).
func ProbabilityBandCount(classes, topK int) int {
	if topK > 0 {
		return 2 * topK
	}
	return classes
}

// probFile is the probabilities companion of a ProductWriter.
type probFile struct {
	spec    ProbabilitySpec
	bands   int
	stage   string
	ds      *godal.Dataset
	written []bool // rows written
}

// ProbabilityBands is the number of values per pixel WriteProbabilities
// takes (0 without a ProbabilitySpec).
func (p *ProductWriter) ProbabilityBands() int {
	if p.prob == nil {
		return 0
	}
	return p.prob.bands
}

// createProbabilities starts the probabilities stage beside the product's.
func (p *ProductWriter) createProbabilities() error {
	spec := *p.spec.Probabilities
	k := len(p.spec.Classes)
	if spec.TopK < 0 || spec.TopK > k {
		return fmt.Errorf("probabilities: top %d of %d classes: want 0 (all) to %d", spec.TopK, k, k)
	}
	pf := &probFile{spec: spec, bands: ProbabilityBandCount(k, spec.TopK), written: make([]bool, p.spec.Rows)}
	var err error
	if pf.stage, err = tempBeside(p.path, ".prob.stage.tif"); err != nil {
		return err
	}
	p.prob = pf
	p.temps = append(p.temps, withSidecars(pf.stage)...)
	pf.ds, err = godal.Create(godal.GTiff, pf.stage, pf.bands, p.dtype, p.spec.Cols, p.spec.Rows,
		godal.CreationOption("TILED=YES", "BLOCKXSIZE=512", "BLOCKYSIZE=512", "COMPRESS=NONE", "BIGTIFF=IF_SAFER",
			"INTERLEAVE=BAND", "PHOTOMETRIC=MINISBLACK"), errh)
	if err != nil {
		return fmt.Errorf("probabilities: %w", err)
	}
	if err := setGeoRef(pf.ds, p.spec.GeoRef); err != nil {
		return fmt.Errorf("probabilities: %w", err)
	}
	names := map[string]string{fmt.Sprintf("CLASS_%d", p.nodata): "no data"}
	for _, c := range p.spec.Classes {
		names[fmt.Sprintf("CLASS_%d", c.Value)] = c.Name
	}
	for i, b := range pf.ds.Bands() {
		if err := b.SetNoData(float64(p.nodata), errh); err != nil {
			return fmt.Errorf("probabilities band %d nodata: %w", i+1, err)
		}
		ci := godal.CIUndefined
		if i == 0 {
			ci = godal.CIGray
		}
		if err := b.SetColorInterp(ci, errh); err != nil {
			return fmt.Errorf("probabilities band %d colour interpretation: %w", i+1, err)
		}
		desc, md := p.probabilityBand(i, names)
		if err := b.SetDescription(desc, errh); err != nil {
			return fmt.Errorf("probabilities band %d description: %w", i+1, err)
		}
		if err := setMetadata(b, md, ""); err != nil {
			return fmt.Errorf("probabilities band %d: %w", i+1, err)
		}
	}
	return nil
}

// probabilityBand is band i's description and metadata: the class name
// and value for a band per class; "class_R" with every class's name, or
// "probability_R", for rank R of a top-k file.
func (p *ProductWriter) probabilityBand(i int, names map[string]string) (string, map[string]string) {
	if p.prob.spec.TopK == 0 {
		c := p.spec.Classes[i]
		return c.Name, map[string]string{"CLASS_VALUE": strconv.Itoa(c.Value), "CLASS_NAME": c.Name}
	}
	rank := i/2 + 1
	if i%2 == 0 {
		return fmt.Sprintf("class_%d", rank), names
	}
	return fmt.Sprintf("probability_%d", rank), map[string]string{"RANK": strconv.Itoa(rank)}
}

// ProbabilityBandNames are the band descriptions of a probabilities file
// (see ProbabilitySpec) for classes, in band order.
func ProbabilityBandNames(classes []ClassInfo, topK int) []string {
	var out []string
	if topK == 0 {
		for _, c := range classes {
			out = append(out, c.Name)
		}
		return out
	}
	for r := 1; r <= topK; r++ {
		out = append(out, fmt.Sprintf("class_%d", r), fmt.Sprintf("probability_%d", r))
	}
	return out
}

// isProbabilityBand reports whether band i holds probabilities (percent)
// rather than class values.
func (pf *probFile) isProbabilityBand(i int) bool { return pf.spec.TopK == 0 || i%2 == 1 }

// WriteProbabilities writes whole rows from row0 of the probabilities
// file: values is pixel-interleaved, ProbabilityBands() values per pixel
// (percent 0-100, or a class value in a top-k file's class bands), with
// ProbabilityNoData where the pixel has no data.
func (p *ProductWriter) WriteProbabilities(row0 int, values []uint16) error {
	if p.prob == nil || p.prob.ds == nil {
		return fmt.Errorf("write probabilities of %s: %w", p.path, ErrClosed)
	}
	cols, nb := p.spec.Cols, p.prob.bands
	if len(values) == 0 || len(values)%(cols*nb) != 0 {
		return fmt.Errorf("write probabilities of %s rows from %d: %w: got %d values, want a multiple of %d columns x %d bands",
			p.path, row0, ErrSize, len(values), cols, nb)
	}
	n := len(values) / (cols * nb)
	if row0 < 0 || row0+n > p.spec.Rows {
		return fmt.Errorf("write probabilities of %s: %w: rows %d..%d of %d", p.path, ErrWindow, row0, row0+n-1, p.spec.Rows)
	}
	px := cols * n
	bands := p.prob.ds.Bands()
	var b8 []uint8
	var b16 []uint16
	if p.dtype == godal.Byte {
		b8 = make([]uint8, px)
	} else {
		b16 = make([]uint16, px)
	}
	for bi, band := range bands {
		for i := 0; i < px; i++ {
			v := values[i*nb+bi]
			if v == ProbabilityNoData {
				v = uint16(p.nodata)
			} else if int(v) >= p.nodata {
				return fmt.Errorf("write probabilities of %s: value %d in band %d at row %d col %d collides with the no-data value %d",
					p.path, v, bi+1, row0+i/cols, i%cols, p.nodata)
			}
			if b8 != nil {
				b8[i] = uint8(v)
			} else {
				b16[i] = v
			}
		}
		var err error
		if b8 != nil {
			err = band.Write(0, row0, b8, cols, n, errh)
		} else {
			err = band.Write(0, row0, b16, cols, n, errh)
		}
		if err != nil {
			return fmt.Errorf("write probabilities of %s band %d rows %d..%d: %w", p.path, bi+1, row0, row0+n-1, err)
		}
	}
	for r := row0; r < row0+n; r++ {
		p.prob.written[r] = true
	}
	return nil
}

// commitProbabilities flushes the probabilities stage with the product's
// metadata (prefixed), gives it overviews (MODE for class bands, exact
// means for probabilities) and copies it into a temporary COG, whose name
// it returns ("" without probabilities).
func (p *ProductWriter) commitProbabilities(ctx context.Context, prefixed map[string]string, levels []int) (string, error) {
	pf := p.prob
	if pf == nil {
		return "", nil
	}
	for r, ok := range pf.written {
		if !ok {
			return "", fmt.Errorf("probabilities incomplete: row %d was never written", r)
		}
	}
	md := make(map[string]string, len(prefixed)+3)
	for k, v := range prefixed {
		md[k] = v
	}
	md["PNEC_PROBABILITIES_STAGE"] = pf.spec.Stage
	md["PNEC_PROBABILITIES_TOPK"] = strconv.Itoa(pf.spec.TopK)
	md["PNEC_PROBABILITIES_UNIT"] = ReliabilityUnit
	if err := setMetadata(pf.ds, md, ""); err != nil {
		return "", err
	}
	err := pf.ds.Close(errh)
	pf.ds = nil
	if err != nil {
		return "", fmt.Errorf("flush %s: %w", pf.stage, tidy(err))
	}
	units := make([]string, pf.bands)
	for i := range units {
		if pf.isProbabilityBand(i) {
			units[i] = ReliabilityUnit
		}
	}
	if err := setUnitTypes(pf.stage, units); err != nil {
		return "", fmt.Errorf("probabilities unit: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if len(levels) > 0 {
		if err := p.probabilityOverviews(ctx, levels); err != nil {
			return "", err
		}
	}
	// Not unmarkAlpha'd as the product is: GDAL's COG driver writes 3 or 4
	// Byte bands as PHOTOMETRIC=RGB (band 4 an alpha sample) whatever the
	// source says, and keeps the bands' own colour interpretations in its
	// metadata, which GDAL (and rasterio and QGIS through it) reads back.
	return p.toCOG(pf.stage, ".prob.tmp.tif", stageOpenOptions...)
}

// stageOpenOptions open the probabilities stage for reading with one
// thread: GDAL 3.6's multithreaded block reader (GDAL_NUM_THREADS, which
// pnec sets) fails on a stage of 3 or more bands ("_TIFFVSetField: Bad value
// 3 for ExtraSamples tag", printed per block) and falls back to reading
// on one thread anyway.
var stageOpenOptions = []string{"NUM_THREADS=1"}

// probabilityOverviews gives the stage its overview levels: MODE for a
// top-k file's class bands (GDAL 3.6 builds one method for all bands of a
// GTiff), then every probability band's levels are replaced by the exact
// means of its valid full-resolution pixels (averageOverviews).
func (p *ProductWriter) probabilityOverviews(ctx context.Context, levels []int) error {
	pf := p.prob
	ds, err := godal.Open(pf.stage, godal.RasterOnly(), godal.Update(), godal.DriverOpenOption(stageOpenOptions...), errh)
	if err != nil {
		return fmt.Errorf("reopen %s for update: %w", pf.stage, err)
	}
	method := godal.Nearest // only allocates the levels when every band is averaged below
	if pf.spec.TopK > 0 {
		method = godal.Mode
	}
	if err := ds.BuildOverviews(godal.Resampling(method), godal.Levels(levels...), errh); err != nil {
		ds.Close(errh)
		return fmt.Errorf("probabilities overviews: %w", err)
	}
	for i, b := range ds.Bands() {
		if err = ctx.Err(); err != nil {
			break
		}
		if !pf.isProbabilityBand(i) {
			continue
		}
		if err = p.averageOverviews(b, levels, float64(p.nodata), false); err != nil {
			err = fmt.Errorf("probabilities band %d: %w", i+1, err)
			break
		}
	}
	if cerr := ds.Close(errh); err == nil && cerr != nil {
		err = fmt.Errorf("flush probabilities overviews: %w", cerr)
	}
	return err
}

// closeProbabilities closes the probabilities stage (Close).
func (p *ProductWriter) closeProbabilities() error {
	if p.prob == nil || p.prob.ds == nil {
		return nil
	}
	err := p.prob.ds.Close(errh)
	p.prob.ds = nil
	return err
}
