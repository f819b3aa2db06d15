package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
)

// gdalExternal stands in for the "external" step of GDAL 3.13's pipelines
// (gdal raster pipeline ... ! external --command "..." ! ...), which
// Debian 12's GDAL 3.6 does not have. It does what that step does (read
// from GDAL's apps/gdalalg_external.cpp): the previous step's raster is
// materialised as a GeoTIFF input_<pid>_<n>.tif in the temporary directory
// (gdal_translate stands in for the materialize step), <INPUT> and
// <OUTPUT> are replaced by single-quoted temporary file names (the output
// one output_<...>.tif), the command runs through the shell (popen) with
// its standard output read and dropped, a non-zero exit status fails the
// step, and the output file is then opened with GDAL for the next step.
// It returns the output file, the exit status and standard error.
func gdalExternal(t *testing.T, tmp, command, previous string) (string, int, string) {
	t.Helper()
	in := filepath.Join(tmp, fmt.Sprintf("input_%d_1.tif", os.Getpid()))
	if out, err := exec.Command("gdal_translate", "-q", "-of", "GTiff", "-co", "COPY_SRC_OVERVIEWS=NO", previous, in).CombinedOutput(); err != nil {
		t.Fatalf("materialise the input: %v\n%s", err, out)
	}
	out := filepath.Join(tmp, fmt.Sprintf("output_%d_1.tif", os.Getpid()))
	command = strings.ReplaceAll(command, "<INPUT>", "'"+in+"'")
	command = strings.ReplaceAll(command, "<OUTPUT>", "'"+out+"'")
	cmd := exec.Command("/bin/sh", "-c", command)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		// GDAL logs each line at debug level.
	}
	code := 0
	if err := cmd.Wait(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	os.Remove(in)
	return out, code, stderr.String()
}

// TestGDALPipelineContract: pnec classify fits the external step's
// contract: positional INPUT OUTPUT, a GeoTIFF in, a GeoTIFF out at
// exactly the OUTPUT name that GDAL opens for the next step, a non-zero
// exit status (and no output file) on failure. The temporary directory's
// name has a space, which the quoting must carry.
func TestGDALPipelineContract(t *testing.T) {
	bin := pnecBinary(t)
	if _, err := exec.LookPath("gdal_translate"); err != nil {
		t.Skip("gdal_translate not installed (apt-get install gdal-bin)")
	}
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	tmp := filepath.Join(dir, "gdal tmp")
	os.MkdirAll(tmp, 0o755)
	scene := goodScene(t, dir)
	command := fmt.Sprintf("%s classify --model %s -q --no-thumbnail <INPUT> <OUTPUT>", bin, modelPath)
	out, code, stderr := gdalExternal(t, tmp, command, scene)
	if code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr)
	}
	s, err := geo.Open(out) // the next step opens it
	if err != nil {
		t.Fatalf("the next step cannot open %s: %v", out, err)
	}
	info := s.Info()
	s.Close()
	if info.Bands != 2 || info.Cols != fixture.Cols || info.Rows != fixture.Rows || info.Driver != "GTiff" {
		t.Errorf("got %s %dx%dx%d, want a 2-band GeoTIFF of the input's %dx%d", info.Driver, info.Cols, info.Rows, info.Bands, fixture.Cols, fixture.Rows)
	}
	if info.GeoTransform != fixture.GeoRef.GeoTransform || info.EPSG != fixture.GeoRef.EPSG {
		t.Errorf("got georeference %v EPSG %d, want the input's", info.GeoTransform, info.EPSG)
	}
	os.Remove(out) // what GDAL removes after the pipeline
	// pnec's companions stay in the temporary directory (docs/gdal-pipeline.md).
	ents, _ := os.ReadDir(tmp)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	base := strings.TrimSuffix(filepath.Base(out), ".tif")
	if strings.Join(left, " ") != base+".qml "+base+".tif.aux.xml" {
		t.Errorf("left in the temporary directory: %v, want only the style and the PAM sidecar", left)
	}

	// Failure: a scene of another band count. GDAL fails the pipeline on
	// the exit status and would find no output file.
	four := filepath.Join(dir, "four.tif")
	writeTyped(t, four, fixture.Rows, fixture.Cols, 4, geo.Float32, nil, make([]float32, fixture.Rows*fixture.Cols*4))
	out, code, stderr = gdalExternal(t, tmp, command, four)
	if code == 0 || !strings.Contains(stderr, "band") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("a scene of 4 bands: exit %d, stderr %q, want non-zero and one line", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("output %s exists after a failure", out)
	}
}
