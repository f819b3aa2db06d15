package sensors_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/sensors"
	"github.com/pnec/pnec/spectral"
)

// sensorNamed is the registered sensor of that name.
func sensorNamed(t *testing.T, name string) sensors.Sensor {
	t.Helper()
	for _, s := range sensors.Sensors() {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no sensor %s registered", name)
	return nil
}

// aviris3ENVI writes an ENVI reflectance cube named as AVIRIS-3's (the
// AVIRIS-NG fixture's cube and header under an AV3 name).
func aviris3ENVI(t *testing.T) (string, fixture.Delivery) {
	t.Helper()
	d, err := fixture.WriteAVIRISNG(t.TempDir(), fixture.AVIRISOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	av3 := filepath.Join(filepath.Dir(d.Path), "AV320230915t205716_005_L2A_OE_main_27577724_RFL_ORT")
	for _, ext := range []string{"", ".hdr"} {
		if err := os.Rename(d.Path+ext, av3+ext); err != nil {
			t.Fatal(err)
		}
	}
	return av3, d
}

// TestRegistryReadsAVIRIS3: the registry recognises both AVIRIS-3
// deliveries, and geo.Open reads them through it: the NetCDF through the
// sensor's own cube (band table, fill value, grid), the ENVI cube by its
// name (reflectance 0-1).
func TestRegistryReadsAVIRIS3(t *testing.T) {
	av3 := sensorNamed(t, "AVIRIS-3")
	t.Run("NetCDF", func(t *testing.T) {
		d, err := fixture.WriteAVIRIS3NC(t.TempDir(), fixture.AVIRIS3Options{Seed: 1})
		fixture.SkipWithoutPython(t, err)
		s, ok, err := av3.Open(d.Path)
		if !ok || err != nil {
			t.Fatalf("AVIRIS-3 Open of its NetCDF: ok %v, %v", ok, err)
		}
		s.Close()
		in := fixture.SceneInfo(t, d.Path)
		if in.Product != sensors.ProductAVIRIS3 || in.Driver != "netCDF" || !slices.Equal(in.WavelengthsNM, d.CentresNM) ||
			in.Radiometry != (spectral.Radiometry{Quantity: spectral.QuantityReflectance, Scale: 1}) {
			t.Errorf("geo.Open: %s %s, %d centres, %+v; want %s netCDF, the fixture's %d centres, reflectance 0-1",
				in.Product, in.Driver, len(in.WavelengthsNM), in.Radiometry, sensors.ProductAVIRIS3, len(d.CentresNM))
		}
		if in.GeoTransform != d.GeoRef.GeoTransform || !in.HasGeoTransform {
			t.Errorf("geotransform %v, want %v", in.GeoTransform, d.GeoRef.GeoTransform)
		}
		if !in.HasNoData[0] || in.NoData[0] != -9999 {
			t.Errorf("no-data %v (%v), want the _FillValue -9999", in.NoData[0], in.HasNoData[0])
		}
	})
	t.Run("ENVI", func(t *testing.T) {
		name, d := aviris3ENVI(t)
		in := fixture.SceneInfo(t, name)
		if in.Product != sensors.ProductAVIRIS3 || in.Driver != "ENVI" || in.Radiometry.Scale != 1 || len(in.WavelengthsNM) != len(d.CentresNM) {
			t.Errorf("geo.Open: %s %s %+v, %d centres; want %s ENVI reflectance 0-1, %d centres",
				in.Product, in.Driver, in.Radiometry, len(in.WavelengthsNM), sensors.ProductAVIRIS3, len(d.CentresNM))
		}
	})
}

// TestRegistryRefusesOthers: AVIRIS-3's reader says "not mine" to other
// deliveries (EMIT's NetCDF, AVIRIS-NG's ENVI cube, a plain GeoTIFF, a
// missing file), which geo then reads as before.
func TestRegistryRefusesOthers(t *testing.T) {
	av3 := sensorNamed(t, "AVIRIS-3")
	dir := t.TempDir()
	emit, err := fixture.WriteEMIT(filepath.Join(dir, "emit"), fixture.EMITOptions{Seed: 1})
	fixture.SkipWithoutPython(t, err)
	ang, err := fixture.WriteAVIRISNG(filepath.Join(dir, "ang"), fixture.AVIRISOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	tif := fixture.Scene(t, filepath.Join(dir, "AV320230915t205716_RFL.tif"), 1) // an AVIRIS-3 name, but a GeoTIFF
	for _, c := range []struct{ name, path, product string }{
		{"EMIT NetCDF", emit.Path, sensors.ProductEMITL2A},
		{"AVIRIS-NG ENVI", ang.Path, sensors.ProductAVIRISNG},
		{"GeoTIFF", tif, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s, ok, err := av3.Open(c.path); ok || s != nil || err != nil {
				t.Errorf("AVIRIS-3 Open took %s: ok %v, %v", c.path, ok, err)
			}
			in := fixture.SceneInfo(t, c.path)
			if in.Product != c.product {
				t.Errorf("geo.Open read it as %q, want %q", in.Product, c.product)
			}
			in.Product = ""
			if _, ok, err := av3.Describe(&in); ok || err != nil || in.Product != "" {
				t.Errorf("AVIRIS-3 Describe took it: ok %v, %v, product %q", ok, err, in.Product)
			}
		})
	}
	if _, ok, err := sensors.Open(filepath.Join(dir, "absent.nc")); ok || err != nil {
		t.Errorf("the registry took a missing file: ok %v, %v", ok, err)
	}
}

// oneFile is a whole sensor in one file's worth of code, the way a new
// sensor is added: GeoTIFFs named ONEF_*.tif with their band centres,
// a gain, and a quality mask ONEF_*_MASK.tif beside them (a companion).
type oneFile struct{}

var (
	oneFileScene = regexp.MustCompile(`^ONEF_[a-z0-9]+\.tif$`)
	oneFileMask  = regexp.MustCompile(`^ONEF_[a-z0-9]+_MASK\.tif$`)
)

const oneFileGain = 2

func (oneFile) Name() string                          { return "one-file test sensor" }
func (oneFile) Open(string) (*geo.Scene, bool, error) { return nil, false, nil }
func (oneFile) Companion(base string) bool            { return oneFileMask.MatchString(base) }
func (oneFile) Describe(in *geo.Info) ([]geo.QualityMaskSource, bool, error) {
	if in.Driver != "GTiff" || !oneFileScene.MatchString(filepath.Base(in.Name)) {
		return nil, false, nil
	}
	in.Product = "ONEF L2"
	in.WavelengthsNM = make([]float64, in.Bands)
	for i := range in.Bands {
		in.WavelengthsNM[i] = 450 + 50*float64(i)
		in.Scale[i] = oneFileGain
	}
	mask := in.Name[:len(in.Name)-len(".tif")] + "_MASK.tif"
	return []geo.QualityMaskSource{{Label: "ONEF mask", Open: func() (*geo.Scene, error) { return geo.Open(mask) }}}, true, nil
}

// TestOneFileSensor: a sensor registered from one file is recognised by
// geo.Open (product, band set), its gain is applied to every read, its
// quality mask masks exactly the pixels it flags, and its mask file is a
// companion, not a scene.
func TestOneFileSensor(t *testing.T) {
	sensors.Register(oneFile{})
	sensors.Register(oneFile{}) // a second registration replaces the first
	n := 0
	for _, r := range sensors.Sensors() {
		if r.Name() == (oneFile{}).Name() {
			n++
		}
	}
	if n != 1 {
		t.Errorf("registered twice, listed %d times", n)
	}
	dir := t.TempDir()
	data, _ := fixture.SceneData(1)
	plain, scene := filepath.Join(dir, "plain.tif"), filepath.Join(dir, "ONEF_a1.tif")
	flags := make([]float32, fixture.Rows*fixture.Cols)
	for i := 0; i < len(flags); i += 7 {
		flags[i] = 1
	}
	for p, v := range map[string][]float32{plain: data, scene: data} {
		if err := fixture.WriteRaster(p, fixture.Rows, fixture.Cols, fixture.Bands, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := fixture.WriteRaster(filepath.Join(dir, "ONEF_a1_MASK.tif"), fixture.Rows, fixture.Cols, 1, flags); err != nil {
		t.Fatal(err)
	}
	if !geo.IsCompanion(filepath.Join(dir, "ONEF_a1_MASK.tif")) || geo.IsCompanion(scene) {
		t.Error("the mask is not a companion, or the scene is")
	}
	read := func(name string, masks bool) (geo.Info, geo.Block, []string) {
		s, err := geo.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if masks {
			if err := s.UseProductQualityMasks(); err != nil {
				t.Fatal(err)
			}
		}
		b, err := s.ReadWindow(context.Background(), geo.Window{Cols: fixture.Cols, Rows: fixture.Rows})
		if err != nil {
			t.Fatal(err)
		}
		return s.Info(), b, s.ProductQualityMasks()
	}
	in, got, names := read(scene, false)
	if in.Product != "ONEF L2" || len(in.WavelengthsNM) != fixture.Bands || in.WavelengthsNM[1] != 500 || !slices.Equal(names, []string{"ONEF mask"}) {
		t.Errorf("geo.Open: product %q, centres %v, masks %v", in.Product, in.WavelengthsNM, names)
	}
	_, want, _ := read(plain, false)
	for i, v := range want.Data {
		if got.Data[i] != v*oneFileGain || got.Valid[i/fixture.Bands] != want.Valid[i/fixture.Bands] {
			t.Fatalf("value %d: %v, want the plain read %v x the gain %d", i, got.Data[i], v, oneFileGain)
		}
	}
	_, masked, _ := read(scene, true)
	for p, ok := range masked.Valid {
		if ok != (want.Valid[p] && flags[p] == 0) {
			t.Fatalf("pixel %d: valid %v with the mask, want %v (flag %v)", p, ok, !ok, flags[p])
		}
	}
}

// TestAVIRIS3IrregularCoordinates: without a grid
// mapping variable, the geotransform comes from the easting and northing
// coordinates only when they form a regular grid; unordered eastings were
// taken from their first two values (a negative pixel) and read, exit 0.
// Ordered ones still give the fixture's geotransform.
func TestAVIRIS3IrregularCoordinates(t *testing.T) {
	av3 := sensorNamed(t, "AVIRIS-3")
	for _, tc := range []struct {
		name, edit string // Python on the netCDF4 Dataset ds
		want       string // "" = read, with the fixture's geotransform
	}{
		{"regular", "", ""},
		{"unordered eastings", "e = ds['easting'][:].copy(); e[[1, 2]] = e[[2, 1]]; ds['easting'][:] = e", "easting coordinates are not a regular grid"},
		{"irregular northings", "n = ds['northing'][:].copy(); n[-1] += 0.5 * (n[1] - n[0]); ds['northing'][:] = n", "northing coordinates are not a regular grid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := fixture.WriteAVIRIS3NC(t.TempDir(), fixture.AVIRIS3Options{Seed: 1})
			fixture.SkipWithoutPython(t, err)
			script := "import netCDF4\nds = netCDF4.Dataset(" + strconv.Quote(d.Path) + ", 'a')\nds.renameVariable('transverse_mercator', 'hidden_mapping')\n" + tc.edit + "\nds.close()\n"
			if out, err := exec.Command("/usr/bin/python3", "-c", script).CombinedOutput(); err != nil {
				t.Fatalf("python: %v\n%s", err, out)
			}
			s, ok, err := av3.Open(d.Path)
			if tc.want == "" {
				if !ok || err != nil {
					t.Fatalf("Open: ok %v, %v", ok, err)
				}
				defer s.Close()
				if gt := s.Info().GeoTransform; gt != d.GeoRef.GeoTransform {
					t.Errorf("geotransform %v, want %v", gt, d.GeoRef.GeoTransform)
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("read %v, want a refusal saying %q", s.Info().GeoTransform, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), d.Path) {
				t.Errorf("got %q, want one naming %s and saying %q", err, d.Path, tc.want)
			}
		})
	}
}
