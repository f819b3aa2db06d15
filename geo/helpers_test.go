package geo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
)

// rerunTest runs the test named test of this test binary again, in a child
// process with the environment env, and returns what it wrote on stdout
// and stderr; the test fails when the child does. Process-wide settings
// (GDAL's handlers, its configuration, HDF5's threads) are tested this way.
func rerunTest(t *testing.T, test string, env []string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = env
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s child: %v\n%s%s", test, err, so.String(), se.String())
	}
	return so.String(), se.String()
}

// utm31 is EPSG:32631's WKT as GDAL writes it, for georeferenced test files.
func utm31(t testing.TB) string {
	t.Helper()
	sr, err := godal.NewSpatialRefFromEPSG(32631)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	wkt, err := sr.WKT()
	if err != nil {
		t.Fatal(err)
	}
	return wkt
}

// readWhole opens path with Open and reads its whole cols x rows window.
func readWhole(t testing.TB, path string, cols, rows int) Block {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	blk, err := s.ReadWindow(context.Background(), Window{Cols: cols, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	return blk
}

// testGT is a north-up 10 m grid in UTM 31N near Montpellier.
var testGT = [6]float64{570000, 10, 0, 4830000, 0, -10}

// pixelValue is the known value of band b at (r, c) in generated scenes.
func pixelValue(r, c, b int) float64 { return float64(r*100 + c*3 + b) }

// writeScene writes a cols x rows x bands GTiff of dtype with pixelValue
// through godal directly (not through the code under test) and returns its path.
func writeScene(t testing.TB, dir string, dtype godal.DataType, cols, rows, bands int, prep func(ds *godal.Dataset)) string {
	t.Helper()
	path := filepath.Join(dir, "scene-"+strings.ToLower(dtype.String())+".tif")
	ds, err := godal.Create(godal.GTiff, path, bands, dtype, cols, rows, godal.CreationOption("TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]float64, cols*rows*bands)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			for b := 0; b < bands; b++ {
				buf[(r*cols+c)*bands+b] = pixelValue(r, c, b)
			}
		}
	}
	if err := ds.Write(0, 0, buf, cols, rows); err != nil {
		t.Fatal(err)
	}
	if err := ds.SetGeoTransform(testGT); err != nil {
		t.Fatal(err)
	}
	if err := ds.SetProjection(utm31(t)); err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(ds)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// listDir returns the names in dir (for checks that no temporary file is left).
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// gdalinfoOutput runs gdalinfo (an independent reader) with args and returns
// its standard output. The test is skipped only when gdalinfo is not
// installed; a run that fails (a product GDAL cannot read) fails the test.
func gdalinfoOutput(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := runGDALInfo(args...)
	if errors.Is(err, exec.ErrNotFound) {
		t.Skipf("gdalinfo is not installed (apt-get install gdal-bin): %v", err)
	}
	if err != nil {
		t.Fatalf("gdalinfo %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runGDALInfo is gdalinfoOutput's run: standard output, or on failure
// standard error and the error (exec.ErrNotFound without gdalinfo).
func runGDALInfo(args ...string) ([]byte, error) {
	bin, err := exec.LookPath("gdalinfo")
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return stderr.Bytes(), err
	}
	return out, nil
}

// TestGDALInfoRunFailsOnUnreadable: the gdalinfo helper's run reports a
// file GDAL cannot read as a failure, not as gdalinfo missing (the
// helpers skipped on any gdalinfo failure, so an unreadable product
// passed as a skip).
func TestGDALInfoRunFailsOnUnreadable(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "p.tif")
	if err := os.WriteFile(bad, []byte("II*\x00 not a TIFF"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runGDALInfo("-json", bad)
	if errors.Is(err, exec.ErrNotFound) {
		t.Skip("gdalinfo is not installed")
	}
	if err == nil {
		t.Fatal("gdalinfo of a damaged file: no error")
	}
}
