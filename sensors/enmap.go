package sensors

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/spectral"
)

// EnMAP (DLR): L2A orthorectified reflectance as a folder or ZIP of files
// named ENMAP01-..._<level>_..., read by their METADATA.XML: the spectral
// image (a GeoTIFF, or BSQ/BIL/BIP, which GDAL reads) with the band
// centres, widths, gains and offsets of METADATA.XML, the bands its
// statistics show filled with no-data declared bad, and the pixel, cloud,
// cirrus and cloud-shadow masks (QL_* files, companions) as the product's
// masks. docs/sensors.md says what is verified; the fixture is
// internal/fixture's WriteEnMAP.

// ProductEnMAPL2A is the product name (geo.Info.Product) of EnMAP's L2A
// deliveries.
const ProductEnMAPL2A = "EnMAP L2A"

func init() { Register(enmap{}) }

type enmap struct{}

var _ DeliverySensor = enmap{}

// enmapCompanion is an EnMAP quality layer or quicklook, part of the
// spectral image's scene.
var enmapCompanion = regexp.MustCompile(`(?i)-QL_[A-Z_]+\.(TIF|GEOTIFF)$`)

// maxMetadataBytes bounds the METADATA.XML read.
const maxMetadataBytes = 64 << 20

func (enmap) Name() string { return "EnMAP" }

func (enmap) Companion(base string) bool { return enmapCompanion.MatchString(base) }

// Describe: an EnMAP delivery is read by its METADATA.XML (Open), not as a
// raster of its own.
func (enmap) Describe(*geo.Info) ([]geo.QualityMaskSource, bool, error) { return nil, false, nil }

// IsDelivery: an EnMAP folder or ZIP, known by its METADATA.XML.
func (enmap) IsDelivery(path string) bool {
	_, ok := findEnMAP(path)
	return ok
}

// xmlNode is an element of a parsed XML document: its local name (no
// namespace), attributes by local name, text and children.
type xmlNode struct {
	Name     string
	Attr     map[string]string
	Text     string
	Children []*xmlNode
}

// maxXMLDepth bounds nesting, so that a hostile document cannot exhaust the stack.
const maxXMLDepth = 64

// parseXMLTree reads a whole XML document into a tree of xmlNode.
func parseXMLTree(data []byte) (*xmlNode, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.CharsetReader = func(charset string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(charset) {
		case "utf-8", "us-ascii", "iso-8859-1", "latin1":
			return r, nil // EnMAP's metadata is ASCII
		}
		return nil, fmt.Errorf("unsupported XML encoding %q", charset)
	}
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxXMLDepth {
				return nil, fmt.Errorf("XML nested deeper than %d elements", maxXMLDepth)
			}
			n := &xmlNode{Name: t.Name.Local}
			for _, a := range t.Attr {
				if n.Attr == nil {
					n.Attr = map[string]string{}
				}
				n.Attr[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(t)
			}
		}
	}
	if root == nil {
		return nil, errors.New("no XML element")
	}
	return root, nil
}

// child is n's first child called name (nil when none).
func (n *xmlNode) child(name string) *xmlNode {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// path follows children names from n (nil when one is missing).
func (n *xmlNode) path(names ...string) *xmlNode {
	for _, nm := range names {
		n = n.child(nm)
	}
	return n
}

// find is the first element called name below n, depth first.
func (n *xmlNode) find(name string) *xmlNode {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
		if f := c.find(name); f != nil {
			return f
		}
	}
	return nil
}

// text is n's trimmed text ("" for nil).
func (n *xmlNode) text() string {
	if n == nil {
		return ""
	}
	return strings.TrimSpace(n.Text)
}

// enmapMetadata is what pnec takes from an EnMAP METADATA.XML.
type enmapMetadata struct {
	Level             string // "L2A", ... (from the product name; "" when unknown)
	CentresNM, FWHMNM []float64
	Gains, Offsets    []float64
	BandStdDev        []float64 // per band (NaN when not stated); 0 marks a no-data-filled band
	// HasStats: bandStatistics gives every band's stdDeviation.
	HasStats             bool
	StartTime            string
	VNIRBands, SWIRBands []int // 1-based expected channel lists
}

// parseEnMAPMetadata reads an EnMAP METADATA.XML: the band
// characterisation (bandID number, wavelengthCenterOfBand, FWHMOfBand,
// GainOfBand, OffsetOfBand, in nm and the gains' units), the band
// statistics (a standard deviation of 0 is a band filled with no-data: the
// water-vapour bands of L2A), the acquisition start time and the VNIR/SWIR
// expected channel lists.
func parseEnMAPMetadata(data []byte) (enmapMetadata, error) {
	var md enmapMetadata
	root, err := parseXMLTree(data)
	if err != nil {
		return md, fmt.Errorf("METADATA.XML: %w", err)
	}
	chars := root.find("bandCharacterisation")
	if chars == nil {
		return md, errors.New("METADATA.XML has no bandCharacterisation")
	}
	bands, err := parseEnMAPBands(chars)
	if err != nil {
		return md, err
	}
	for _, b := range bands {
		md.CentresNM = append(md.CentresNM, b.c)
		md.FWHMNM = append(md.FWHMNM, b.f)
		md.Gains = append(md.Gains, b.g)
		md.Offsets = append(md.Offsets, b.o)
	}
	md.BandStdDev = enmapBandStdDevs(root, len(bands))
	md.HasStats = true
	for _, sd := range md.BandStdDev {
		md.HasStats = md.HasStats && !math.IsNaN(sd)
	}
	md.StartTime = root.find("temporalCoverage").child("startTime").text()
	md.VNIRBands = channelList(root.find("vnirProductQuality").child("expectedChannelsList").text())
	md.SWIRBands = channelList(root.find("swirProductQuality").child("expectedChannelsList").text())
	if name := root.find("name").text(); name != "" {
		for _, lv := range []string{"L1B", "L1C", "L2A"} {
			if strings.Contains(name, lv) {
				md.Level = lv
			}
		}
	}
	return md, nil
}

// enmapBand is one bandID of METADATA.XML's bandCharacterisation: its
// number (1-based), centre and FWHM in nm, gain and offset.
type enmapBand struct {
	n          int
	c, f, g, o float64
}

// parseEnMAPBands reads the bandCharacterisation's bands in number order;
// the numbers must run 1 to the band count, each once.
func parseEnMAPBands(chars *xmlNode) ([]enmapBand, error) {
	var bands []enmapBand
	seen := map[int]bool{}
	for _, b := range chars.Children {
		if b.Name != "bandID" {
			continue
		}
		k, err := strconv.Atoi(strings.TrimSpace(b.Attr["number"]))
		if err != nil || k < 1 || k > 100000 || seen[k] {
			return nil, fmt.Errorf("METADATA.XML: bandID number %q is not a new band number", b.Attr["number"])
		}
		seen[k] = true
		bd, err := parseEnMAPBand(b, k)
		if err != nil {
			return nil, err
		}
		bands = append(bands, bd)
	}
	if len(bands) == 0 {
		return nil, errors.New("METADATA.XML lists no bands")
	}
	sort.Slice(bands, func(i, j int) bool { return bands[i].n < bands[j].n })
	if bands[len(bands)-1].n != len(bands) {
		return nil, fmt.Errorf("METADATA.XML numbers its %d bands up to %d", len(bands), bands[len(bands)-1].n)
	}
	return bands, nil
}

// parseEnMAPBand reads bandID b, number k: a centre is required, the
// width may be absent (NaN), the gain defaults to 1 and the offset to 0.
func parseEnMAPBand(b *xmlNode, k int) (enmapBand, error) {
	bd := enmapBand{n: k}
	var err error
	if bd.c, err = enmapNumber(b, "wavelengthCenterOfBand", math.NaN()); err != nil {
		return bd, fmt.Errorf("METADATA.XML band %d: %w", k, err)
	}
	if bd.f, err = enmapNumber(b, "FWHMOfBand", math.NaN()); err != nil {
		return bd, fmt.Errorf("METADATA.XML band %d: %w", k, err)
	}
	if bd.g, err = enmapNumber(b, "GainOfBand", 1); err != nil {
		return bd, fmt.Errorf("METADATA.XML band %d: %w", k, err)
	}
	if bd.o, err = enmapNumber(b, "OffsetOfBand", 0); err != nil {
		return bd, fmt.Errorf("METADATA.XML band %d: %w", k, err)
	}
	switch {
	case math.IsNaN(bd.c):
		return bd, fmt.Errorf("%w: METADATA.XML band %d has no wavelengthCenterOfBand", geo.ErrBandMetadata, k)
	case !(bd.c > 0):
		return bd, fmt.Errorf("%w: METADATA.XML band %d: wavelengthCenterOfBand %s; a band centre is a positive number", geo.ErrBandMetadata, k, geo.FormatValue(bd.c))
	case bd.f < 0:
		return bd, fmt.Errorf("%w: METADATA.XML band %d: FWHMOfBand %s; a band width is a positive number", geo.ErrBandMetadata, k, geo.FormatValue(bd.f))
	case bd.g == 0:
		return bd, fmt.Errorf("%w: METADATA.XML band %d: GainOfBand 0; every value of the band would read as its offset", geo.ErrBandMetadata, k)
	}
	return bd, nil
}

// enmapNumber is n's child name as a finite number; def when it is absent
// or empty.
func enmapNumber(n *xmlNode, name string, def float64) (float64, error) {
	t := n.child(name).text()
	if t == "" {
		return def, nil
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%w: %s %q is not a number", geo.ErrBandMetadata, name, truncate(t, 20))
	}
	return v, nil
}

// enmapBandStdDevs is bandStatistics' stdDeviation of each of the n bands
// (NaN where not stated or not a number).
func enmapBandStdDevs(root *xmlNode, n int) []float64 {
	sd := nanSlice(n)
	st := root.find("bandStatistics")
	if st == nil {
		return sd
	}
	for _, b := range st.Children {
		k, err := strconv.Atoi(strings.TrimSpace(b.Attr["number"]))
		if b.Name != "bandID" || err != nil || k < 1 || k > n {
			continue
		}
		if v, err := strconv.ParseFloat(b.child("stdDeviation").text(), 64); err == nil {
			sd[k-1] = v
		}
	}
	return sd
}

// channelList parses "1,2,3" (nil when empty or malformed).
func channelList(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// enmapDelivery is the files of one EnMAP product: a folder, a ZIP (with
// the product's folder inside, or its files at the top) or the METADATA.XML
// in a folder.
type enmapDelivery struct {
	dir      string // the product's directory (a /vsizip/ path for a ZIP)
	prefix   string // the file names' common prefix, up to "-METADATA.XML"
	metadata string
}

// findEnMAP recognises an EnMAP delivery by its METADATA.XML.
func findEnMAP(name string) (enmapDelivery, bool) {
	var dirs []string
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, "-metadata.xml") && strings.HasPrefix(strings.ToUpper(path.Base(name)), "ENMAP"):
		dirs = []string{path.Dir(name)}
	case strings.HasSuffix(lower, ".zip") && !strings.HasPrefix(name, "/vsizip/"):
		z := "/vsizip/" + name
		dirs = []string{z}
		for _, e := range geo.ReadDir(z) {
			dirs = append(dirs, z+"/"+e)
		}
	case (path.Ext(strings.TrimSuffix(name, "/")) == "" || strings.HasPrefix(strings.ToUpper(path.Base(name)), "ENMAP")) && geo.IsDir(name):
		// Only names that can be folders are looked at: a file name
		// with an extension costs no request on a network file system.
		dirs = []string{name}
	default:
		return enmapDelivery{}, false
	}
	for _, d := range dirs {
		for _, e := range geo.ReadDir(d) {
			u := strings.ToUpper(e)
			if strings.HasPrefix(u, "ENMAP") && strings.HasSuffix(u, "-METADATA.XML") {
				return enmapDelivery{dir: d, prefix: e[:len(e)-len("-METADATA.XML")], metadata: d + "/" + e}, true
			}
		}
	}
	return enmapDelivery{}, false
}

// file finds the delivery's file called prefix-suffix with one of exts
// ("" when none is there).
func (d enmapDelivery) file(suffix string, exts ...string) string {
	entries := geo.ReadDir(d.dir)
	for _, ext := range exts {
		want := strings.ToUpper(d.prefix + "-" + suffix + ext)
		for _, e := range entries {
			if strings.ToUpper(e) == want {
				return d.dir + "/" + e
			}
		}
	}
	return ""
}

// enmapImageExts are the spectral image's formats, as DLR delivers them.
var enmapImageExts = []string{".TIF", ".GEOTIFF", "_COG.TIF", ".BSQ", ".BIL", ".BIP", ".JP2"}

// Open opens an EnMAP L2A delivery: the spectral image through GDAL,
// with the band centres, widths, gains and offsets of its METADATA.XML,
// the bands its statistics show filled with no-data declared bad, and its
// pixel, cloud, cirrus and cloud-shadow masks as the product's masks.
func (enmap) Open(name string) (*geo.Scene, bool, error) {
	d, ok := findEnMAP(name)
	if !ok {
		return nil, false, nil
	}
	data, err := geo.ReadFile(d.metadata, maxMetadataBytes)
	if err != nil {
		return nil, true, fmt.Errorf("open %s: %w", name, err)
	}
	md, err := parseEnMAPMetadata(data)
	if err != nil {
		return nil, true, fmt.Errorf("open %s: %w", name, err)
	}
	if md.Level != "" && md.Level != "L2A" {
		return nil, true, fmt.Errorf("open %s: an EnMAP %s product; pnec reads L2A (orthorectified reflectance)", name, md.Level)
	}
	img := d.file("SPECTRAL_IMAGE", enmapImageExts...)
	if img == "" {
		return nil, true, fmt.Errorf("open %s: no %s-SPECTRAL_IMAGE file (TIF, BSQ, BIL or BIP) beside its METADATA.XML", name, d.prefix)
	}
	var masks []geo.QualityMaskSource
	for _, m := range []struct {
		label, file string
		perBand     bool
	}{
		// QL_PIXELMASK has a plane per spectral band (defective pixels of
		// that band); the others one plane.
		{"EnMAP pixel mask", "QL_PIXELMASK", true},
		{"EnMAP cloud mask", "QL_QUALITY_CLOUD", false},
		{"EnMAP cirrus mask", "QL_QUALITY_CIRRUS", false},
		{"EnMAP cloud shadow mask", "QL_QUALITY_CLOUDSHADOW", false},
	} {
		if f := d.file(m.file, ".TIF", ".GEOTIFF"); f != "" {
			masks = append(masks, geo.QualityMaskSource{Label: m.label, PerBand: m.perBand, Open: func() (*geo.Scene, error) { return geo.OpenAs(f, f) }})
		}
	}
	s, err := geo.OpenAs(name, img)
	if err != nil {
		return nil, true, err
	}
	if err := s.Redescribe(func(in *geo.Info) ([]geo.QualityMaskSource, error) { return masks, applyEnMAP(in, md) }); err != nil {
		s.Close()
		return nil, true, fmt.Errorf("%s: %w", name, err)
	}
	if !md.HasStats {
		if err := enmapBadBandsFromData(s); err != nil {
			s.Close()
			return nil, true, fmt.Errorf("%s: %w", name, err)
		}
	}
	return s, true, nil
}

// enmapFill is the value EnMAP L2A's Int16 spectral image holds outside
// the footprint and in the bands filled with no-data (EnMAP-Box's importer
// and DLR's products); a GeoTIFF without a no-data tag still holds it.
const enmapFill = -32768

// enmapSampleSide bounds the sample enmapBadBandsFromData reads: at most
// enmapSampleSide^2 pixels of every band.
const enmapSampleSide = 256

// enmapBadBandsFromData declares bad the bands that hold the no-data value
// in every pixel of the footprint (pixels where some band holds data),
// judged on a regular sample of the spectral image: the evidence where
// METADATA.XML has no bandStatistics.
func enmapBadBandsFromData(s *geo.Scene) error {
	in := s.Info()
	bufCols, bufRows := min(in.Cols, enmapSampleSide), min(in.Rows, enmapSampleSide)
	nb := in.Bands
	data, err := s.ReadSample(bufCols, bufRows)
	if err != nil {
		return fmt.Errorf("read a sample of the spectral image for its bad bands: %w", err)
	}
	isFill := func(b int, v float32) bool {
		return math.IsNaN(float64(v)) || (in.HasNoData[b] && v == float32(in.NoData[b]))
	}
	withData := make([]int, nb)
	footprint := 0
	for p := range bufCols * bufRows {
		px := data[p*nb : (p+1)*nb]
		inside := false
		for b, v := range px {
			if !isFill(b, v) {
				withData[b]++
				inside = true
			}
		}
		if inside {
			footprint++
		}
	}
	if footprint == 0 {
		return nil // no data at all: nothing tells the bands apart
	}
	var bad []bool
	for b, n := range withData {
		if n == 0 {
			if bad == nil {
				bad = make([]bool, nb)
			}
			bad[b] = true
		}
	}
	return s.Redescribe(func(in *geo.Info) ([]geo.QualityMaskSource, error) {
		in.BadBands = bad
		in.BadBandSource = fmt.Sprintf("the data (METADATA.XML has no bandStatistics): bands holding no-data in all %d pixels of the footprint in a sample of %d x %d", footprint, bufCols, bufRows)
		return nil, nil
	})
}

// applyEnMAP sets the metadata's band set, gains and bad bands on the
// Info of a scene opened from the spectral image.
func applyEnMAP(in *geo.Info, md enmapMetadata) error {
	if len(md.CentresNM) != in.Bands {
		return fmt.Errorf("METADATA.XML describes %d bands, the spectral image has %d", len(md.CentresNM), in.Bands)
	}
	in.Product, in.SpectralSource, in.WavelengthUnits = ProductEnMAPL2A, "EnMAP METADATA.XML", "nm"
	in.WavelengthsNM, in.FWHMNM = md.CentresNM, md.FWHMNM
	in.BadBands = nil
	for i, sd := range md.BandStdDev {
		if sd == 0 {
			if in.BadBands == nil {
				in.BadBands = make([]bool, in.Bands)
			}
			in.BadBands[i] = true
			in.BadBandSource = "EnMAP METADATA.XML bandStatistics (stdDeviation 0: filled with no-data)"
		}
	}
	// The spectral image's fill value, when its GeoTIFF (or header) does
	// not say it: without it the background would read as reflectance.
	for i := range in.Bands {
		if !in.HasNoData[i] {
			in.NoData[i], in.HasNoData[i] = enmapFill, true
		}
	}
	if in.IdentityGains() {
		for i := range in.Bands {
			in.Scale[i], in.Offset[i] = md.Gains[i], md.Offsets[i]
		}
	}
	// L2A is reflectance; DN x gain (1e-4) + offset is 0-1.
	in.Radiometry = spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 1}
	if in.IdentityGains() {
		in.Radiometry.Scale = reflectanceFactor
	}
	if md.StartTime != "" {
		if in.Metadata == nil {
			in.Metadata = map[string]string{}
		}
		in.Metadata["ACQUISITIONDATETIME"] = md.StartTime
	}
	return nil
}

// truncate shortens s to n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// nanSlice is n NaNs.
func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}
