package synth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/tempfiles"
)

// DefaultGeoRef places scenes without a georeference of their own: UTM zone
// 32N (EPSG:32632) near Pavia, north up, gsdM metres per pixel. The place is
// arbitrary; it only makes the scene a valid georeferenced raster.
func DefaultGeoRef(gsdM float64) geo.GeoRef {
	return geo.GeoRef{GeoTransform: [6]float64{510000, gsdM, 0, 5005000, 0, -gsdM}, EPSG: 32632}
}

// WriteOptions says where and how to write a scene.
type WriteOptions struct {
	// Path is the scene GeoTIFF (or, for WriteVRT, the VRT).
	Path string
	// LabelsPath is the label raster (Byte; "" = none).
	LabelsPath string
	// DataType of the scene bands (values are rounded and clamped by GDAL).
	DataType geo.DataType
	GeoRef   geo.GeoRef
	// CreationOptions are GTiff creation options for the scene; they
	// override SceneCreationOptions key by key.
	CreationOptions []string
	// Metadata is added to the scene's dataset metadata.
	Metadata map[string]string
	// MaxMemoryBytes caps the strip buffers (default 256 MiB).
	MaxMemoryBytes int64
}

// SceneCreationOptions are synth's GTiff options on top of geo's defaults
// (tiled, DEFLATE): DEFLATE level 1 costs a quarter of the default level's
// time on noisy spectra for a file 1.5% larger (measured on a 610x340x103
// Int16 scene: 35.2 MB vs 34.7 MB).
var SceneCreationOptions = []string{"ZLEVEL=1"}

// mergeCreationOptions returns base with over's KEY=VALUE entries replacing
// base's entries of the same key.
func mergeCreationOptions(base, over []string) []string {
	key := func(kv string) string { k, _, _ := strings.Cut(kv, "="); return strings.ToUpper(strings.TrimSpace(k)) }
	seen := map[string]bool{}
	for _, kv := range over {
		seen[key(kv)] = true
	}
	var out []string
	for _, kv := range base {
		if !seen[key(kv)] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}

// Describe returns metadata recording how the scene was made.
func (g *Generator) Describe(sourceName string) map[string]string {
	md := map[string]string{
		"PNEC_SYNTH_SOURCE":          sourceName,
		"PNEC_SYNTH_SEED":            strconv.FormatUint(g.cfg.Seed, 10),
		"PNEC_SYNTH_NOISE_REL":       strconv.FormatFloat(g.cfg.NoiseRel, 'g', -1, 64),
		"PNEC_SYNTH_MIXING_SIGMA_PX": strconv.FormatFloat(g.cfg.MixingSigmaPx, 'g', -1, 64),
	}
	for i, c := range g.classes {
		key := fmt.Sprintf("PNEC_SYNTH_CLASS_%02d", i+1)
		if c.Region > 0 {
			md[key] = fmt.Sprintf("background region %d (label 0): %s", c.Region, c.Origin)
		} else {
			md[key] = fmt.Sprintf("label %d: %s", c.Label, c.Origin)
		}
	}
	return md
}

// stripRows is how many rows a strip holds: a multiple of the 256-row
// GeoTIFF tiles when memory allows.
func stripRows(cols, bands int, maxBytes int64) int {
	if maxBytes <= 0 {
		maxBytes = 256 << 20
	}
	// Two strip buffers are alive at once (one generated, one written).
	per := int64(cols) * int64(bands) * 4 * 2
	n := int(maxBytes / per)
	return max(1, min(256, n))
}

// WriteScene generates the whole scene and writes it (and its labels) as
// GeoTIFFs, generating the next strip while the previous one is written.
func WriteScene(ctx context.Context, g *Generator, opt WriteOptions) error {
	l := g.layout
	nb := g.bands
	spec := geo.RasterSpec{
		Cols: l.Cols, Rows: l.Rows, Bands: nb, DataType: opt.DataType, GeoRef: opt.GeoRef,
		Metadata: opt.Metadata, CreationOptions: mergeCreationOptions(SceneCreationOptions, opt.CreationOptions),
	}
	w, err := geo.CreateGeoTIFF(opt.Path, spec)
	if err != nil {
		return err
	}
	defer w.Close()
	sr := stripRows(l.Cols, nb, opt.MaxMemoryBytes)
	type strip struct {
		row0, n int
		buf     []float32
		err     error
	}
	free := make(chan []float32, 2)
	free <- make([]float32, sr*l.Cols*nb)
	free <- make([]float32, sr*l.Cols*nb)
	ready := make(chan strip, 1)
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(ready)
		for r := 0; r < l.Rows; r += sr {
			var buf []float32
			select {
			case buf = <-free:
			case <-gctx.Done():
				return
			}
			n := min(sr, l.Rows-r)
			buf = buf[:n*l.Cols*nb]
			err := g.generateParallel(gctx, r, n, buf)
			select {
			case ready <- strip{r, n, buf, err}:
			case <-gctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for s := range ready {
		if s.err != nil {
			return fmt.Errorf("generate %s rows %d..%d: %w", opt.Path, s.row0, s.row0+s.n, s.err)
		}
		if err := w.WriteWindow(geo.Window{Row: s.row0, Cols: l.Cols, Rows: s.n}, s.buf); err != nil {
			return err
		}
		free <- s.buf[:cap(s.buf)]
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if opt.LabelsPath != "" {
		if err := WriteLabels(l, opt.LabelsPath, opt.GeoRef); err != nil {
			return err
		}
	}
	return w.Commit()
}

// WriteLabels writes a layout as a Byte GeoTIFF (0 = unlabelled), naming
// classes in band metadata when the layout names them.
func WriteLabels(l *Layout, path string, ref geo.GeoRef) error {
	md := map[string]string{"PNEC_LABELS": "class values; 0 = unlabelled"}
	for _, v := range sortedKeys(l.Names) {
		md[fmt.Sprintf("PNEC_CLASS_%d", v)] = l.Names[v]
	}
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{
		Cols: l.Cols, Rows: l.Rows, Bands: 1, DataType: geo.Byte, GeoRef: ref, Metadata: md,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	const rows = 256
	buf := make([]float32, 0, rows*l.Cols)
	for r := 0; r < l.Rows; r += rows {
		n := min(rows, l.Rows-r)
		buf = buf[:n*l.Cols]
		for i, v := range l.Labels[r*l.Cols : (r+n)*l.Cols] {
			buf[i] = float32(v)
		}
		if err := w.WriteWindow(geo.Window{Row: r, Cols: l.Cols, Rows: n}, buf); err != nil {
			return err
		}
	}
	return w.Commit()
}

// VRTPaths are the files WriteVRT makes besides the VRT itself.
type VRTPaths struct {
	Block, RowVRT             string
	LabelsBlock, LabelsRowVRT string
}

// vrtPaths derives the helper file names from the VRT path.
func vrtPaths(vrt, labels string) VRTPaths {
	strip := func(p string) string { return strings.TrimSuffix(p, filepath.Ext(p)) }
	p := VRTPaths{Block: strip(vrt) + ".block.tif", RowVRT: strip(vrt) + ".row.vrt"}
	if labels != "" {
		p.LabelsBlock, p.LabelsRowVRT = strip(labels)+".block.tif", strip(labels)+".row.vrt"
	}
	return p
}

// WriteVRT writes the generated scene as a block GeoTIFF and a VRT of
// rows x cols pixels that repeats the block: a row VRT repeats it across,
// and the VRT repeats the row VRT down, so the XML grows with
// (rows/blockRows + cols/blockCols) sources per band, not with their
// product. With opt.LabelsPath it does the same for the labels. The block
// repeats exactly, so its edges are seams where classes meet along straight
// lines; a block of a few hundred pixels or more keeps them rare.
func WriteVRT(ctx context.Context, g *Generator, opt WriteOptions, rows, cols int) (VRTPaths, error) {
	if rows <= 0 || cols <= 0 {
		return VRTPaths{}, fmt.Errorf("%w: VRT size %dx%d", ErrLayout, rows, cols)
	}
	if err := CheckVRTSize(rows, cols, g.layout.Rows, g.layout.Cols, g.bands); err != nil {
		return VRTPaths{}, err
	}
	p := vrtPaths(opt.Path, opt.LabelsPath)
	blockOpt := opt
	blockOpt.Path, blockOpt.LabelsPath = p.Block, p.LabelsBlock
	if err := WriteScene(ctx, g, blockOpt); err != nil {
		return p, err
	}
	bs, err := geo.Open(p.Block)
	if err != nil {
		return p, err
	}
	info := bs.Info()
	if err := bs.Close(); err != nil {
		return p, err
	}
	if err := writeTiledVRT(opt.Path, p.RowVRT, p.Block, info, rows, cols, 256); err != nil {
		return p, err
	}
	if opt.LabelsPath != "" {
		ls, err := geo.Open(p.LabelsBlock)
		if err != nil {
			return p, err
		}
		linfo := ls.Info()
		if err := ls.Close(); err != nil {
			return p, err
		}
		if err := writeTiledVRT(opt.LabelsPath, p.LabelsRowVRT, p.LabelsBlock, linfo, rows, cols, 256); err != nil {
			return p, err
		}
	}
	return p, nil
}

// MaxVRTBytes is the largest VRT text WriteVRT writes (its two files
// together). The text is built in memory, and GDAL parses it whole each time
// the scene is opened; a mosaic this large would take longer to open than to
// read.
const MaxVRTBytes = 256 << 20

// vrtSourceBytes is the length of one SimpleSource element of writeTiledVRT
// with short file names (measured: 336 characters a source in a
// 200000x200000 VRT of a 64x64 block, 16 bands), rounded up.
const vrtSourceBytes = 420

// ErrTooLarge is returned (wrapped in a *SizeError) when a VRT would not be
// usable: larger than GDAL's raster size limit or MaxVRTBytes of text.
var ErrTooLarge = errors.New("too large")

// SizeError says why a VRT of Rows x Cols is refused.
type SizeError struct {
	Rows, Cols int
	// TextBytes is the estimated text size (0 when the size itself is refused).
	TextBytes int64
	Why       string
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("VRT %dx%d: %s", e.Rows, e.Cols, e.Why)
}

func (e *SizeError) Unwrap() error { return ErrTooLarge }

// CheckVRTSize refuses a rows x cols VRT of a blockRows x blockCols block
// with bands bands before anything is generated: GDAL's raster sizes are
// 32-bit, and the text (one source element per block column of the row VRT
// and per block row of the main VRT, in each band) must stay under
// MaxVRTBytes.
func CheckVRTSize(rows, cols, blockRows, blockCols, bands int) error {
	if rows > math.MaxInt32 || cols > math.MaxInt32 {
		return &SizeError{Rows: rows, Cols: cols, Why: fmt.Sprintf("GDAL rasters are at most %d pixels a side", math.MaxInt32)}
	}
	sources := int64(bands) * (ceilDiv(int64(cols), int64(max(blockCols, 1))) + ceilDiv(int64(rows), int64(max(blockRows, 1))))
	if text := sources * vrtSourceBytes; text > MaxVRTBytes {
		return &SizeError{Rows: rows, Cols: cols, TextBytes: text,
			Why: fmt.Sprintf("%d sources of a %dx%d block in %d bands make about %.1f GB of VRT text, more than the %d MiB limit",
				sources, blockRows, blockCols, bands, float64(text)/1e9, MaxVRTBytes>>20)}
	}
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// writeTiledVRT writes rowVRT (block repeated across to cols) and vrt
// (rowVRT repeated down to rows).
func writeTiledVRT(vrt, rowVRT, block string, in geo.Info, rows, cols, tilePx int) error {
	br, bc := in.Rows, in.Cols
	gt := in.GeoTransform
	if gt == ([6]float64{}) {
		gt = [6]float64{0, 1, 0, 0, 0, 1}
	}
	srs := in.WKT
	if srs == "" && in.EPSG != 0 {
		srs = fmt.Sprintf("EPSG:%d", in.EPSG)
	}
	var rowX, mainX strings.Builder
	head := func(b *strings.Builder, w, h int) {
		fmt.Fprintf(b, "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n", w, h)
		if srs != "" {
			fmt.Fprintf(b, "  <SRS dataAxisToSRSAxisMapping=\"1,2\">%s</SRS>\n", xmlEscape(srs))
		}
		fmt.Fprintf(b, "  <GeoTransform>%s</GeoTransform>\n", joinFloats(gt[:]))
		b.WriteString("  <Metadata>\n")
		fmt.Fprintf(b, "    <MDI key=\"PNEC_SYNTH_TILED_FROM\">%s</MDI>\n", xmlEscape(filepath.Base(block)))
		for _, k := range sortedStrings(in.Metadata) {
			fmt.Fprintf(b, "    <MDI key=\"%s\">%s</MDI>\n", xmlEscape(k), xmlEscape(in.Metadata[k]))
		}
		b.WriteString("  </Metadata>\n")
	}
	head(&rowX, cols, br)
	head(&mainX, cols, rows)
	dt := in.DataType
	for b := 1; b <= in.Bands; b++ {
		fmt.Fprintf(&rowX, "  <VRTRasterBand dataType=\"%s\" band=\"%d\">\n", dt, b)
		fmt.Fprintf(&mainX, "  <VRTRasterBand dataType=\"%s\" band=\"%d\">\n", dt, b)
		if b-1 < len(in.HasNoData) && in.HasNoData[b-1] {
			nd := strconv.FormatFloat(in.NoData[b-1], 'g', -1, 64)
			fmt.Fprintf(&rowX, "    <NoDataValue>%s</NoDataValue>\n", nd)
			fmt.Fprintf(&mainX, "    <NoDataValue>%s</NoDataValue>\n", nd)
		}
		for x := 0; x < cols; x += bc {
			w := min(bc, cols-x)
			fmt.Fprintf(&rowX, "    <SimpleSource><SourceFilename relativeToVRT=\"1\">%s</SourceFilename><SourceBand>%d</SourceBand>"+
				"<SourceProperties RasterXSize=\"%d\" RasterYSize=\"%d\" DataType=\"%s\" BlockXSize=\"%d\" BlockYSize=\"%d\"/>"+
				"<SrcRect xOff=\"0\" yOff=\"0\" xSize=\"%d\" ySize=\"%d\"/><DstRect xOff=\"%d\" yOff=\"0\" xSize=\"%d\" ySize=\"%d\"/></SimpleSource>\n",
				xmlEscape(filepath.Base(block)), b, bc, br, dt, min(tilePx, bc), min(tilePx, br), w, br, x, w, br)
		}
		for y := 0; y < rows; y += br {
			h := min(br, rows-y)
			fmt.Fprintf(&mainX, "    <SimpleSource><SourceFilename relativeToVRT=\"1\">%s</SourceFilename><SourceBand>%d</SourceBand>"+
				"<SourceProperties RasterXSize=\"%d\" RasterYSize=\"%d\" DataType=\"%s\" BlockXSize=\"128\" BlockYSize=\"128\"/>"+
				"<SrcRect xOff=\"0\" yOff=\"0\" xSize=\"%d\" ySize=\"%d\"/><DstRect xOff=\"0\" yOff=\"%d\" xSize=\"%d\" ySize=\"%d\"/></SimpleSource>\n",
				xmlEscape(filepath.Base(rowVRT)), b, cols, br, dt, cols, h, y, cols, h)
		}
		rowX.WriteString("  </VRTRasterBand>\n")
		mainX.WriteString("  </VRTRasterBand>\n")
	}
	rowX.WriteString("</VRTDataset>\n")
	mainX.WriteString("</VRTDataset>\n")
	if filepath.Dir(rowVRT) != filepath.Dir(vrt) || filepath.Dir(block) != filepath.Dir(vrt) {
		return fmt.Errorf("VRT %s: helper files must sit beside it", vrt)
	}
	for _, f := range []struct{ path, text string }{{rowVRT, rowX.String()}, {vrt, mainX.String()}} {
		if err := tempfiles.WriteFile(f.path, []byte(f.text), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return nil
}

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'g', 17, 64)
	}
	return strings.Join(s, ", ")
}

func sortedStrings(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&quot;").Replace(s)
}
