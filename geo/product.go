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
	// ProductBlockSize is the COG's internal tile size in pixels.
	ProductBlockSize = 512
	// ReliabilityNoDataByte is the nodata value of a Byte (percent) reliability band.
	ReliabilityNoDataByte = 255
	// ClassNoData is the class band value meaning no data / unclassified.
	ClassNoData = 0
	// MetadataDomain is the GDAL metadata domain of pnec's product metadata.
	MetadataDomain = "PNEC"
)

// Keys pnec writes in the PNEC metadata domain when the caller did not.
const (
	MetaCreated = "CREATED"      // creation time, UTC RFC 3339
	MetaClasses = "CLASSES"      // JSON [{"value":1,"name":"Asphalt","color":"#808080"}, ...]
	MetaGDAL    = "GDAL_VERSION" // GDAL library that wrote the product
)

// ProductWriter streams rows of a product to a temporary raster and finishes it as a COG.
type ProductWriter struct {
	path    string
	spec    ProductSpec
	dtype   godal.DataType // of both bands: a TIFF holds one sample type
	stage   string         // tiled GTiff the rows go to
	ds      *godal.Dataset // open on stage until Commit
	written []bool         // rows written
	isClass []bool         // isClass[v]: v is a class value
	temps   []string       // every temporary path, removed by Close unless committed
	pnecMD  map[string]string
	done    bool
	// remote is the GDAL virtual path (/vsis3/, /vsimem/, ...) a product goes
	// to; path is then a local staging copy in localDir, uploaded on Commit.
	remote   string
	localDir string
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
// percent, nodata 255), UInt16 when the classes need it (reliability in
// percent, nodata 65535), or Float32 with ReliabilityFloat32 (reliability
// 0..1, nodata NaN; the class band then stores the same integers as floats
// and has no colour table, which GeoTIFF allows only for Byte and UInt16).
//
// GeoTIFF also keeps one nodata value per file: the TIFF's is the
// reliability band's, and the class band's nodata 0 is declared in the
// product's .aux.xml sidecar (with the category names and the PNEC
// metadata domain, which GDAL's COG copy does not carry into the TIFF).
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
	for _, c := range spec.Classes {
		if p.isClass[c.Value] {
			return nil, fmt.Errorf("create product %s: class value %d listed twice", path, c.Value)
		}
		p.isClass[c.Value] = true
	}
	p.dtype = classDataType(spec.Classes)
	if spec.ReliabilityFloat32 {
		p.dtype = godal.Float32
	}
	if _, err := mergeOptions(nil, spec.CreationOptions); err != nil {
		return nil, fmt.Errorf("create product %s: %w", path, err)
	}
	var err error
	if p.stage, err = tempBeside(p.path, ".stage.tif"); err != nil {
		p.Close()
		return nil, err
	}
	p.temps = append(p.temps, p.stage, p.stage+auxSuffix)
	// The stage is uncompressed: it is written once and read once, and
	// compression would only cost time.
	p.ds, err = godal.Create(godal.GTiff, p.stage, 2, p.dtype, spec.Cols, spec.Rows,
		godal.CreationOption("TILED=YES", "BLOCKXSIZE=512", "BLOCKYSIZE=512", "COMPRESS=NONE", "BIGTIFF=IF_SAFER", "INTERLEAVE=BAND"), errh)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("create product %s: %w", path, err)
	}
	if err := p.describe(); err != nil {
		p.Close()
		return nil, fmt.Errorf("create product %s: %w", path, err)
	}
	return p, nil
}

// sortedClasses returns the classes ordered by value.
func (p *ProductWriter) sortedClasses() []ClassInfo {
	cs := append([]ClassInfo(nil), p.spec.Classes...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Value < cs[j].Value })
	return cs
}

// describe sets georeferencing, nodata, descriptions, colour table and the
// class names that travel inside the TIFF (band metadata CLASS_<value>).
func (p *ProductWriter) describe() error {
	if err := setGeoRef(p.ds, p.spec.GeoRef); err != nil {
		return err
	}
	bands := p.ds.Bands()
	cls, rel := bands[0], bands[1]
	if err := cls.SetDescription("class", errh); err != nil {
		return fmt.Errorf("class band description: %w", err)
	}
	md := map[string]string{}
	for _, c := range p.spec.Classes {
		md[fmt.Sprintf("CLASS_%d", c.Value)] = c.Name
	}
	if err := setMetadata(cls, md, ""); err != nil {
		return fmt.Errorf("class band: %w", err)
	}
	if p.dtype != godal.Float32 {
		ct := godal.ColorTable{PaletteInterp: godal.RGBPalette, Entries: make([][4]int16, len(p.isClass))}
		ct.Entries[0] = [4]int16{0, 0, 0, 0}
		for v := 1; v < len(ct.Entries); v++ {
			ct.Entries[v] = [4]int16{0, 0, 0, 255}
		}
		for _, c := range p.spec.Classes {
			ct.Entries[c.Value] = [4]int16{int16(c.Color[0]), int16(c.Color[1]), int16(c.Color[2]), 255}
		}
		if err := cls.SetColorTable(ct, errh); err != nil {
			return fmt.Errorf("class band colour table: %w", err)
		}
	}
	// Without this GDAL makes the second band of a paletted TIFF an alpha
	// band, which GIS software would use as transparency.
	if err := rel.SetColorInterp(godal.CIUndefined, errh); err != nil {
		return fmt.Errorf("reliability band colour interpretation: %w", err)
	}
	if err := rel.SetDescription("reliability", errh); err != nil {
		return fmt.Errorf("reliability band description: %w", err)
	}
	relND, unit := p.reliabilityNoData(), "percent"
	if p.dtype == godal.Float32 {
		unit = "fraction"
	}
	if err := rel.SetNoData(relND, errh); err != nil {
		return fmt.Errorf("reliability band nodata: %w", err)
	}
	if err := rel.SetMetadata("UNITS", unit, errh); err != nil {
		return fmt.Errorf("reliability band metadata: %w", err)
	}
	return nil
}

// reliabilityNoData is the reliability band's nodata (and the TIFF's).
func (p *ProductWriter) reliabilityNoData() float64 {
	switch p.dtype {
	case godal.Byte:
		return ReliabilityNoDataByte
	case godal.UInt16:
		return math.MaxUint16
	}
	return math.NaN()
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
	switch p.dtype {
	case godal.Byte:
		cb := make([]uint8, len(class))
		rb := make([]uint8, len(class))
		for i, v := range class {
			cb[i] = uint8(v)
			rb[i] = uint8(percent(reliability[i]))
		}
		if err = bands[0].Write(0, row0, cb, cols, n, errh); err == nil {
			err = bands[1].Write(0, row0, rb, cols, n, errh)
		}
	case godal.UInt16:
		rb := make([]uint16, len(class))
		for i := range class {
			if v := percent(reliability[i]); v == ReliabilityNoDataByte {
				rb[i] = math.MaxUint16
			} else {
				rb[i] = uint16(v)
			}
		}
		if err = bands[0].Write(0, row0, class, cols, n, errh); err == nil {
			err = bands[1].Write(0, row0, rb, cols, n, errh)
		}
	default:
		cb := make([]float32, len(class))
		rb := make([]float32, len(class))
		for i, v := range class {
			cb[i] = float32(v)
			r := reliability[i]
			switch {
			case math.IsNaN(float64(r)) || math.IsInf(float64(r), 0):
				r = float32(math.NaN())
			case r < 0:
				r = 0
			case r > 1:
				r = 1
			}
			rb[i] = r
		}
		if err = bands[0].Write(0, row0, cb, cols, n, errh); err == nil {
			err = bands[1].Write(0, row0, rb, cols, n, errh)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s rows %d..%d: %w", p.path, row0, row0+n-1, err)
	}
	for r := row0; r < row0+n; r++ {
		p.written[r] = true
	}
	return nil
}

// percent maps a reliability in 0..1 to a rounded percent 0..100, NaN/Inf to nodata 255.
func percent(r float32) int {
	if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
		return ReliabilityNoDataByte
	}
	return int(math.Round(float64(min(max(r, 0), 1)) * 100))
}

// overviewLevels returns the decimation factors 2, 4, ... that the COG
// driver would build: halve until the image fits in one tile.
func overviewLevels(cols, rows int) []int {
	var lv []int
	f := 1
	for cols > ProductBlockSize || rows > ProductBlockSize {
		f *= 2
		lv = append(lv, f)
		cols, rows = (cols+1)/2, (rows+1)/2
	}
	return lv
}

// cogCompression is ZSTD when this GDAL's COG driver offers it, else DEFLATE.
func cogCompression() string {
	if drv, ok := godal.RasterDriver("COG"); ok {
		if strings.Contains(drv.Metadata("DMD_CREATIONOPTIONLIST"), "<Value>ZSTD</Value>") {
			return "ZSTD"
		}
	}
	return "DEFLATE"
}

// cogOptions are the COG creation options: defaults, then the caller's.
func (p *ProductWriter) cogOptions() ([]string, error) {
	comp := cogCompression()
	for _, kv := range p.spec.CreationOptions {
		if k, v, _ := strings.Cut(kv, "="); strings.EqualFold(strings.TrimSpace(k), "COMPRESS") {
			comp = v
		}
	}
	base := []string{
		"BLOCKSIZE=" + strconv.Itoa(ProductBlockSize),
		"COMPRESS=" + comp,
		"OVERVIEW_COMPRESS=" + comp,
		"OVERVIEWS=FORCE_USE_EXISTING",
		"BIGTIFF=IF_SAFER",
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

// Commit builds overviews (MODE for the class band, AVERAGE for
// reliability), writes the COG to a temporary file beside the target with
// its .aux.xml sidecar (category names) and renames both into place. Every
// row must have been written. On failure nothing changes at path.
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

func (p *ProductWriter) commit(ctx context.Context) error {
	for r, ok := range p.written {
		if !ok {
			return fmt.Errorf("product incomplete: row %d was never written", r)
		}
	}
	md, err := p.pnecMetadata()
	if err != nil {
		return err
	}
	p.pnecMD = md
	// GDAL's COG copy keeps only the default metadata domain inside the
	// TIFF: a PNEC_-prefixed copy there keeps a lone .tif self-describing.
	prefixed := make(map[string]string, len(md))
	for k, v := range md {
		prefixed["PNEC_"+k] = v
	}
	if err := setMetadata(p.ds, prefixed, ""); err != nil {
		return err
	}
	err = p.ds.Close(errh)
	p.ds = nil
	if err != nil {
		return fmt.Errorf("flush %s: %w", p.stage, tidy(err))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if lv := overviewLevels(p.spec.Cols, p.spec.Rows); len(lv) > 0 {
		if err := p.buildOverviews(ctx, lv); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	opts, err := p.cogOptions()
	if err != nil {
		return err
	}
	cog, err := tempBeside(p.path, ".tmp.tif")
	if err != nil {
		return err
	}
	p.temps = append(p.temps, cog, cog+auxSuffix)
	src, err := godal.Open(p.stage, godal.RasterOnly(), godal.SiblingFiles(), errh)
	if err != nil {
		return fmt.Errorf("reopen %s: %w", p.stage, err)
	}
	out, err := src.Translate(cog, []string{"-of", "COG"}, godal.CreationOption(opts...), errh)
	if err == nil {
		err = out.Close(errh)
	}
	src.Close(errh)
	if err != nil {
		return fmt.Errorf("write COG %s: %w", cog, tidy(err))
	}
	if p.dtype != godal.Float32 {
		if err := unmarkAlpha(cog); err != nil {
			return fmt.Errorf("unmark alpha in %s: %w", cog, err)
		}
	}
	if err := p.writeSidecar(cog + auxSuffix); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := publish(cog, p.path); err != nil {
		return err
	}
	removeIfExists(p.stage, p.stage+auxSuffix)
	if p.remote != "" {
		// The sidecar goes first: the product file's arrival is what readers
		// (and pnec batch) take as "complete".
		if err := vsiUpload(p.path+auxSuffix, p.remote+auxSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := vsiUpload(p.path, p.remote); err != nil {
			return err
		}
		os.RemoveAll(p.localDir)
		tempfiles.Forget(p.localDir)
	}
	return nil
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
		err = p.averageOverviews(ds.Bands()[1], levels)
	}
	if cerr := ds.Close(errh); err == nil && cerr != nil {
		err = fmt.Errorf("flush overviews: %w", cerr)
	}
	return err
}

// averageOverviews writes every overview level of band (decimation factors
// levels, ascending powers of two) as the mean of the valid full-resolution
// pixels of each f x f block (partial blocks at the right and bottom edges).
// GDAL's AVERAGE computes a level from the next finer, rounded one, which
// drifts from the mean where nodata is uneven; one pass over the band in
// strips of the largest factor's rows gives exact means for all levels.
func (p *ProductWriter) averageOverviews(band godal.Band, levels []int) error {
	ovs := band.Overviews()
	if len(ovs) != len(levels) {
		return fmt.Errorf("reliability band has %d overview levels, want %d", len(ovs), len(levels))
	}
	cols, rows := p.spec.Cols, p.spec.Rows
	nd := p.reliabilityNoData()
	isFloat := p.dtype == godal.Float32
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

// writeSidecar writes GDAL's PAM sidecar of the product: the class band's
// nodata 0 (the TIFF holds one nodata, the reliability band's), its
// category names (index = class value; GTiff keeps those only in PAM) and
// the PNEC metadata domain.
func (p *ProductWriter) writeSidecar(path string) error {
	if _, err := os.Stat(path); err == nil {
		// GDAL wrote a sidecar of its own for the COG; pnec's would replace it.
		return fmt.Errorf("unexpected sidecar %s written by GDAL", path)
	}
	names := make([]string, len(p.isClass))
	names[0] = "no data"
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
		Bands:    []pamBand{{Band: 1, NoData: strconv.Itoa(ClassNoData), Categories: names}},
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
