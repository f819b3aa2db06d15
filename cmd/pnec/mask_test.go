package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/fixture"
)

// TestClassifyMaskCLI runs pnec classify --mask with a GeoJSON polygon in
// UTM 31N (the old GeoJSON crs member, which OGR reads) over the left half
// of the fixture scene, and reads the product with rasterio: no-data
// right of it; a mask elsewhere on Earth fails with one line.
func TestClassifyMaskCLI(t *testing.T) {
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	scene := goodScene(t, dir)
	gt := fixture.GeoRef.GeoTransform
	x0, x1 := gt[0]-50, gt[0]+20*gt[1] // columns 0..19
	y0, y1 := gt[3]+50, gt[3]+float64(fixture.Rows)*gt[5]-50
	poly := func(dx float64) string {
		return `{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::32631"}},` +
			`"features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[` +
			coords([][2]float64{{x0 + dx, y0}, {x1 + dx, y0}, {x1 + dx, y1}, {x0 + dx, y1}, {x0 + dx, y0}}) + `]]}}]}`
	}
	aoi := filepath.Join(dir, "aoi.geojson")
	os.WriteFile(aoi, []byte(poly(0)), 0o644)
	out := filepath.Join(dir, "map.tif")
	r := runPnec(t, 2*time.Minute, "classify", "--model", modelPath, "--mask", aoi, scene, out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "mask "+aoi+": 640 pixels inside") {
		t.Errorf("summary %q, want the mask's 640 pixels", r.stdout)
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import rasterio").Run(); err != nil {
		t.Log("no rasterio: the product is not read independently")
	} else {
		script := `import sys, rasterio
a = rasterio.open(sys.argv[1]).read(1, masked=True)
assert (~a.mask[:, :20]).all(), "left half not classified"
assert a.mask[:, 20:].all(), "right half classified"
print("ok")`
		if o, err := exec.Command("/usr/bin/python3", "-c", script, out).CombinedOutput(); err != nil || strings.TrimSpace(string(o)) != "ok" {
			t.Errorf("rasterio: %v\n%s", err, o)
		}
	}
	far := filepath.Join(dir, "far.geojson")
	os.WriteFile(far, []byte(poly(1e6)), 0o644)
	r = runPnec(t, time.Minute, "classify", "--model", modelPath, "--mask", far, scene, filepath.Join(dir, "far.tif"))
	if r.code != 1 || !strings.Contains(r.stderr, "far.geojson") || !strings.Contains(r.stderr, "does not overlap") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("mask outside the scene: exit %d, %q, want one line naming it", r.code, r.stderr)
	}
	r = runPnec(t, time.Minute, "classify", "--model", modelPath, "--mask", "masks/{key}.tif", scene, filepath.Join(dir, "p.tif"))
	if r.code != 1 || !strings.Contains(r.stderr, "for pnec batch") {
		t.Errorf("a batch pattern given to classify: exit %d, %q", r.code, r.stderr)
	}
}

func coords(pts [][2]float64) string {
	var s []string
	for _, p := range pts {
		s = append(s, "["+ftoa(p[0])+","+ftoa(p[1])+"]")
	}
	return strings.Join(s, ",")
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// TestMaskFIFORefused: a FIFO as --mask is refused at once, like a FIFO
// scene (GDAL waited on it until killed).
func TestMaskFIFORefused(t *testing.T) {
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	scene := goodScene(t, dir)
	fifo := filepath.Join(dir, "aoi.gpkg")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for name, args := range map[string][]string{
		"classify": {"classify", "--quiet", "--model", modelPath, "--mask", fifo, "--scene", scene, "--out", filepath.Join(dir, "out", "p.tif")},
		"batch": {"batch", "--quiet", "--model", modelPath, "--mask", fifo, "--out-dir", filepath.Join(dir, "out"), "--report", filepath.Join(dir, "r.jsonl"),
			"--datetime", "2024-06-01", scene},
	} {
		os.MkdirAll(filepath.Join(dir, "out"), 0o755)
		r := runPnec(t, 20*time.Second, args...)
		checkCleanFailure(t, r, fifo, "not a regular file: a fifo", filepath.Join(dir, "out"))
		if r.elapsed > 10*time.Second {
			t.Errorf("%s took %s, want under 10 s", name, r.elapsed.Round(time.Millisecond))
		}
	}
}

// TestLargeGeoJSONMaskWithinBudget: a GeoJSON mask of one 2M-vertex polygon
// (50 MB) under --max-memory 200M is refused with GDAL's reason and the limit
// pnec set, within the budget (GDAL's default object limit let it
// parse to 685 MB RSS at a 320M budget, and the run then said "not recognized
// as a supported file format").
func TestLargeGeoJSONMaskWithinBudget(t *testing.T) {
	bin := pnecBinary(t)
	modelPath := fixture.Model(t)
	dir := t.TempDir()
	scene := goodScene(t, dir)
	gt := fixture.GeoRef.GeoTransform
	cx, cy := gt[0]+20*gt[1], gt[3]+16*gt[5]
	mask := filepath.Join(dir, "aoi.geojson")
	f, err := os.Create(mask)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(`{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::32631"}},` +
		`"features":[{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[`)
	const n = 2_000_000
	for i := 0; i <= n; i++ {
		a := 2 * math.Pi * float64(i%n) / n
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "[%.3f,%.3f]", cx+100*math.Cos(a), cy+100*math.Sin(a))
	}
	w.WriteString("]]}}]}")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	const budget = 200 << 20
	args := []string{"classify", "--quiet", "--model", modelPath, "--scene", scene, "--mask", mask,
		"--out", filepath.Join(dir, "out.tif"), "--max-memory", fmt.Sprint(budget)}
	// The peak through GNU time, which forks pnec from itself: a child the
	// test process starts directly (Go's exec shares the parent's memory
	// until exec) reports the test process's own peak RSS when it is larger.
	timeBin, terr := exec.LookPath("/usr/bin/time")
	var cmd *exec.Cmd
	rssFile := filepath.Join(dir, "rss.txt")
	if terr == nil {
		cmd = exec.Command(timeBin, append([]string{"-f", "%M", "-o", rssFile, bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("exit %v: %s", err, out)
	if err == nil || !strings.Contains(string(out), "OGR_GEOJSON_MAX_OBJ_SIZE") || !strings.Contains(string(out), "pnec set") {
		t.Errorf("want a refusal with GDAL's reason (OGR_GEOJSON_MAX_OBJ_SIZE) and the limit pnec set")
	}
	if terr != nil {
		t.Skip("GNU time (/usr/bin/time) is not installed: the peak RSS is not checked (apt-get install time)")
	}
	b, err := os.ReadFile(rssFile)
	fields := strings.Fields(string(b)) // "Command exited with non-zero status 1" first
	kib, perr := int64(0), error(nil)
	if len(fields) > 0 {
		kib, perr = strconv.ParseInt(fields[len(fields)-1], 10, 64)
	}
	if err != nil || perr != nil {
		t.Fatalf("GNU time's peak RSS: %v %v %q", err, perr, b)
	}
	t.Logf("peak RSS %d MiB for --max-memory %d MiB", kib>>10, budget>>20)
	if kib<<10 > budget {
		t.Errorf("peak RSS %d MiB over --max-memory %d MiB", kib>>10, budget>>20)
	}
}
