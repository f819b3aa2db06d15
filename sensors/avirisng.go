package sensors

import (
	"path"
	"regexp"

	"github.com/pnec/pnec/geo"
)

// AVIRIS-NG (JPL): L2 reflectance as ENVI cubes (angYYYYMMDDtHHNNSS_..._rfl
// or _corr with its .hdr), which GDAL's ENVI driver reads with their band
// set: this reader names the product and its radiometry. docs/sensors.md
// says what is verified; the fixture is internal/fixture's WriteAVIRISNG.

// ProductAVIRISNG is the product name (geo.Info.Product) of AVIRIS-NG's
// deliveries.
const ProductAVIRISNG = "AVIRIS-NG L2"

func init() { Register(avirisNG{}) }

type avirisNG struct{}

var _ Sensor = avirisNG{}

// avirisNGName is an AVIRIS-NG reflectance file's name.
var avirisNGName = regexp.MustCompile(`^ang\d{8}t\d{6}.*(rfl|corr)`)

func (avirisNG) Name() string { return "AVIRIS-NG" }

// Companion: an AVIRIS-NG delivery is one file (and an ENVI header).
func (avirisNG) Companion(string) bool { return false }

// Open: an AVIRIS-NG cube is a raster GDAL opens (Describe completes it).
func (avirisNG) Open(string) (*geo.Scene, bool, error) { return nil, false, nil }

// Describe recognises an ENVI reflectance cube by its name: GDAL read its
// band set from the header; the values are reflectance 0-1 unless the
// header says otherwise.
func (avirisNG) Describe(in *geo.Info) ([]geo.QualityMaskSource, bool, error) {
	if in.Driver != "ENVI" || !avirisNGName.MatchString(path.Base(in.Name)) {
		return nil, false, nil
	}
	in.Product = ProductAVIRISNG
	if !in.Radiometry.Known() {
		in.Radiometry = reflectance01
	}
	return nil, true, nil
}
