package sensors

import (
	"path"
	"regexp"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/spectral"
)

// DESIS (DLR, on the ISS): L2A reflectance as a GeoTIFF
// (DESIS-HSI-L2A-..._SPECTRAL_IMAGE.tif) with an ENVI header beside it
// that holds what the GeoTIFF does not: band centres and widths, gains,
// offsets and no-data (geo reads the header: ReadENVIHeaderBeside). This
// reader names the product and its radiometry. docs/sensors.md says what is
// verified; the fixture is internal/fixture's WriteDESIS.

// ProductDESISL2A is the product name (geo.Info.Product) of DESIS's L2A
// deliveries.
const ProductDESISL2A = "DESIS L2A"

func init() { Register(desis{}) }

type desis struct{}

var _ Sensor = desis{}

var (
	// desisName is a DESIS L2A file's name.
	desisName = regexp.MustCompile(`(?i)^DESIS-HSI-L2A-`)
	// desisCompanion is a DESIS quality layer, part of the spectral
	// image's scene.
	desisCompanion = regexp.MustCompile(`(?i)^DESIS-HSI-L2A-.*-QUALITY.*\.tif$`)
)

func (desis) Name() string { return "DESIS" }

func (desis) Companion(base string) bool { return desisCompanion.MatchString(base) }

// Open: a DESIS delivery is a GeoTIFF GDAL opens (Describe completes it).
func (desis) Open(string) (*geo.Scene, bool, error) { return nil, false, nil }

// Describe recognises a DESIS L2A raster by its name. geo read the ENVI
// header beside a local GeoTIFF already; on a network file system it reads
// it only when asked, which a DESIS name warrants.
func (desis) Describe(in *geo.Info) ([]geo.QualityMaskSource, bool, error) {
	if !desisName.MatchString(path.Base(in.Name)) {
		return nil, false, nil
	}
	if in.Driver == "GTiff" && geo.IsRemote(in.Name) {
		if err := geo.ReadENVIHeaderBeside(in); err != nil {
			return nil, true, err
		}
	}
	in.Product = ProductDESISL2A
	if !in.Radiometry.Known() {
		// DN x gain + offset is reflectance 0-1 (DLR's DESIS L2A product
		// specification); without gains, the DN are x10000.
		in.Radiometry = spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: reflectanceFactor}
		if !in.IdentityGains() {
			in.Radiometry.Scale = 1
		}
	}
	return nil, true, nil
}
