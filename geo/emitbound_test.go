package geo_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
)

// scatteredEMIT writes a small EMIT L2A file (NetCDF-4, compressed; the
// reflectance never written, so all fill) whose lookup table sends
// neighbouring ortho pixels to opposite corners of a down x cross x nb
// sensor cube.
func scatteredEMIT(t *testing.T, dir string, down, cross, nb, ortho int) string {
	t.Helper()
	if err := fixture.NeedPython("numpy", "netCDF4"); err != nil {
		t.Skip(err)
	}
	path := filepath.Join(dir, "EMIT_L2A_RFL_001_20230316T045133_2307503_001.nc")
	script := `
import sys
import numpy as np
from netCDF4 import Dataset
path, down, cross, nb, ortho = sys.argv[1], *map(int, sys.argv[2:])
ds = Dataset(path, "w", format="NETCDF4")
ds.geotransform = np.array([30.1, 0.0005, 0, 25.4, 0, -0.0005])
ds.createDimension("downtrack", down)
ds.createDimension("crosstrack", cross)
ds.createDimension("bands", nb)
ds.createDimension("ortho_y", ortho)
ds.createDimension("ortho_x", ortho)
sbp = ds.createGroup("sensor_band_parameters")
v = sbp.createVariable("wavelengths", "f4", ("bands",))
v[...] = np.linspace(400, 2500, nb)
ds.createVariable("reflectance", "f4", ("downtrack", "crosstrack", "bands"), fill_value=-9999.0, zlib=True, chunksizes=(64, 64, nb))
loc = ds.createGroup("location")
y, x = np.indices((ortho, ortho))
corner = (x + y) % 2 == 0
for name, far in (("glt_x", cross), ("glt_y", down)):
    v = loc.createVariable(name, "i4", ("ortho_y", "ortho_x"), zlib=True)
    v[...] = np.where(corner, 1, far).astype("i4")
ds.close()
`
	sp := filepath.Join(dir, "scattered.py")
	if err := os.WriteFile(sp, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{sp, path}
	for _, v := range []int{down, cross, nb, ortho} {
		args = append(args, strconv.Itoa(v))
	}
	if out, err := exec.Command(fixture.Python, args...).CombinedOutput(); err != nil {
		t.Fatalf("write the EMIT file: %v\n%s", err, out)
	}
	return path
}

// TestEMITScatteredLookupRefused: an EMIT file whose lookup table scatters
// each block of the ortho grid over the whole sensor cube is refused when a
// window is read (pnec info's valid fraction, a classify tile), before the
// sensor window is allocated: 1000 x 1000 x 32 here, 122 MiB for one 64 x 64
// block (a 48 KB file of a 2500 x 2500 x 32 cube took 1.65 GB at
// --max-memory 300M).
func TestEMITScatteredLookupRefused(t *testing.T) {
	path := scatteredEMIT(t, t.TempDir(), 1000, 1000, 32, 256)
	if fi, err := os.Stat(path); err == nil {
		t.Logf("%s: %d bytes", filepath.Base(path), fi.Size())
	}
	s, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.ReadWindow(context.Background(), geo.Window{Cols: 64, Rows: 64})
	if err == nil || !strings.Contains(err.Error(), "geometry lookup table") || !strings.Contains(err.Error(), "1000 x 1000") {
		t.Errorf("read of a scattered block: %v, want the lookup table refused", err)
	}
	if _, _, err := s.ValidFractionEstimate(context.Background()); err == nil {
		t.Error("valid fraction of the scattered file: no error")
	}
}
