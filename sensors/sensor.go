package sensors

import (
	"slices"
	"sync"

	"github.com/pnec/pnec/geo"
)

// Sensor reads one imaging spectrometer's deliveries as their provider
// ships them. A delivery is either a raster GDAL reads as it is (an ENVI
// cube, a GeoTIFF: the sensor completes what GDAL does not read, in
// Describe) or files GDAL cannot read as one raster (NetCDF, HDF5: the
// sensor builds the cube through geo's multidimensional API, in Open).
// Either way the sensor gives the scene its product name, band set
// (centres, widths, bad bands), radiometry, acquisition time and quality
// masks, as plain data (geo.Info, geo.Cube, geo.QualityMaskSource); geo
// alone opens and reads the files.
//
// Each method recognises the sensor's deliveries cheaply (by name, then a
// look at the file) and answers ok false for anything else, so the
// registry can try every sensor in turn.
type Sensor interface {
	// Name is the sensor's name, as spectral.Sensors and docs/sensors.md
	// give it ("AVIRIS-3").
	Name() string
	// Open opens name when it is a delivery the sensor reads through its
	// own cube (geo.NewCubeScene): its band set, radiometry and
	// acquisition time in the cube's Info, its quality masks in the
	// cube's QualityMasks. ok false when name is not such a delivery; an
	// error with ok true when it is one and cannot be read.
	Open(name string) (s *geo.Scene, ok bool, err error)
	// Describe completes in, a raster GDAL opened as it is (Name, Driver,
	// size, what the raster's own metadata gave), when it is a delivery
	// of the sensor: Product, and what GDAL did not read of the band set,
	// radiometry, gains (Scale, Offset), no-data and acquisition time
	// (Metadata); it returns the quality masks the delivery brings. ok
	// false when in is not its delivery.
	Describe(in *geo.Info) (masks []geo.QualityMaskSource, ok bool, err error)
	// Companion reports whether a file name (no folder) is a file of the
	// sensor's deliveries that belongs to another file's scene (a mask, a
	// quicklook), so that a batch given the folder does not take it as a
	// scene.
	Companion(base string) bool
}

// DeliverySensor is a Sensor some of whose deliveries are a folder or an
// archive of files read as one scene (EnMAP's), which a batch given the
// folder takes as one scene rather than the rasters inside it. As with
// database/sql's optional driver interfaces, a sensor implements it only
// when it has such deliveries.
type DeliverySensor interface {
	Sensor
	// IsDelivery reports whether path (a folder or a file) is such a
	// delivery; cheaply, as it is asked of every folder a batch lists.
	IsDelivery(path string) bool
}

var (
	mu         sync.RWMutex
	registered []Sensor
)

// Register adds a sensor to the registry (each sensor's file does, in its
// init); a sensor of a name already registered replaces it. geo.Open,
// geo.IsCompanion and everything built on them (info, train, classify,
// evaluate, batch, quality masks) then recognise its deliveries.
func Register(s Sensor) {
	mu.Lock()
	defer mu.Unlock()
	if i := slices.IndexFunc(registered, func(r Sensor) bool { return r.Name() == s.Name() }); i >= 0 {
		registered[i] = s
		return
	}
	registered = append(registered, s)
}

// Sensors are the registered sensors, in the order they are tried.
func Sensors() []Sensor {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(registered)
}

// Open opens name as the delivery of the first registered sensor whose
// Open recognises it (ok false: none does; geo.Open then reads it as a
// raster).
func Open(name string) (s *geo.Scene, ok bool, err error) {
	for _, r := range Sensors() {
		if s, ok, err = r.Open(name); ok {
			return s, true, err
		}
	}
	return nil, false, nil
}

// Describe completes in as the first registered sensor that recognises
// the raster does (see Sensor.Describe); ok false when none does.
func Describe(in *geo.Info) ([]geo.QualityMaskSource, bool, error) {
	for _, r := range Sensors() {
		if masks, ok, err := r.Describe(in); ok {
			return masks, true, err
		}
	}
	return nil, false, nil
}

// Companion reports whether a registered sensor takes the file name (no
// folder) for a companion of another file's scene.
func Companion(base string) bool {
	for _, r := range Sensors() {
		if r.Companion(base) {
			return true
		}
	}
	return false
}

// IsDelivery reports whether a registered sensor (a DeliverySensor) takes
// path for one of its deliveries of several files.
func IsDelivery(path string) bool {
	for _, r := range Sensors() {
		if d, ok := r.(DeliverySensor); ok && d.IsDelivery(path) {
			return true
		}
	}
	return false
}

// The registry is geo's door to the sensors: geo.Open, geo.IsCompanion and
// geo.IsDelivery call it through geo.ProductHooks.
func init() {
	geo.SetProductHooks(geo.ProductHooks{Open: Open, Describe: Describe, Companion: Companion, Delivery: IsDelivery})
}
