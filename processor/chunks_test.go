package processor_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/processor"
	_ "github.com/pnec/pnec/sensors" // AVIRIS-3's reader, through geo.Open
	"github.com/pnec/pnec/tiling"
)

// bigChunkScript writes an AVIRIS-3 orthorectified NetCDF (the layout of
// fixture.WriteAVIRIS3NC) of 8 bands x 1024 x 1024 stored as one chunk
// (8 x 1024 x 1024 Float32, 32 MiB decoded); constant values, so the file
// is small.
const bigChunkScript = `
import sys
import numpy as np
from netCDF4 import Dataset
out = sys.argv[1]
nb, rows, cols = 8, 1024, 1024
ds = Dataset(out, "w", format="NETCDF4")
ds.createDimension("easting", cols)
ds.createDimension("northing", rows)
e = ds.createVariable("easting", "f8", ("easting",))
e.units, e.standard_name = "m", "projection_x_coordinate"
e[...] = 345000 + 3 * (np.arange(cols) + 0.5)
n = ds.createVariable("northing", "f8", ("northing",))
n.units, n.standard_name = "m", "projection_y_coordinate"
n[...] = 3820000 - 3 * (np.arange(rows) + 0.5)
tm = ds.createVariable("transverse_mercator", "i1")
tm.grid_mapping_name = "transverse_mercator"
tm.GeoTransform = "345000 3 0 3820000 0 -3"
tm.crs_wkt = tm.spatial_ref = 'PROJCS["WGS 84 / UTM zone 11N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",-117],PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1],AUTHORITY["EPSG","32611"]]'
grp = ds.createGroup("reflectance")
grp.createDimension("wavelength", nb)
w = grp.createVariable("wavelength", "f4", ("wavelength",))
w.units = "nm"
w[...] = np.linspace(450, 2400, nb)
f = grp.createVariable("fwhm", "f4", ("wavelength",))
f.units = "nm"
f[...] = np.full(nb, 10)
r = grp.createVariable("reflectance", "f4", ("wavelength", "northing", "easting"), fill_value=-9999.0, zlib=True, chunksizes=(nb, rows, cols))
r.grid_mapping = "transverse_mercator"
r[...] = np.full((nb, rows, cols), 0.25, dtype="<f4")
ds.close()
`

// TestBudgetCountsChunks: the memory plan of a NetCDF
// scene counts the decoded chunks a tile row's reads span. GDAL's block
// for such a scene is not its chunk, so the plan counted blocks of 256 x
// 64 for a scene stored in one 32 MiB chunk; a budget that held the tiles
// but not the chunk was taken (an AVIRIS-3 NetCDF of 1 GiB chunks ran past
// --max-memory 1.5G to 2.15 GB). Now that budget is refused with the
// smallest that works, the chunk named. Fails before: the budget that
// leaves the chunk out was accepted.
func TestBudgetCountsChunks(t *testing.T) {
	fixture.SkipWithoutPython(t, fixture.NeedPython("numpy", "netCDF4"))
	dir := t.TempDir()
	path := filepath.Join(dir, "AV320230915t205701_005_L2A_OE_main_27577724_RFL_ORT.nc")
	script := filepath.Join(dir, "write.py")
	if err := os.WriteFile(script, []byte(bigChunkScript), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(fixture.Python, script, path).CombinedOutput(); err != nil {
		t.Fatalf("write the NetCDF: %v: %s", err, out)
	}
	s, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	s.Close()
	const chunk = 8 * 1024 * 1024 * 4
	if want := (geo.Chunking{Cols: 1024, Rows: 1024, Bands: 8, Bytes: chunk}); info.Chunks != want {
		t.Fatalf("Info.Chunks %+v, want %+v", info.Chunks, want)
	}
	m := fixture.LoadModel(t)
	opts := processor.Options{}
	plan, _, err := processor.PlanSceneInfo(info, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Whole {
		t.Fatalf("a 1024 px scene planned whole: %+v", plan)
	}
	// The smallest budget the plan named with the chunks left out, as it
	// was: one tile in flight.
	noChunks := info
	noChunks.Chunks = geo.Chunking{}
	var be *processor.BudgetError
	if _, _, err := processor.PlanFlight(plan, noChunks, m, opts, 1<<20, tiling.DeviceMemory{}); !errors.As(err, &be) {
		t.Fatalf("a 1 MiB budget: %v, want a BudgetError", err)
	}
	tight := be.NeedBytes
	_, planned, err := processor.PlanFlight(plan, info, m, opts, tight, tiling.DeviceMemory{})
	if !errors.As(err, &be) {
		t.Fatalf("a budget of %d bytes (the plan without the chunk) for a scene of 32 MiB chunks: planned %d bytes, error %v; want a BudgetError", tight, planned, err)
	}
	if be.NeedBytes < tight+chunk {
		t.Errorf("need %d bytes, want at least %d (the plan without chunks %d + the 32 MiB chunk)", be.NeedBytes, tight+chunk, tight)
	}
	if msg := be.Error(); !strings.Contains(msg, "chunks of 1024 cols x 1024 rows x 8 bands") {
		t.Errorf("got %q, want the chunk's shape named", msg)
	}
	// The need it names works.
	if _, _, err := processor.PlanFlight(plan, info, m, opts, be.NeedBytes, tiling.DeviceMemory{}); err != nil {
		t.Errorf("at the named need %d bytes: %v", be.NeedBytes, err)
	}
}
