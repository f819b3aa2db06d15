package geo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/airbusgeo/godal"

	"github.com/pnec/pnec/internal/buffers"
	"github.com/pnec/pnec/internal/transpose"
	"github.com/pnec/pnec/spectral"
)

// GDAL mask flags (gdal.h).
const (
	gmfAllValid   = 0x01
	gmfPerDataset = 0x02
	gmfNoData     = 0x08
)

// Scene is an open raster scene. One Scene must not be used from several goroutines at once.
type Scene struct {
	name  string
	ds    *godal.Dataset
	bands []godal.Band
	info  Info
	// cube, when set, reads the pixels instead of ds (products GDAL 3.6
	// cannot read as a raster: see delivery.go); bands is then nil.
	cube cubeReader

	scale, offset []float32
	nodata        []float32 // per band, as the float32 the band's samples convert to
	hasNoData     []bool
	// nodataAll: a pixel is nodata only when every band read holds its
	// nodata value (a product whose fill value, 0 DN, is also a valid
	// sample), not when any one does.
	nodataAll bool
	// datasetMask is set when the dataset has one mask for all bands (internal
	// mask, .msk, alpha); bandMask lists bands with their own mask otherwise.
	datasetMask bool
	bandMask    []int
	// all reads every band unchanged; cur is what reads read now (all,
	// or SetBandPlan's); good is all without the bands the scene declares
	// bad, for the valid fraction when no plan is set.
	all, cur, good readSpec
	qualityMasks   []qualityMaskSource // added quality masks (AddQualityMask): non-zero = invalid
	// productQualityMasks are the quality masks the product delivers
	// (UseProductQualityMasks); usedQualityMasks names those applied.
	productQualityMasks []productQualityMask
	usedQualityMasks    string

	scratch      []float32 // band-sequential read buffers of readPixels, reused
	scratchI16   []int16
	scratchU16   []uint16
	scratchU8    []uint8
	pixScratch   []float32 // read bands of a strip before a plan makes the output bands
	validScratch []bool
}

// readSpec is what a read reads: which bands, how their samples become
// values, and how a pixel's values become the values a read returns.
type readSpec struct {
	bands              []int // 0-based bands read, in this order
	scale, offset      []float32
	identityScale      bool
	nodata             []float32
	hasNoData          []bool
	bandMask           []int // positions in bands of bands with their own mask
	allIntegerNoNoData bool  // integer bands, no nodata, no mask: every pixel is valid
	native             godal.DataType
	plan               *spectral.Plan   // nil: the read values are returned as they are
	apply              spectral.Applier // plan compiled
	out                int              // values per returned pixel
}

// transforms reports whether the returned values differ from the read ones.
func (r *readSpec) transforms() bool {
	return r.plan != nil && (r.plan.Weights != nil || (r.plan.Gain != 0 && r.plan.Gain != 1))
}

// spec builds the readSpec of the 0-based bands, returned through plan (nil: as read).
func (s *Scene) spec(bands []int, plan *spectral.Plan) readSpec {
	r := readSpec{bands: bands, plan: plan, out: len(bands), identityScale: true, allIntegerNoNoData: true,
		scale: make([]float32, len(bands)), offset: make([]float32, len(bands)),
		nodata: make([]float32, len(bands)), hasNoData: make([]bool, len(bands))}
	if plan != nil {
		r.out = plan.Out
		r.apply = plan.Compile()
	}
	for k, b := range bands {
		r.scale[k], r.offset[k] = s.scale[b], s.offset[b]
		r.nodata[k], r.hasNoData[k] = s.nodata[b], s.hasNoData[b]
		if r.scale[k] != 1 || r.offset[k] != 0 {
			r.identityScale = false
		}
		if r.hasNoData[k] {
			r.allIntegerNoNoData = false
		}
		if slices.Contains(s.bandMask, b) {
			r.bandMask = append(r.bandMask, k)
		}
	}
	if s.datasetMask || len(r.bandMask) > 0 || len(s.qualityMasks) > 0 || s.cube != nil {
		r.allIntegerNoNoData = false
	}
	r.native = godal.Unknown
	if s.cube == nil && len(bands) > 0 {
		r.native = s.bands[bands[0]].Structure().DataType
		for _, b := range bands {
			t := s.bands[b].Structure().DataType
			if t == godal.Float32 || t == godal.Float64 {
				r.allIntegerNoNoData = false
			}
			if t != r.native || (t != godal.Byte && t != godal.Int16 && t != godal.UInt16) {
				r.native = godal.Unknown
			}
		}
	}
	return r
}

// allBands is 0, 1, ..., n-1.
func allBands(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// setSpecs makes the default read specs after the bands' properties are known.
func (s *Scene) setSpecs() {
	s.all = s.spec(allBands(len(s.scale)), nil)
	s.cur = s.all
	good := s.info.BandSet().Good()
	if len(good) == len(s.scale) || len(good) == 0 {
		s.good = s.all
	} else {
		s.good = s.spec(good, nil)
	}
}

// SetBandPlan makes every later read return the bands plan makes of the
// scene's (a selection, a resampling matrix, a gain: spectral.Match):
// only the bands plan.Read are read, only they decide whether a pixel is
// valid (so bands left out, such as bad bands, never invalidate one), and
// a Block then has plan.Out values per pixel. A nil plan restores reading
// every band unchanged.
func (s *Scene) SetBandPlan(plan *spectral.Plan) error {
	if plan == nil {
		s.cur = s.all
		return nil
	}
	n := len(s.scale)
	if len(plan.Read) == 0 || plan.Out <= 0 {
		return fmt.Errorf("%s: empty band plan", s.name)
	}
	for _, b := range plan.Read {
		if b < 0 || b >= n {
			return fmt.Errorf("%s: band plan reads band %d of %d", s.name, b+1, n)
		}
	}
	if plan.Weights != nil && len(plan.Weights) != plan.Out*len(plan.Read) {
		return fmt.Errorf("%s: band plan has %d weights for %d x %d bands", s.name, len(plan.Weights), plan.Out, len(plan.Read))
	}
	if plan.Weights == nil && plan.Out != len(plan.Read) {
		return fmt.Errorf("%s: band plan selects %d bands for %d", s.name, len(plan.Read), plan.Out)
	}
	p := *plan
	s.cur = s.spec(slices.Clone(p.Read), &p)
	return nil
}

// Bands is the number of values per pixel a read returns: the scene's
// bands, or the band plan's (SetBandPlan).
func (s *Scene) Bands() int { return s.cur.out }

// Open opens a scene by GDAL dataset name (a path, VRT, /vsi path,
// subdataset name), or a product as its provider delivers it (a folder, a
// ZIP, a NetCDF or HDF5 file, a raster with sidecars) that a registered
// sensor's reader recognises (package sensors, through ProductHooks).
// Every band must have a real (not complex) data type.
func Open(name string) (*Scene, error) {
	register()
	defer onQuietThread()()
	if err := CheckOpenable(name); err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	if s, ok, err := openProduct(name); ok {
		return s, err
	}
	return openGDAL(name, name)
}

// vrtSourceTags open the source elements of a VRT band.
var vrtSourceTags = [][]byte{[]byte("<SimpleSource"), []byte("<ComplexSource"), []byte("<AveragedSource"),
	[]byte("<KernelFilteredSource"), []byte("<NoDataFromMaskSource")}

// countVRTSources counts the source elements of a VRT given as inline XML
// or as a local file (Info.VRTSources); 0 when it cannot read the text
// (a /vsi path): GDAL then holds sources the plan does not see.
func countVRTSources(name string) int {
	var text []byte
	if t := strings.TrimSpace(name); strings.HasPrefix(t, "<VRTDataset") {
		text = []byte(t)
	} else if strings.HasPrefix(name, "/vsi") {
		return 0
	} else if b, err := os.ReadFile(name); err == nil {
		text = b
	}
	n := 0
	for _, tag := range vrtSourceTags {
		n += bytes.Count(text, tag)
	}
	return n
}

// CheckOpenable is the one rule for the datasets pnec hands GDAL (scenes,
// masks, quality masks): CheckRegular for name and, when name is a local
// or inline VRT, for every local file it reads at any depth of VRTs, whose
// FIFO would block GDAL as a FIFO scene would. Other
// problems of a VRT are left to GDAL to report.
func CheckOpenable(name string) error {
	if err := CheckRegular(name); err != nil {
		return err
	}
	if !isInlineXML(name) && !localName(name) {
		return nil
	}
	if kind, err := XMLDescription(name); err != nil || kind != "VRTDataset" {
		return nil
	}
	err := WalkVRT(name, func(src VRTSource) error {
		if !localName(src.Name) {
			return SkipSource
		}
		if err := CheckRegular(src.Name); err != nil {
			return fmt.Errorf("VRT source %s: %w", src.Name, err)
		}
		return nil
	})
	if errors.Is(err, ErrNotRegular) {
		return err
	}
	return nil
}

// CheckRegular refuses a local name that exists and is neither a regular
// file nor a directory (ErrNotRegular): a FIFO, a device, a socket. Names
// GDAL resolves itself (/vsi paths, subdataset names) and names that do not
// exist are left to GDAL.
func CheckRegular(name string) error {
	if strings.HasPrefix(name, "/vsi") {
		return nil
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().IsRegular() || fi.IsDir() {
		return nil
	}
	kind := "a special file"
	switch m := fi.Mode(); {
	case m&os.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&os.ModeCharDevice != 0:
		kind = "a character device"
	case m&os.ModeDevice != 0:
		kind = "a block device"
	case m&os.ModeSocket != 0:
		kind = "a socket"
	}
	return fmt.Errorf("%w: %s", ErrNotRegular, kind)
}

// openGDAL opens the GDAL dataset path as the scene called name.
func openGDAL(name, path string) (*Scene, error) {
	// SiblingFiles() with no names restores GDAL's own sidecar probing
	// (.hdr of ENVI, .aux.xml, .ovr, .msk), which godal turns off by default.
	ds, err := godal.Open(path, godal.RasterOnly(), godal.SiblingFiles(), errh)
	if err != nil {
		err = tidy(err)
		if strings.HasPrefix(err.Error(), path+": ") { // GDAL named it already
			return nil, fmt.Errorf("open %w", err)
		}
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	s := &Scene{name: name, ds: ds}
	if err := s.load(); err != nil {
		ds.Close(errh)
		return nil, err
	}
	if s.info.Driver == "VRT" {
		s.info.VRTSources = countVRTSources(path)
	}
	return s, nil
}

// load reads the opened dataset's bands, band structure, grid, band set
// and sidecars into s.
func (s *Scene) load() error {
	s.bands = s.ds.Bands()
	if len(s.bands) == 0 {
		return s.noBandsError()
	}
	st := s.ds.Structure()
	in := Info{
		Name:      s.name,
		Driver:    s.ds.Driver().ShortName(),
		Cols:      st.SizeX,
		Rows:      st.SizeY,
		Bands:     len(s.bands),
		NoData:    make([]float64, len(s.bands)),
		HasNoData: make([]bool, len(s.bands)),
		BandNames: make([]string, len(s.bands)),
		Metadata:  s.ds.Metadatas(),
	}
	// An ENVI header's acquisition time is in GDAL's ENVI domain; it is the
	// scene's acquisition time, which products' STAC Items carry.
	if v, ok := s.ds.Metadatas(godal.Domain("ENVI"))["acquisition_time"]; ok {
		if in.Metadata == nil {
			in.Metadata = map[string]string{}
		}
		if _, dup := in.Metadata[MetaENVIAcquisitionTime]; !dup {
			in.Metadata[MetaENVIAcquisitionTime] = v
		}
	}
	if err := s.loadBands(&in); err != nil {
		return err
	}
	if err := s.loadGrid(&in); err != nil {
		return err
	}
	if err := s.readSpectral(&in); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if err := s.readSidecars(&in); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.info = in
	s.setSpecs()
	return nil
}

// noBandsError is ErrNoBands for a dataset without raster bands, naming
// its subdatasets when it has some (a container such as HDF or NetCDF).
func (s *Scene) noBandsError() error {
	subs := s.ds.Metadatas(godal.Domain("SUBDATASETS"))
	var names []string
	for i := 1; ; i++ {
		n, ok := subs[fmt.Sprintf("SUBDATASET_%d_NAME", i)]
		if !ok {
			break
		}
		names = append(names, n)
	}
	if len(names) > 0 {
		return fmt.Errorf("%s: %w; open one of its subdatasets: %s", s.name, ErrNoBands, strings.Join(names, " "))
	}
	return fmt.Errorf("%s: %w", s.name, ErrNoBands)
}

// loadBands reads each band's data type, block size, scale and offset,
// no-data value, description and mask kind into s and in; a complex band
// is a DataTypeError.
func (s *Scene) loadBands(in *Info) error {
	n := len(s.bands)
	s.scale, s.offset = make([]float32, n), make([]float32, n)
	s.nodata, s.hasNoData = make([]float32, n), make([]bool, n)
	in.Scale, in.Offset = make([]float64, n), make([]float64, n)
	var types []string
	perDatasetMask := false
	for i, b := range s.bands {
		bs := b.Structure()
		if isComplex(bs.DataType) {
			return &DataTypeError{Name: s.name, Band: i + 1, DataType: bs.DataType.String()}
		}
		if t := bs.DataType.String(); !contains(types, t) {
			types = append(types, t)
		}
		in.SampleBytes = max(in.SampleBytes, bs.DataType.Size())
		if i == 0 {
			in.BlockCols, in.BlockRows = bs.BlockSizeX, bs.BlockSizeY
		}
		s.scale[i], s.offset[i] = float32(bs.Scale), float32(bs.Offset)
		if bs.Scale == 0 { // some drivers report 0 for "unset"
			s.scale[i] = 1
		}
		in.Scale[i], in.Offset[i] = bs.Scale, bs.Offset
		if bs.Scale == 0 {
			in.Scale[i] = 1
		}
		if nd, ok := b.NoData(); ok {
			in.NoData[i], in.HasNoData[i] = nd, true
			s.nodata[i], s.hasNoData[i] = float32(nd), true
		}
		in.BandNames[i] = b.Description()
		flags := b.MaskFlags()
		if flags&(gmfAllValid|gmfNoData) == 0 {
			if flags&gmfPerDataset != 0 {
				perDatasetMask = true
			} else {
				s.bandMask = append(s.bandMask, i)
			}
		}
	}
	s.datasetMask = perDatasetMask
	if perDatasetMask {
		s.bandMask = nil
	}
	in.DataType = strings.Join(types, ",")
	return nil
}

// loadGrid reads the dataset's geotransform (checked), CRS, EPSG code and
// WGS84 footprint into in.
func (s *Scene) loadGrid(in *Info) error {
	// All zeros is how some drivers say "none" (as the writers take it:
	// hasGeoTransform).
	if gt, err := s.ds.GeoTransform(errh); err == nil && hasGeoTransform(gt) {
		if err := checkGeoTransform(gt); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		in.GeoTransform = gt
		in.HasGeoTransform = true
	} else {
		in.GeoTransform = [6]float64{0, 1, 0, 0, 0, 1} // GDAL's default: pixel coordinates
	}
	in.WKT = s.ds.Projection()
	if in.WKT != "" {
		in.EPSG = epsgOf(in.WKT)
		if in.HasGeoTransform {
			fp, err := footprintWGS84(in.GeoTransform, in.WKT, in.Cols, in.Rows)
			if err != nil {
				return fmt.Errorf("%s: footprint: %w", s.name, err)
			}
			in.FootprintWGS84 = fp
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isComplex(t godal.DataType) bool {
	switch t {
	case godal.CInt16, godal.CInt32, godal.CFloat32, godal.CFloat64:
		return true
	}
	return false
}

// lookupFold finds key in md ignoring case.
func lookupFold(md map[string]string, key string) (string, bool) {
	if v, ok := md[key]; ok {
		return v, true
	}
	for k, v := range md {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// Info returns the scene's description.
func (s *Scene) Info() Info { return s.info }

// Name returns the dataset name the scene was opened with.
func (s *Scene) Name() string { return s.name }

func (s *Scene) checkWindow(w Window) error {
	if w.Cols <= 0 || w.Rows <= 0 || w.Col < 0 || w.Row < 0 ||
		w.Col+w.Cols > s.info.Cols || w.Row+w.Rows > s.info.Rows {
		return fmt.Errorf("%w: window %v in a %dx%d raster", ErrWindow, w, s.info.Cols, s.info.Rows)
	}
	return nil
}

// ReadWindow reads all bands of w (or the band plan's, SetBandPlan). Only
// the blocks of the scene that intersect w are read. Pixels that are
// invalid (any band read nodata, NaN or Inf, or masked by the dataset's
// mask or an added mask) have Valid false and all their Data values set to
// 0, so that they cannot spread NaN through a model.
func (s *Scene) ReadWindow(ctx context.Context, w Window) (Block, error) {
	return s.ReadWindowInto(ctx, w, nil, nil)
}

// ReadWindowInto is ReadWindow into data and valid when they are long
// enough for w (w.Cols*w.Rows*Bands() and w.Cols*w.Rows); shorter ones are
// replaced by new slices. A caller that reads tile after tile recycles the
// previous tile's buffers this way: a fresh 400 MB tile buffer costs the
// kernel's page zeroing on every tile (13% of a 200-band classify's CPU
// time before, measured with perf).
func (s *Scene) ReadWindowInto(ctx context.Context, w Window, data []float32, valid []bool) (Block, error) {
	nb := s.cur.out
	data, valid = buffers.Resize(data, w.Cols*w.Rows*nb), buffers.Resize(valid, w.Cols*w.Rows)
	if err := s.ReadWindowAt(ctx, w, data, valid, w.Cols); err != nil {
		return Block{}, err
	}
	return Block{Window: w, Bands: nb, Data: data, Valid: valid}, nil
}

// ReadWindowAt reads all bands of w (Bands() values per pixel) into a
// larger pixel-interleaved block rowPixels wide, as ReadWindow would:
// pixel (r, c) of w goes to pixel r*rowPixels + c of data and valid. Slice
// data and valid to start at the pixel w's top-left goes to; they must
// reach its bottom-right. A caller assembles a tile from parts this way
// (columns it read before and columns read now) without a copy.
func (s *Scene) ReadWindowAt(ctx context.Context, w Window, data []float32, valid []bool, rowPixels int) error {
	if s.ds == nil && s.cube == nil {
		return fmt.Errorf("read %s: %w", s.name, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkWindow(w); err != nil {
		return fmt.Errorf("read %s: %w", s.name, err)
	}
	nb := s.cur.out
	if n := (w.Rows-1)*rowPixels + w.Cols; rowPixels < w.Cols || len(valid) < n || len(data) < n*nb {
		return fmt.Errorf("read %s window %v: buffer of %d pixels (rows %d wide) is too small", s.name, w, len(valid), rowPixels)
	}
	// Strips of whole block rows (aligned to the scene's block grid), so
	// that GDAL's block cache only ever holds one row of blocks across the
	// window (all bands of a pixel-interleaved file are decoded together)
	// and ctx is honoured between strips: a stop need not wait for a whole
	// tile's read.
	bh := max(s.info.BlockRows, 16)
	for r0 := w.Row; r0 < w.Row+w.Rows; {
		if err := ctx.Err(); err != nil {
			return err
		}
		r1 := min((r0/bh+1)*bh, w.Row+w.Rows)
		sw := Window{Col: w.Col, Row: r0, Cols: w.Cols, Rows: r1 - r0}
		off := (r0 - w.Row) * rowPixels
		if err := s.readInto(&s.cur, sw, sw.Cols, sw.Rows, true, data[off*nb:], valid[off:], rowPixels); err != nil {
			return err
		}
		r0 = r1
	}
	return nil
}

// read reads window w of the bands of sp into a bufCols x bufRows buffer
// (GDAL nearest-neighbour sampling when the buffer is smaller than w) and
// works out each buffer pixel's validity; invalid pixels' values are
// zeroed, and with scale true valid ones get the bands' scale and offset.
func (s *Scene) read(sp *readSpec, w Window, bufCols, bufRows int, scale bool) ([]float32, []bool, error) {
	npix := bufCols * bufRows
	data, valid := make([]float32, npix*sp.out), make([]bool, npix)
	if err := s.readInto(sp, w, bufCols, bufRows, scale, data, valid, bufCols); err != nil {
		return nil, nil, err
	}
	return data, valid, nil
}

// readInto is read into the caller's buffers: buffer pixel (r, c) goes to
// pixel r*rowPixels + c of data (sp.out values each) and valid. A plan
// that transforms the values reads the bands into a scratch strip first
// and makes the returned values from the valid pixels' read ones.
func (s *Scene) readInto(sp *readSpec, w Window, bufCols, bufRows int, scale bool, data []float32, valid []bool, rowPixels int) error {
	if !sp.transforms() {
		return s.readValues(sp, w, bufCols, bufRows, scale, data, valid, rowPixels)
	}
	nr, no := len(sp.bands), sp.out
	// The read bands go through a scratch strip of at most
	// transformScratchBytes (whole rows; a decimated read at once), so a
	// plan adds little to the read's memory whatever the strip's height.
	step := bufRows
	if bufRows == w.Rows {
		step = max(1, min(bufRows, transformScratchBytes/max(1, bufCols*nr*4)))
	}
	for r0 := 0; r0 < bufRows; r0 += step {
		k := min(step, bufRows-r0)
		part, prow := w, k
		if bufRows == w.Rows {
			part = Window{Col: w.Col, Row: w.Row + r0, Cols: w.Cols, Rows: k}
		}
		s.pixScratch = buffers.Resize(s.pixScratch, bufCols*prow*nr)
		s.validScratch = buffers.Resize(s.validScratch, bufCols*prow)
		tmp, tv := s.pixScratch, s.validScratch
		if err := s.readValues(sp, part, bufCols, prow, scale, tmp, tv, bufCols); err != nil {
			return err
		}
		for r := range prow {
			for c := range bufCols {
				i, o := r*bufCols+c, (r0+r)*rowPixels+c
				valid[o] = tv[i]
				out := data[o*no : (o+1)*no : (o+1)*no]
				if !tv[i] {
					clear(out)
					continue
				}
				sp.apply.Apply(tmp[i*nr:(i+1)*nr], out)
			}
		}
	}
	return nil
}

// transformScratchBytes bounds the scratch strip of a band plan's read.
var transformScratchBytes = 16 << 20

// readValues reads the bands of sp (len(sp.bands) values per pixel) into
// the caller's buffers: buffer pixel (r, c) goes to pixel r*rowPixels + c
// of data and valid.
func (s *Scene) readValues(sp *readSpec, w Window, bufCols, bufRows int, scale bool, data []float32, valid []bool, rowPixels int) error {
	defer onQuietThread()() // the pixels' and the masks' reads alike
	nb := len(sp.bands)
	if err := s.readPixels(sp, w, bufCols, bufRows, data, rowPixels); err != nil {
		return fmt.Errorf("read %s window %v: %w", s.name, w, tidy(err))
	}
	rowValid := func(r int) []bool { return valid[r*rowPixels : r*rowPixels+bufCols] }
	rowData := func(r int) []float32 { return data[r*rowPixels*nb : (r*rowPixels+bufCols)*nb] }
	for r := range bufRows {
		v := rowValid(r)
		for i := range v {
			v[i] = true
		}
	}
	applyScale := scale && !sp.identityScale
	if sp.allIntegerNoNoData {
		// Integers cannot be NaN or Inf, and there is no nodata or mask:
		// every pixel is valid, only the scale is left to apply.
		if applyScale {
			for r := range bufRows {
				d := rowData(r)
				for p := 0; p < bufCols; p++ {
					px := d[p*nb : p*nb+nb : p*nb+nb]
					for b := range px {
						px[b] = px[b]*sp.scale[b] + sp.offset[b]
					}
				}
			}
		}
		return nil
	}
	if err := s.applyMasks(sp, w, bufCols, bufRows, valid, rowPixels); err != nil {
		return err
	}
	for r := range bufRows {
		v, d := rowValid(r), rowData(r)
		for p := range v {
			px := d[p*nb : p*nb+nb : p*nb+nb]
			ok := v[p]
			if ok {
				nodata := 0
				for b, x := range px {
					if !physical(x) {
						ok = false
						break
					}
					if sp.hasNoData[b] && x == sp.nodata[b] {
						nodata++
						if !s.nodataAll {
							ok = false
							break
						}
					}
				}
				if s.nodataAll && nodata == len(px) {
					ok = false
				}
			}
			if !ok {
				v[p] = false
				clear(px)
				continue
			}
			if applyScale {
				for b := range px {
					px[b] = px[b]*sp.scale[b] + sp.offset[b]
					ok = ok && physical(px[b])
				}
				if !ok { // out of range once scaled
					v[p] = false
					clear(px)
				}
			}
		}
	}
	return nil
}

// MaxPixelMagnitude bounds the values a valid pixel holds, as read and
// once scaled: no imaging spectrometer measures 1e15 in any unit pnec
// reads (reflectance, radiance, digital numbers), and the network's
// float32 arithmetic overflows on such values (squares past 3.4e38), so a
// Float32 scene's 3e38 gave classes with a no-data reliability and a
// drift brightness ratio of 2.3e33. Such pixels are
// no-data, as NaN and Inf are, for the map, the reliability, the drift
// figures and training alike.
const MaxPixelMagnitude = 1e15

// physical reports whether a pixel value is finite and within
// MaxPixelMagnitude.
func physical(x float32) bool {
	return x >= -MaxPixelMagnitude && x <= MaxPixelMagnitude // false for NaN and +-Inf
}

// applyMasks clears the validity of buffer pixels that the dataset's
// mask, the read bands' own masks or an added quality mask
// (AddQualityMask) mark invalid.
func (s *Scene) applyMasks(sp *readSpec, w Window, bufCols, bufRows int, valid []bool, rowPixels int) error {
	rowValid := func(r int) []bool { return valid[r*rowPixels : r*rowPixels+bufCols] }
	if s.ds != nil && (s.datasetMask || len(sp.bandMask) > 0) {
		m := make([]byte, bufCols*bufRows)
		masks := make([]int, len(sp.bandMask))
		for k, pos := range sp.bandMask {
			masks[k] = sp.bands[pos]
		}
		if s.datasetMask {
			masks = []int{0}
		}
		for _, bi := range masks {
			if err := s.bands[bi].MaskBand().Read(w.Col, w.Row, m, bufCols, bufRows, godal.Window(w.Cols, w.Rows), errh); err != nil {
				return fmt.Errorf("read %s mask window %v: %w", s.name, w, tidy(err))
			}
			for r := range bufRows {
				v := rowValid(r)
				for c, mv := range m[r*bufCols : (r+1)*bufCols] {
					if mv == 0 {
						v[c] = false
					}
				}
			}
		}
	}
	if len(s.qualityMasks) > 0 {
		bad := make([]bool, bufCols*bufRows)
		for _, m := range s.qualityMasks {
			clear(bad)
			if err := m.readQualityMask(w, bufCols, bufRows, sp.bands, bad); err != nil {
				return fmt.Errorf("read %s quality mask %s window %v: %w", s.name, m.name(), w, err)
			}
			for r := range bufRows {
				v := rowValid(r)
				for c, b := range bad[r*bufCols : (r+1)*bufCols] {
					if b {
						v[c] = false
					}
				}
			}
		}
	}
	return nil
}

// readPixels reads the bands of sp of window w into data,
// pixel-interleaved, buffer pixel (r, c) at pixel r*rowPixels + c. GDAL
// writing a pixel-interleaved buffer band by band strides over the whole
// buffer once per band (every cache line, 200 times for 200 bands);
// reading band-sequential into a scratch buffer and transposing it here in
// blocks of pixels that stay in cache is faster: on 536 x 536 windows of a
// 2048 x 2048 x 200 Int16 DEFLATE VRT, 33-39 M samples/s became 52-59 M (2
// shared cores, three runs each). Bands of one integer type are read as
// that type and converted while transposing, which spares GDAL's
// per-source conversion (and, through a VRT, its temporary buffers).
func (s *Scene) readPixels(sp *readSpec, w Window, bufCols, bufRows int, data []float32, rowPixels int) error {
	nb := len(sp.bands)
	npix := bufCols * bufRows
	if s.cube != nil {
		read := func(buf any) error { return s.cube.readBSQ(w, bufCols, bufRows, sp.bands, buf.([]float32)) }
		return readInterleaved(&s.scratch, read, data, bufCols, bufRows, nb, rowPixels)
	}
	sel := godal.Bands(sp.bands...)
	if nb == 1 && rowPixels == bufCols {
		return s.ds.Read(w.Col, w.Row, data[:npix], bufCols, bufRows, godal.Window(w.Cols, w.Rows), sel, errh)
	}
	read := func(buf any) error {
		return s.ds.Read(w.Col, w.Row, buf, bufCols, bufRows, godal.Window(w.Cols, w.Rows), godal.BandInterleaved(), sel, errh)
	}
	switch sp.native {
	case godal.Int16:
		return readInterleaved(&s.scratchI16, read, data, bufCols, bufRows, nb, rowPixels)
	case godal.UInt16:
		return readInterleaved(&s.scratchU16, read, data, bufCols, bufRows, nb, rowPixels)
	case godal.Byte:
		return readInterleaved(&s.scratchU8, read, data, bufCols, bufRows, nb, rowPixels)
	default:
		return readInterleaved(&s.scratch, read, data, bufCols, bufRows, nb, rowPixels)
	}
}

// readInterleaved reads band-sequential samples of type T into the scratch
// buffer *scratch (grown as needed) with read, then interleaves them into
// data (transpose.BandsToPixels).
func readInterleaved[T int16 | uint16 | uint8 | float32](scratch *[]T, read func(buf any) error, data []float32, cols, rows, nb, rowPixels int) error {
	*scratch = buffers.Resize(*scratch, cols*rows*nb)
	if err := read(*scratch); err != nil {
		return err
	}
	transpose.BandsToPixels(*scratch, data, cols, rows, nb, rowPixels)
	return nil
}

// windowBudgetBytes bounds the memory ValidFraction uses per strip.
const windowBudgetBytes = 32 << 20

// validSpec is what the valid fraction counts: the band plan's bands when
// one is set, else the bands the scene does not declare bad (a bad band
// full of no-data makes no pixel invalid).
func (s *Scene) validSpec() *readSpec {
	if s.cur.plan != nil {
		return &s.cur
	}
	return &s.good
}

// closed reports whether the scene has been closed.
func (s *Scene) closed() bool { return s.ds == nil && s.cube == nil }

// ValidFraction returns the share of valid pixels of the whole scene, read
// window by window (strips of whole rows of about 32 MiB). A scene of
// integer bands without nodata or mask has no invalid pixel and is not
// read. Bands declared bad do not count (see SetBandPlan).
func (s *Scene) ValidFraction(ctx context.Context) (float64, error) {
	if s.closed() {
		return 0, fmt.Errorf("read %s: %w", s.name, ErrClosed)
	}
	sp := s.validSpec()
	if sp.allIntegerNoNoData {
		return 1, ctx.Err()
	}
	return s.readValidFraction(ctx, sp)
}

// readValidFraction is ValidFraction reading every pixel, also of a scene
// whose pixels are all valid by type, so that a scene GDAL cannot read (a
// truncated file, a VRT source that is gone) fails.
func (s *Scene) readValidFraction(ctx context.Context, sp *readSpec) (float64, error) {
	in := s.info
	rowBytes := in.Cols * len(sp.bands) * 4
	step := max(1, windowBudgetBytes/max(1, rowBytes))
	valid := 0
	for r := 0; r < in.Rows; r += step {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		w := Window{Col: 0, Row: r, Cols: in.Cols, Rows: min(step, in.Rows-r)}
		_, v, err := s.read(sp, w, w.Cols, w.Rows, false)
		if err != nil {
			return 0, err
		}
		for _, ok := range v {
			if ok {
				valid++
			}
		}
	}
	return float64(valid) / float64(in.Cols*in.Rows), nil
}

// MaxExactValidPixels is the scene size, pixels, up to which
// ValidFractionEstimate reads every pixel; larger scenes are sampled.
const MaxExactValidPixels = 4 << 20

// ValidFractionEstimate returns the share of valid pixels like
// ValidFraction, exactly (exact true) for scenes of at most
// MaxExactValidPixels pixels. It always reads, a scene of integer bands
// without nodata too (whose pixels are all valid by type, exact true), so
// that a scene GDAL cannot read fails instead of reporting 100%. A larger
// scene is sampled on a regular grid
// of every f-th pixel in both directions, f chosen so that at most
// MaxExactValidPixels pixels are read (GDAL's nearest-neighbour decimated
// read): seconds for any declared size, where reading a mosaic of 10^12
// pixels would take hours.
func (s *Scene) ValidFractionEstimate(ctx context.Context) (fraction float64, exact bool, err error) {
	if s.closed() {
		return 0, false, fmt.Errorf("read %s: %w", s.name, ErrClosed)
	}
	sp := s.validSpec()
	in := s.info
	total := int64(in.Cols) * int64(in.Rows)
	if total <= MaxExactValidPixels {
		f, err := s.readValidFraction(ctx, sp)
		return f, true, err
	}
	f := int(math.Ceil(math.Sqrt(float64(total) / MaxExactValidPixels)))
	bufCols, bufRows := max(1, in.Cols/f), max(1, in.Rows/f)
	// Source window per buffer pixel: f x f, except along an axis shorter than f.
	fc, fr := min(f, in.Cols), min(f, in.Rows)
	step := max(1, windowBudgetBytes/max(1, bufCols*len(sp.bands)*4)) // buffer rows per strip
	valid, n := 0, 0
	for r := 0; r < bufRows; r += step {
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
		k := min(step, bufRows-r)
		w := Window{Col: 0, Row: r * fr, Cols: bufCols * fc, Rows: k * fr}
		_, v, err := s.read(sp, w, bufCols, k, false)
		if err != nil {
			return 0, false, err
		}
		for _, ok := range v {
			if ok {
				valid++
			}
		}
		n += len(v)
	}
	if sp.allIntegerNoNoData { // read (the sample is readable), and valid by type
		return 1, true, nil
	}
	return float64(valid) / float64(n), false, nil
}

// Close releases the dataset (and any mask datasets added). A second
// Close returns ErrClosed.
func (s *Scene) Close() error {
	if s.closed() {
		return fmt.Errorf("close %s: %w", s.name, ErrClosed)
	}
	defer onQuietThread()()
	var errs []error
	for _, m := range s.qualityMasks {
		errs = append(errs, m.close())
	}
	s.qualityMasks = nil
	if s.cube != nil {
		errs = append(errs, s.cube.close())
		s.cube = nil
	}
	if s.ds != nil {
		errs = append(errs, s.ds.Close(errh))
		s.ds = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", s.name, err)
	}
	return nil
}
