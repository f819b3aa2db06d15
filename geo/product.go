package geo

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airbusgeo/godal"

	"github.com/pnec/pnec/internal/tempfiles"
)

// Product layout constants.
const (
	// ProductBlockSize is the COG's default internal tile size in pixels
	// (--co BLOCKSIZE=N changes it).
	ProductBlockSize = 512
	// ReliabilityNoDataByte is the no-data value of a Byte product: both
	// bands (class and reliability in percent) share it inside the TIFF.
	ReliabilityNoDataByte = 255
	// NoDataUInt16 is the shared no-data value of a UInt16 product.
	NoDataUInt16 = math.MaxUint16
	// ClassNoData is the class value meaning no data / unclassified in the
	// rows given to WriteRows; the product stores it as the file's no-data
	// value (ProductNoData).
	ClassNoData = 0
	// MetadataDomain is the GDAL metadata domain of pnec's product metadata.
	MetadataDomain = "PNEC"
	// ReliabilityUnit is the unit type of the product's reliability band.
	ReliabilityUnit = "percent"
	// ReliabilityFloatUnit is the unit type of the Float32 reliability file (0..1).
	ReliabilityFloatUnit = "1"
)

// ProductNoData is the no-data value a product with these classes stores in
// both bands: 255 for a Byte product, 65535 for a UInt16 one.
func ProductNoData(classes []ClassInfo) int {
	if classDataType(classes) == godal.UInt16 {
		return NoDataUInt16
	}
	return ReliabilityNoDataByte
}

// ReliabilityPath is where a product at path keeps its Float32 reliability
// (ProductSpec.ReliabilityFloat32): KEY.tif -> KEY.reliability.tif.
func ReliabilityPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".reliability.tif"
}

// StylePath is where a product at path keeps its QGIS style: KEY.tif ->
// KEY.qml, the name QGIS loads by default with KEY.tif.
func StylePath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".qml"
}

// Keys pnec writes in the PNEC metadata domain when the caller did not.
const (
	MetaCreated = "CREATED"      // creation time, UTC RFC 3339
	MetaClasses = "CLASSES"      // JSON [{"value":1,"name":"Asphalt","color":"#808080"}, ...]
	MetaGDAL    = "GDAL_VERSION" // GDAL library that wrote the product
)

// ProductWriter streams rows of a product to a temporary raster and finishes it as a COG.
type ProductWriter struct {
	path   string
	spec   ProductSpec
	dtype  godal.DataType // of both bands: a TIFF holds one sample type
	nodata int            // of both bands, inside the TIFF
	block  int            // COG tile size, pixels
	stage  string         // tiled GTiff the rows go to
	ds     *godal.Dataset // open on stage until Commit
	// relStage/relDS: the Float32 reliability file's stage (ReliabilityFloat32).
	relStage string
	relDS    *godal.Dataset
	written  []bool   // rows written
	isClass  []bool   // isClass[v]: v is a class value
	temps    []string // every temporary path, removed by Close unless committed
	pnecMD   map[string]string
	done     bool
	// remote is the GDAL virtual path (/vsis3/, /vsimem/, ...) a product goes
	// to; path is then a local staging copy in localDir, uploaded on Commit.
	remote   string
	localDir string
	stats    statsAcc // of what WriteRows stored

	prob *probFile // the class probabilities companion (ProductSpec.Probabilities)
	// watch sees GDAL failures of worker threads (block compression,
	// overviews) from the start of the commit on, where the product's own
	// worker-thread work is (its stages are uncompressed): any fails the
	// product. Reads of the scene in the same process are judged by their
	// own results, not by this count.
	watch failureWatch
}

// ProductStats describe a product's stored pixels, as a reader of the
// finished file sees them (a pixel either of whose bands holds the no-data
// value is no data): what a STAC Item reports.
type ProductStats struct {
	Rows, Cols        int
	ClassCounts       map[int]int64 // class value -> pixels (0 = no data)
	ValidPixels       int64         // pixels with a class
	RelMin, RelMax    float64       // reliability over valid pixels, in the stored unit (percent)
	RelMean, RelStdev float64
}

// statsAcc gathers ProductStats row by row. The sums are of small integers
// (stored percent), exact in float64 in any order.
type statsAcc struct {
	counts    map[int]int64
	valid     int64
	sum, sum2 float64
	min, max  float64
}

func (a *statsAcc) add(class int, rel int, relValid bool) {
	if a.counts == nil {
		a.counts = map[int]int64{}
		a.min, a.max = math.Inf(1), math.Inf(-1)
	}
	if class == ClassNoData || !relValid {
		a.counts[0]++
		return
	}
	a.counts[class]++
	a.valid++
	r := float64(rel)
	a.sum += r
	a.sum2 += r * r
	a.min, a.max = min(a.min, r), max(a.max, r)
}

// Stats are the statistics of the rows written so far (all of them after
// Commit): the counts and reliability statistics pipelines' STAC Items
// give, without reading the product back.
func (p *ProductWriter) Stats() ProductStats {
	a := p.stats
	st := ProductStats{Rows: p.spec.Rows, Cols: p.spec.Cols, ClassCounts: map[int]int64{}, ValidPixels: a.valid}
	for k, v := range a.counts {
		st.ClassCounts[k] = v
	}
	if a.valid > 0 {
		n := float64(a.valid)
		st.RelMin, st.RelMax = a.min, a.max
		st.RelMean = a.sum / n
		st.RelStdev = math.Sqrt(max(0, a.sum2/n-st.RelMean*st.RelMean))
	}
	return st
}

// classDataType is Byte unless the classes need more (over 254 classes or
// a value over 254: 255 is the Byte reliability nodata, which GeoTIFF
// applies to every band of the file).
func classDataType(classes []ClassInfo) godal.DataType {
	maxV := 0
	for _, c := range classes {
		maxV = max(maxV, c.Value)
	}
	if len(classes) > 254 || maxV > 254 {
		return godal.UInt16
	}
	return godal.Byte
}

// CreateProduct starts a product at path. Both bands share one sample type
// because a GeoTIFF holds one: Byte (class values up to 254, reliability in
// percent) or UInt16 when the classes need it. GeoTIFF also keeps one
// no-data value per file, so both bands share it: 255 (Byte) or 65535
// (UInt16), outside every class value and every percent. Everything a reader
// needs is inside the TIFF (no-data, colour table, class names as band
// metadata CLASS_<value>, reliability unit type, PNEC_* metadata); the
// .aux.xml sidecar only repeats the category names and the PNEC domain.
//
// ReliabilityFloat32 never changes the product: it adds a second COG at
// ReliabilityPath(path), one Float32 band of reliability 0..1 (no-data NaN).
// A QGIS style (paletted class map) is written at StylePath(path).
func CreateProduct(path string, spec ProductSpec) (*ProductWriter, error) {
	register()
	if spec.Cols <= 0 || spec.Rows <= 0 {
		return nil, fmt.Errorf("create product %s: size %dx%d: want positive cols and rows", path, spec.Cols, spec.Rows)
	}
	if len(spec.Classes) == 0 {
		return nil, fmt.Errorf("create product %s: no classes", path)
	}
	maxV := 0
	for _, c := range spec.Classes {
		if c.Value < 1 || c.Value >= math.MaxUint16 {
			return nil, fmt.Errorf("create product %s: class %q has value %d; want 1..65534 (0 is no data)", path, c.Name, c.Value)
		}
		maxV = max(maxV, c.Value)
	}
	p := &ProductWriter{path: path, spec: spec, written: make([]bool, spec.Rows), isClass: make([]bool, maxV+1)}
	for _, c := range spec.Classes {
		if p.isClass[c.Value] {
			return nil, fmt.Errorf("create product %s: class value %d listed twice", path, c.Value)
		}
		p.isClass[c.Value] = true
	}
	p.dtype = classDataType(spec.Classes)
	p.nodata = ProductNoData(spec.Classes)
	if err := validateCOGOptions(spec.CreationOptions); err != nil {
		return nil, fmt.Errorf("create product %s: %w", path, err)
	}
	var err error
	if p.block, err = blockSize(spec.CreationOptions); err != nil {
		return nil, fmt.Errorf("create product %s: %w", path, err)
	}
	// Everything above is checked before the staging directory of a /vsi
	// product exists: a return after it must remove it (p.Close).
	if isVSI(path) {
		// Object stores and other virtual file systems have no rename: the
		// product is made locally and uploaded whole on Commit, so the
		// target only ever holds a complete product.
		dir, err := os.MkdirTemp("", "pnec-product-*")
		if err != nil {
			return nil, fmt.Errorf("create product %s: local staging directory: %w", path, err)
		}
		p.remote, p.localDir, p.path = path, dir, filepath.Join(dir, vsiBase(path))
		if err := tempfiles.Add(dir); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("create product %s: %w", path, err)
		}
	}
	if p.stage, err = tempBeside(p.path, ".stage.tif"); err != nil {
		p.Close()
		return nil, err
	}
	p.temps = append(p.temps, withSidecars(p.stage)...)
	// The stage is uncompressed: it is written once and read once, and
	// compression would only cost time.
	p.ds, err = godal.Create(godal.GTiff, p.stage, 2, p.dtype, spec.Cols, spec.Rows,
		godal.CreationOption("TILED=YES", fmt.Sprintf("BLOCKXSIZE=%d", stageBlock), fmt.Sprintf("BLOCKYSIZE=%d", stageBlock), "COMPRESS=NONE", "BIGTIFF=IF_SAFER", "INTERLEAVE=BAND"), errh)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("create product %s: %w", path, err)
	}
	if err := p.describe(); err != nil {
		p.Close()
		return nil, fmt.Errorf("create product %s: %w", path, err)
	}
	if spec.ReliabilityFloat32 {
		if p.relStage, err = tempBeside(p.path, ".rel.stage.tif"); err != nil {
			p.Close()
			return nil, err
		}
		p.temps = append(p.temps, withSidecars(p.relStage)...)
		p.relDS, err = godal.Create(godal.GTiff, p.relStage, 1, godal.Float32, spec.Cols, spec.Rows,
			godal.CreationOption("TILED=YES", fmt.Sprintf("BLOCKXSIZE=%d", stageBlock), fmt.Sprintf("BLOCKYSIZE=%d", stageBlock), "COMPRESS=NONE", "BIGTIFF=IF_SAFER"), errh)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("create product %s: reliability file: %w", path, err)
		}
		if err := p.describeFloat(); err != nil {
			p.Close()
			return nil, fmt.Errorf("create product %s: reliability file: %w", path, err)
		}
	}
	if spec.Probabilities != nil {
		if err := p.createProbabilities(); err != nil {
			p.Close()
			return nil, fmt.Errorf("create product %s: %w", path, err)
		}
	}
	return p, nil
}

// minBlockSize is the smallest BLOCKSIZE of GDAL's COG driver (its
// creation option list's minimum).
const minBlockSize = 128

// blockSizeWant says what BLOCKSIZE takes.
var blockSizeWant = fmt.Sprintf("want a multiple of 16 of at least %d", minBlockSize)

// blockSize is the COG tile size the creation options ask for (BLOCKSIZE),
// else ProductBlockSize.
func blockSize(opts []string) (int, error) {
	bs := ProductBlockSize
	for _, kv := range opts {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "BLOCKSIZE") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < minBlockSize || n%16 != 0 {
			return 0, fmt.Errorf("creation option %q: %s", kv, blockSizeWant)
		}
		bs = n
	}
	return bs, nil
}

// describeFloat sets georeferencing, description, unit and no-data of the
// Float32 reliability file.
func (p *ProductWriter) describeFloat() error {
	if err := setGeoRef(p.relDS, p.spec.GeoRef); err != nil {
		return err
	}
	b := p.relDS.Bands()[0]
	if err := b.SetDescription("reliability", errh); err != nil {
		return fmt.Errorf("description: %w", err)
	}
	if err := b.SetNoData(math.NaN(), errh); err != nil {
		return fmt.Errorf("nodata: %w", err)
	}
	return nil
}

// sortedClasses returns the classes ordered by value.
func (p *ProductWriter) sortedClasses() []ClassInfo {
	cs := append([]ClassInfo(nil), p.spec.Classes...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Value < cs[j].Value })
	return cs
}

// describe sets georeferencing, the shared no-data value, descriptions,
// colour table, the reliability unit and the class names that travel inside
// the TIFF (band metadata CLASS_<value>, GDAL_METADATA tag).
func (p *ProductWriter) describe() error {
	if err := setGeoRef(p.ds, p.spec.GeoRef); err != nil {
		return err
	}
	bands := p.ds.Bands()
	cls, rel := bands[0], bands[1]
	if err := cls.SetDescription("class", errh); err != nil {
		return fmt.Errorf("class band description: %w", err)
	}
	// A GeoTIFF holds one no-data value for all bands; setting it on each
	// band keeps GDAL's in-memory state consistent with the file.
	for i, b := range bands {
		if err := b.SetNoData(float64(p.nodata), errh); err != nil {
			return fmt.Errorf("band %d nodata: %w", i+1, err)
		}
	}
	md := map[string]string{fmt.Sprintf("CLASS_%d", p.nodata): "no data"}
	for _, c := range p.spec.Classes {
		md[fmt.Sprintf("CLASS_%d", c.Value)] = c.Name
	}
	if err := setMetadata(cls, md, ""); err != nil {
		return fmt.Errorf("class band: %w", err)
	}
	// A TIFF colour map has 2^bits entries and no alpha whatever is set
	// here: GDAL reads the entry of the no-data value back as transparent
	// and every other one opaque. The legend of the classes only is the
	// QGIS style's (StylePath) and the STAC Item's.
	ct := godal.ColorTable{PaletteInterp: godal.RGBPalette, Entries: make([][4]int16, len(p.isClass))}
	for _, c := range p.spec.Classes {
		ct.Entries[c.Value] = [4]int16{int16(c.Color[0]), int16(c.Color[1]), int16(c.Color[2]), 255}
	}
	if err := cls.SetColorTable(ct, errh); err != nil {
		return fmt.Errorf("class band colour table: %w", err)
	}
	// Without this GDAL makes the second band of a paletted TIFF an alpha
	// band, which GIS software would use as transparency.
	if err := rel.SetColorInterp(godal.CIUndefined, errh); err != nil {
		return fmt.Errorf("reliability band colour interpretation: %w", err)
	}
	if err := rel.SetDescription("reliability", errh); err != nil {
		return fmt.Errorf("reliability band description: %w", err)
	}
	return nil
}

// WriteRows writes whole rows from row0: class values (0 = no data) and reliability in 0..1 (NaN = no data).
// A class value that is neither 0 nor one of the product's classes is an error.
func (p *ProductWriter) WriteRows(row0 int, class []uint16, reliability []float32) error {
	if p.ds == nil {
		return fmt.Errorf("write %s: %w", p.path, ErrClosed)
	}
	cols := p.spec.Cols
	if len(class) == 0 || len(class)%cols != 0 || len(reliability) != len(class) {
		return fmt.Errorf("write %s rows from %d: %w: got %d class and %d reliability values, want the same multiple of %d columns",
			p.path, row0, ErrSize, len(class), len(reliability), cols)
	}
	n := len(class) / cols
	if row0 < 0 || row0+n > p.spec.Rows {
		return fmt.Errorf("write %s: %w: rows %d..%d of %d", p.path, ErrWindow, row0, row0+n-1, p.spec.Rows)
	}
	for i, v := range class {
		if v != ClassNoData && (int(v) >= len(p.isClass) || !p.isClass[v]) {
			return fmt.Errorf("write %s: class value %d at row %d col %d is not one of the product's classes", p.path, v, row0+i/cols, i%cols)
		}
	}
	bands := p.ds.Bands()
	var err error
	nd := p.nodata
	switch p.dtype {
	case godal.Byte:
		cb := make([]uint8, len(class))
		rb := make([]uint8, len(class))
		for i, v := range class {
			if v == ClassNoData {
				cb[i] = uint8(nd)
			} else {
				cb[i] = uint8(v)
			}
			rb[i] = uint8(percent(reliability[i], nd))
			p.stats.add(int(v), int(rb[i]), int(rb[i]) != nd && int(cb[i]) != nd)
		}
		if err = bands[0].Write(0, row0, cb, cols, n, errh); err == nil {
			err = bands[1].Write(0, row0, rb, cols, n, errh)
		}
	default:
		cb := make([]uint16, len(class))
		rb := make([]uint16, len(class))
		for i, v := range class {
			if v == ClassNoData {
				cb[i] = uint16(nd)
			} else {
				cb[i] = v
			}
			rb[i] = uint16(percent(reliability[i], nd))
			p.stats.add(int(v), int(rb[i]), int(rb[i]) != nd && int(cb[i]) != nd)
		}
		if err = bands[0].Write(0, row0, cb, cols, n, errh); err == nil {
			err = bands[1].Write(0, row0, rb, cols, n, errh)
		}
	}
	if err == nil && p.relDS != nil {
		rf := make([]float32, len(class))
		for i, r := range reliability {
			switch {
			case math.IsNaN(float64(r)) || math.IsInf(float64(r), 0):
				r = float32(math.NaN())
			case r < 0:
				r = 0
			case r > 1:
				r = 1
			}
			rf[i] = r
		}
		err = p.relDS.Bands()[0].Write(0, row0, rf, cols, n, errh)
	}
	if err != nil {
		return fmt.Errorf("write %s rows %d..%d: %w", p.path, row0, row0+n-1, err)
	}
	for r := row0; r < row0+n; r++ {
		p.written[r] = true
	}
	return nil
}

// percent maps a reliability in 0..1 to a rounded percent 0..100, NaN/Inf to nodata.
func percent(r float32, nodata int) int {
	if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
		return nodata
	}
	return int(math.Round(float64(min(max(r, 0), 1)) * 100))
}

// overviewLevels returns the decimation factors 2, 4, ... that the COG
// driver would build for tiles of block pixels: halve until the image fits
// in one tile.
func overviewLevels(cols, rows, block int) []int {
	var lv []int
	f := 1
	for cols > block || rows > block {
		f *= 2
		lv = append(lv, f)
		cols, rows = (cols+1)/2, (rows+1)/2
	}
	return lv
}

// DefaultCompression is the products' compression: DEFLATE with the
// horizontal predictor, which every GeoTIFF reader decodes (ZSTD, which
// older GDAL builds and browser COG readers cannot, only by --co COMPRESS=ZSTD).
const DefaultCompression = "DEFLATE"

// cogOptions are the COG creation options: defaults, then the caller's.
func (p *ProductWriter) cogOptions() ([]string, error) {
	comp := DefaultCompression
	for _, kv := range p.spec.CreationOptions {
		if k, v, _ := strings.Cut(kv, "="); strings.EqualFold(strings.TrimSpace(k), "COMPRESS") {
			comp = strings.ToUpper(strings.TrimSpace(v))
		}
	}
	base := []string{
		"BLOCKSIZE=" + strconv.Itoa(p.block),
		"COMPRESS=" + comp,
		"OVERVIEW_COMPRESS=" + comp,
		"OVERVIEWS=FORCE_USE_EXISTING",
		"BIGTIFF=IF_SAFER",
	}
	switch comp {
	case "DEFLATE", "ZSTD", "LZW", "LZMA":
		base = append(base, "PREDICTOR=YES")
	}
	return mergeOptions(base, p.spec.CreationOptions)
}

// pnecMetadata is the caller's metadata plus what pnec knows itself.
func (p *ProductWriter) pnecMetadata() (map[string]string, error) {
	md := map[string]string{}
	for k, v := range p.spec.Metadata {
		md[k] = v
	}
	if _, ok := md[MetaCreated]; !ok {
		md[MetaCreated] = time.Now().UTC().Format(time.RFC3339)
	}
	if _, ok := md[MetaGDAL]; !ok {
		md[MetaGDAL] = GDALVersion()
	}
	if _, ok := md[MetaClasses]; !ok {
		type cj struct {
			Value int    `json:"value"`
			Name  string `json:"name"`
			Color string `json:"color"`
		}
		var list []cj
		for _, c := range p.sortedClasses() {
			list = append(list, cj{c.Value, c.Name, fmt.Sprintf("#%02x%02x%02x", c.Color[0], c.Color[1], c.Color[2])})
		}
		b, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		md[MetaClasses] = string(b)
	}
	return md, nil
}

// atCommitPeak, when set (by tests), sees the product's directory when
// Commit has written everything and published nothing: its disk peak.
var atCommitPeak func(dir string)

// AddMetadata adds items to the product's PNEC metadata (ProductSpec.
// Metadata) before Commit: figures known only once every row is written,
// such as the scene's drift. A key given twice takes the later value.
func (p *ProductWriter) AddMetadata(md map[string]string) error {
	if p.ds == nil || p.done {
		return fmt.Errorf("add metadata to %s: %w", p.path, ErrClosed)
	}
	merged := make(map[string]string, len(p.spec.Metadata)+len(md))
	for k, v := range p.spec.Metadata {
		merged[k] = v
	}
	for k, v := range md {
		merged[k] = v
	}
	p.spec.Metadata = merged
	return nil
}

// Commit builds overviews (MODE for the class band, exact means for
// reliability), writes the COG to a temporary file beside the target with
// its .aux.xml sidecar (category names), the QGIS style and, with
// ReliabilityFloat32, the Float32 reliability COG, and renames them into
// place, the product last. Every row must have been written. On failure
// nothing changes at path.
func (p *ProductWriter) Commit(ctx context.Context) error {
	if p.ds == nil {
		return fmt.Errorf("commit %s: %w", p.path, ErrClosed)
	}
	if err := p.commit(ctx); err != nil {
		p.Close()
		return fmt.Errorf("commit %s: %w", p.path, err)
	}
	p.done = true
	return nil
}

// commit is Commit's work: flush the stages, stage the published files
// beside the product, check GDAL's worker threads, publish (the product
// last), tidy the stages, upload a remote product.
func (p *ProductWriter) commit(ctx context.Context) error {
	p.watch = startFailureWatch()
	if err := p.checkComplete(); err != nil {
		return err
	}
	prefixed, err := p.flushStages()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st, err := p.stageFiles(ctx, prefixed)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if atCommitPeak != nil {
		atCommitPeak(filepath.Dir(p.path))
	}
	// A failure GDAL reported on one of its worker threads does not fail
	// the call that started the work: it is checked here, before anything
	// is published.
	if err := p.watch.err(); err != nil {
		return fmt.Errorf("GDAL failed while the product was written: %w", err)
	}
	if err := p.publishFiles(st); err != nil {
		return err
	}
	removeIfExists(append(withSidecars(p.stage), withSidecars(p.relStage)...)...)
	if p.prob != nil {
		removeIfExists(withSidecars(p.prob.stage)...)
	}
	if p.remote != "" {
		return p.upload()
	}
	return nil
}

// checkComplete refuses a product a row of which was never written.
func (p *ProductWriter) checkComplete() error {
	for r, ok := range p.written {
		if !ok {
			return fmt.Errorf("product incomplete: row %d was never written", r)
		}
	}
	return nil
}

// flushStages records pnec's metadata in the stages (the product's and the
// Float32 reliability's), closes them and sets their bands' unit types. It
// returns the metadata as the TIFFs hold it (PNEC_-prefixed), for the
// probabilities file.
func (p *ProductWriter) flushStages() (map[string]string, error) {
	md, err := p.pnecMetadata()
	if err != nil {
		return nil, err
	}
	p.pnecMD = md
	// GDAL's COG copy keeps only the default metadata domain inside the
	// TIFF: a PNEC_-prefixed copy there keeps a lone .tif self-describing.
	prefixed := make(map[string]string, len(md))
	for k, v := range md {
		prefixed["PNEC_"+k] = v
	}
	// The band's unit type (GDAL_METADATA tag), which QGIS and rasterio show.
	if err := flushStage(&p.ds, p.stage, prefixed, []string{"", ReliabilityUnit}); err != nil {
		return nil, err
	}
	if p.relDS != nil {
		if err := flushStage(&p.relDS, p.relStage, prefixed, []string{ReliabilityFloatUnit}); err != nil {
			return nil, err
		}
	}
	return prefixed, nil
}

// flushStage records md in the stage *ds writes to the file stage, closes
// it (leaving *ds nil) and sets its bands' unit types.
func flushStage(ds **godal.Dataset, stage string, md map[string]string, units []string) error {
	if err := setMetadata(*ds, md, ""); err != nil {
		return err
	}
	err := (*ds).Close(errh)
	*ds = nil
	if err != nil {
		return fmt.Errorf("flush %s: %w", stage, tidy(err))
	}
	if err := setUnitTypes(stage, units); err != nil {
		return fmt.Errorf("reliability unit: %w", err)
	}
	return nil
}

// stagedFiles are the temporary files beside the product that commit
// publishes: the product's COG, the Float32 reliability's and the
// probabilities' ("" when not written), the QGIS style.
type stagedFiles struct {
	cog, relCOG, probCOG, style, thumb string
}

// stageFiles builds the overviews and writes the files commit publishes
// to temporaries beside the product (prefixed: the metadata the TIFFs
// hold).
func (p *ProductWriter) stageFiles(ctx context.Context, prefixed map[string]string) (st stagedFiles, err error) {
	lv := overviewLevels(p.spec.Cols, p.spec.Rows, p.block)
	if len(lv) > 0 {
		if err := p.buildOverviews(ctx, lv); err != nil {
			return st, err
		}
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if st.cog, err = p.toCOG(p.stage, ".tmp.tif"); err != nil {
		return st, err
	}
	if err := unmarkAlpha(st.cog); err != nil {
		return st, fmt.Errorf("unmark alpha in %s: %w", st.cog, err)
	}
	if err := p.writeSidecar(st.cog + auxSuffix); err != nil {
		return st, err
	}
	if !p.spec.NoThumbnail {
		if st.thumb, err = p.writeThumbnail(st.cog); err != nil {
			return st, err
		}
	}
	if p.relStage != "" {
		if err := p.floatOverviews(ctx, lv); err != nil {
			return st, err
		}
		if st.relCOG, err = p.toCOG(p.relStage, ".rel.tmp.tif"); err != nil {
			return st, err
		}
	}
	if st.probCOG, err = p.commitProbabilities(ctx, prefixed, lv); err != nil {
		return st, err
	}
	if st.style, err = tempBeside(p.path, ".qml.tmp"); err != nil {
		return st, err
	}
	p.temps = append(p.temps, st.style)
	if err := os.WriteFile(st.style, qgisStyle(p.sortedClasses(), p.nodata), 0o644); err != nil {
		return st, fmt.Errorf("write QGIS style: %w", err)
	}
	return st, nil
}

// publishFiles renames the staged files into place, removing the
// companions of an earlier product this one does not have. The product
// file goes last: its arrival is what readers (and pnec batch) take as
// "complete".
func (p *ProductWriter) publishFiles(st stagedFiles) error {
	if err := publishOrRemove(st.relCOG, ReliabilityPath(p.path)); err != nil {
		return err
	}
	if err := publishOrRemove(st.probCOG, ProbabilitiesPath(p.path)); err != nil {
		return err
	}
	if err := publishOrRemove(st.thumb, ThumbnailPath(p.path)); err != nil {
		return err
	}
	stylePath := StylePath(p.path)
	// Under tempfiles.Publish like every rename: nothing is published once a stop began.
	if err := tempfiles.Publish(func() error { return os.Rename(st.style, stylePath) }); err != nil {
		return fmt.Errorf("rename %s to %s: %w", st.style, stylePath, err)
	}
	tempfiles.Forget(st.style)
	return publish(st.cog, p.path)
}

// publishOrRemove publishes the companion file staged (a temporary) at
// path or, with none staged (""), removes a stale one there and its sidecar.
func publishOrRemove(staged, path string) error {
	if staged != "" {
		return publish(staged, path)
	}
	if err := removeIfExists(path, path+auxSuffix); err != nil {
		return fmt.Errorf("remove stale %s: %w", path, err)
	}
	return nil
}

// upload copies a remote product's files, written locally, to where
// GDAL's virtual file system puts them: the companions first, the product
// file last.
func (p *ProductWriter) upload() error {
	for _, ext := range []string{".reliability.tif", ".probabilities.tif", ".thumbnail.png", ".qml"} {
		local := strings.TrimSuffix(p.path, filepath.Ext(p.path)) + ext
		remote := strings.TrimSuffix(p.remote, filepath.Ext(p.remote)) + ext
		if err := vsiUpload(local, remote); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := vsiUpload(p.path+auxSuffix, p.remote+auxSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := vsiUpload(p.path, p.remote); err != nil {
		return err
	}
	os.RemoveAll(p.localDir)
	tempfiles.Forget(p.localDir)
	return nil
}

// toCOG copies a stage to a COG in a temporary file beside the product (tag
// names it) and returns that file's name.
func (p *ProductWriter) toCOG(stage, tag string, openOpts ...string) (string, error) {
	opts, err := p.cogOptions()
	if err != nil {
		return "", err
	}
	cog, err := tempBeside(p.path, tag)
	if err != nil {
		return "", err
	}
	p.temps = append(p.temps, withSidecars(cog)...)
	src, err := godal.Open(stage, godal.RasterOnly(), godal.SiblingFiles(), godal.DriverOpenOption(openOpts...), errh)
	if err != nil {
		return "", fmt.Errorf("reopen %s: %w", stage, err)
	}
	out, err := src.Translate(cog, []string{"-of", "COG"}, godal.CreationOption(opts...), errh)
	if err == nil {
		err = out.Close(errh)
	}
	src.Close(errh)
	if err != nil {
		return "", fmt.Errorf("write COG %s: %w", cog, tidy(err))
	}
	return cog, nil
}

// buildOverviews gives the stage internal overviews at levels: MODE for
// all bands (GDAL 3.6 cannot mix methods in one GTiff, see TOOLCHAIN.md),
// then the reliability band's levels are replaced by averages that pnec
// computes from the full-resolution band (averageOverviews).
func (p *ProductWriter) buildOverviews(ctx context.Context, levels []int) error {
	ds, err := godal.Open(p.stage, godal.RasterOnly(), godal.Update(), errh)
	if err != nil {
		return fmt.Errorf("reopen %s for update: %w", p.stage, err)
	}
	if err := ds.BuildOverviews(godal.Resampling(godal.Mode), godal.Levels(levels...), errh); err != nil {
		ds.Close(errh)
		return fmt.Errorf("class MODE overviews: %w", err)
	}
	err = ctx.Err()
	if err == nil {
		err = p.averageOverviews(ds.Bands()[1], levels, float64(p.nodata), false)
	}
	if cerr := ds.Close(errh); err == nil && cerr != nil {
		err = fmt.Errorf("flush overviews: %w", cerr)
	}
	return err
}

// floatOverviews gives the Float32 reliability stage its overviews: exact
// means of the valid full-resolution pixels (averageOverviews).
func (p *ProductWriter) floatOverviews(ctx context.Context, levels []int) error {
	if len(levels) == 0 {
		return nil
	}
	ds, err := godal.Open(p.relStage, godal.RasterOnly(), godal.Update(), errh)
	if err != nil {
		return fmt.Errorf("reopen %s for update: %w", p.relStage, err)
	}
	// NEAREST only allocates the levels; averageOverviews then fills them.
	if err := ds.BuildOverviews(godal.Resampling(godal.Nearest), godal.Levels(levels...), errh); err != nil {
		ds.Close(errh)
		return fmt.Errorf("reliability overviews: %w", err)
	}
	err = ctx.Err()
	if err == nil {
		err = p.averageOverviews(ds.Bands()[0], levels, math.NaN(), true)
	}
	if cerr := ds.Close(errh); err == nil && cerr != nil {
		err = fmt.Errorf("flush overviews: %w", cerr)
	}
	return err
}

// averageOverviews writes every overview level of band (decimation factors
// levels, ascending powers of two) as the mean of the valid full-resolution
// pixels of each f x f block (partial blocks at the right and bottom edges),
// rounded unless isFloat; nd is the band's no-data value.
// GDAL's AVERAGE computes a level from the next finer, rounded one, which
// drifts from the mean where nodata is uneven; one pass over the band in
// strips of the largest factor's rows gives exact means for all levels.
func (p *ProductWriter) averageOverviews(band godal.Band, levels []int, nd float64, isFloat bool) error {
	ovs := band.Overviews()
	if len(ovs) != len(levels) {
		return fmt.Errorf("reliability band has %d overview levels, want %d", len(ovs), len(levels))
	}
	cols, rows := p.spec.Cols, p.spec.Rows
	F := levels[len(levels)-1]
	type acc struct {
		ow, oh  int
		sum     []float64
		cnt     []int32
		out     []float32
		written int // overview rows written
	}
	accs := make([]acc, len(levels))
	for i, f := range levels {
		st := ovs[i].Structure()
		ow, oh := (cols+f-1)/f, (rows+f-1)/f
		if st.SizeX != ow || st.SizeY != oh {
			return fmt.Errorf("overview 1/%d is %dx%d, want %dx%d", f, st.SizeX, st.SizeY, ow, oh)
		}
		n := ow * (F / f)
		accs[i] = acc{ow: ow, oh: oh, sum: make([]float64, n), cnt: make([]int32, n), out: make([]float32, n)}
	}
	buf := make([]float32, cols*F)
	for r0 := 0; r0 < rows; r0 += F {
		n := min(F, rows-r0)
		strip := buf[:cols*n]
		if err := band.Read(0, r0, strip, cols, n, errh); err != nil {
			return fmt.Errorf("read reliability rows %d..%d: %w", r0, r0+n-1, err)
		}
		for li, f := range levels {
			a := &accs[li]
			clear(a.sum)
			clear(a.cnt)
			for r := 0; r < n; r++ {
				row := strip[r*cols : (r+1)*cols]
				base := (r / f) * a.ow
				for c, v := range row {
					if math.IsNaN(float64(v)) || (!isFloat && float64(v) == nd) {
						continue
					}
					a.sum[base+c/f] += float64(v)
					a.cnt[base+c/f]++
				}
			}
			orows := (n + f - 1) / f
			for i := 0; i < orows*a.ow; i++ {
				switch {
				case a.cnt[i] == 0:
					a.out[i] = float32(nd)
				case isFloat:
					a.out[i] = float32(a.sum[i] / float64(a.cnt[i]))
				default:
					a.out[i] = float32(math.Round(a.sum[i] / float64(a.cnt[i])))
				}
			}
			if err := ovs[li].Write(0, a.written, a.out[:orows*a.ow], a.ow, orows, errh); err != nil {
				return fmt.Errorf("write reliability overview 1/%d: %w", f, err)
			}
			a.written += orows
		}
	}
	return nil
}

// pamDataset is the part of GDAL's .aux.xml (PAM) format pnec writes.
type pamDataset struct {
	XMLName  xml.Name      `xml:"PAMDataset"`
	Metadata []pamMetadata `xml:"Metadata"`
	Bands    []pamBand     `xml:"PAMRasterBand"`
}

type pamMetadata struct {
	Domain string   `xml:"domain,attr,omitempty"`
	Items  []pamMDI `xml:"MDI"`
}

type pamMDI struct {
	Key   string `xml:"key,attr"`
	Value string `xml:",chardata"`
}

type pamBand struct {
	Band       int      `xml:"band,attr"`
	NoData     string   `xml:"NoDataValue,omitempty"`
	Categories []string `xml:"CategoryNames>Category"`
}

// writeSidecar writes GDAL's PAM sidecar of the product. It only repeats
// what the TIFF holds: the class band's category names (index = class
// value; GTiff keeps categories only in PAM, the TIFF has them as band
// metadata CLASS_<value>) and the PNEC metadata domain (PNEC_* inside).
func (p *ProductWriter) writeSidecar(path string) error {
	if _, err := os.Stat(path); err == nil {
		// GDAL wrote a sidecar of its own for the COG; pnec's would replace it.
		return fmt.Errorf("unexpected sidecar %s written by GDAL", path)
	}
	names := make([]string, len(p.isClass))
	for _, c := range p.spec.Classes {
		names[c.Value] = c.Name
	}
	keys := make([]string, 0, len(p.pnecMD))
	for k := range p.pnecMD {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	md := pamMetadata{Domain: MetadataDomain}
	for _, k := range keys {
		md.Items = append(md.Items, pamMDI{Key: k, Value: p.pnecMD[k]})
	}
	doc := pamDataset{
		Metadata: []pamMetadata{md},
		Bands:    []pamBand{{Band: 1, Categories: names}},
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write sidecar: %w", err)
	}
	return nil
}

// Close removes temporary files unless Commit succeeded. It is safe to call
// after Commit and more than once.
func (p *ProductWriter) Close() error {
	if p.done {
		return nil
	}
	var errs []error
	if p.ds != nil {
		errs = append(errs, p.ds.Close(errh))
		p.ds = nil
	}
	if p.relDS != nil {
		errs = append(errs, p.relDS.Close(errh))
		p.relDS = nil
	}
	errs = append(errs, p.closeProbabilities())
	errs = append(errs, removeIfExists(p.temps...))
	p.temps = nil
	if p.localDir != "" {
		errs = append(errs, os.RemoveAll(p.localDir))
		tempfiles.Forget(p.localDir)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", p.path, err)
	}
	return nil
}
