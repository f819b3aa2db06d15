package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/resources"
)

// The tests in this file run the pnec binary, built once, as a user would:
// a panic shows as exit status 2 with a stack trace, which they reject.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// pnecBinary builds cmd/pnec into a temporary directory (once per test process).
func pnecBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the pnec binary and trains a model: skipped with -short")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pnec-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "pnec")
		// As make build does: the Makefile's GODEBUG_DEFAULT compiled in
		// (TestMakefileBuildsInGODEBUGDefault holds the two together).
		cmd := exec.Command("go", "build", "-ldflags", "-X runtime.godebugDefault="+resources.GODEBUGDefault, "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "GOEXPERIMENT=simd")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := fixture.RunTests(m)
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

type runResult struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
	hung           bool // killed at its time limit (runProgram)
}

// runPnec runs the binary with a time limit.
func runPnec(t *testing.T, limit time.Duration, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, pnecBinary(t), args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	r := runResult{stdout: so.String(), stderr: se.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("pnec %s: still running after %s", strings.Join(args, " "), limit)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("pnec %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// writeTyped writes a GeoTIFF of the given type with the fixture georeference.
func writeTyped(t *testing.T, path string, rows, cols, bands int, dt geo.DataType, nodata *float64, data []float32) {
	t.Helper()
	writeGeoTIFF(t, path, geo.RasterSpec{Cols: cols, Rows: rows, Bands: bands, DataType: dt, GeoRef: fixture.GeoRef, NoData: nodata}, data)
}

// badInput is one row of the table.
type badInput struct {
	name string
	// make creates the input in dir and returns its name.
	make func(t *testing.T, dir string) string
	// want is a substring (lower case) the error must contain besides the
	// input's name; "" when only the name is required.
	want string
	// okFor lists commands for which the input is not an error (info on a
	// scene with the wrong band count for a model, say).
	okFor map[string]bool
	// okOut is a substring stdout must hold for a command in okFor.
	okOut map[string]string
	// fastFail: each command must finish within a few seconds.
	fastFail bool
	// stacOnly: a STAC document, an input of batch only.
	stacOnly bool
	// knownGap names commands that do not meet the requirement yet, with
	// what is wrong; those subtests are skipped with that message (so the
	// gap stays visible) until the owner of the command fixes it. None now.
	knownGap map[string]string
}

func goodScene(t *testing.T, dir string) string {
	return fixture.Scene(t, filepath.Join(dir, "good.tif"), 9)
}

var badInputs = []badInput{
	{name: "missing file", want: "no such file", make: func(t *testing.T, d string) string {
		return filepath.Join(d, "missing.tif")
	}},
	{name: "directory instead of file", make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "adir.tif")
		os.MkdirAll(p, 0o755)
		return p
	}},
	// A FIFO nobody writes blocked GDAL (and batch's STAC sniff) forever.
	{name: "FIFO instead of file", want: "not a regular file", fastFail: true, make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "pipe.tif")
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return p
	}},
	{name: "zero-byte file", make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "empty.tif")
		os.WriteFile(p, nil, 0o644)
		return p
	}},
	{name: "truncated GeoTIFF", okFor: map[string]bool{"tiles": true}, make: func(t *testing.T, d string) string {
		full := goodScene(t, t.TempDir())
		b, _ := os.ReadFile(full)
		p := filepath.Join(d, "truncated.tif")
		os.WriteFile(p, b[:len(b)/2], 0o644)
		return p
	}},
	{name: "random bytes", make: func(t *testing.T, d string) string {
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte(i*7919 + i*i*31)
		}
		p := filepath.Join(d, "random.tif")
		os.WriteFile(p, b, 0o644)
		return p
	}},
	{name: "text file", make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "notes.txt")
		os.WriteFile(p, []byte("acquired 2024-06-01, see scene.tif\n"), 0o644)
		return p
	}},
	{name: "wrong band count", want: "band", okFor: map[string]bool{"info": true}, make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "fourbands.tif")
		writeTyped(t, p, fixture.Rows, fixture.Cols, 4, geo.Float32, nil, make([]float32, fixture.Rows*fixture.Cols*4))
		return p
	}},
	{name: "integer scene all zeros without nodata", want: "every pixel is 0 in all bands and the scene sets no nodata",
		okFor: map[string]bool{"info": true, "tiles": true}, make: func(t *testing.T, d string) string {
			p := filepath.Join(d, "zeros.tif")
			writeTyped(t, p, fixture.Rows, fixture.Cols, fixture.Bands, geo.Int16, nil, make([]float32, fixture.Rows*fixture.Cols*fixture.Bands))
			return p
		}},
	{name: "NaN and Inf pixels everywhere", want: "no valid pixels", okFor: map[string]bool{"info": true, "tiles": true},
		okOut: map[string]string{"info": "valid pixels:   0.00% (0 of 1280)"}, make: func(t *testing.T, d string) string {
			p := filepath.Join(d, "nan.tif")
			data := make([]float32, fixture.Rows*fixture.Cols*fixture.Bands)
			for i := range data {
				data[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[i%3]
			}
			writeTyped(t, p, fixture.Rows, fixture.Cols, fixture.Bands, geo.Float32, nil, data)
			return p
		}},
	// A scene smaller than the network's stride is padded by the processor
	// and yields a valid product: that is accepted, and the product checked.
	{name: "1x1 scene", okFor: map[string]bool{"info": true, "tiles": true, "classify": true, "batch": true}, make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "onepixel.tif")
		data, _ := fixture.SceneData(3)
		writeTyped(t, p, 1, 1, fixture.Bands, geo.Float32, nil, data[:fixture.Bands])
		return p
	}},
	{name: "smaller than one stride", okFor: map[string]bool{"info": true, "tiles": true, "classify": true, "batch": true}, make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "tiny.tif")
		data, _ := fixture.SceneData(3)
		writeTyped(t, p, 3, 2, fixture.Bands, geo.Float32, nil, data[:3*2*fixture.Bands])
		return p
	}},
	// GDAL 3.6 decodes the blocks of a band-interleaved GeoTIFF of 3 or
	// more bands correctly on its worker threads while reporting
	// "Bad value N for ExtraSamples" there for every block: counted as the
	// product's, those refused the scene. Both interleavings,
	// DEFLATE, 16 px tiles that the 40 px wide scene ends inside.
	{name: "band-interleaved tiled DEFLATE", okFor: allCommands, make: func(t *testing.T, d string) string {
		return writeLayout(t, filepath.Join(d, "band.tif"), "INTERLEAVE=BAND")
	}},
	{name: "pixel-interleaved tiled DEFLATE", okFor: allCommands, make: func(t *testing.T, d string) string {
		return writeLayout(t, filepath.Join(d, "pixel.tif"), "INTERLEAVE=PIXEL")
	}},
	// A geotransform that places no grid: classify wrote Origin = (nan,
	// ...) with exit 0, batch published the product and failed on its
	// Item (JSON has no NaN), leaving it.
	{name: "NaN geotransform", want: "geotransform", fastFail: true, make: func(t *testing.T, d string) string {
		return withGeoTransform(t, d, "nangrid.vrt", "nan, 10, 0, 4800000, 0, -10")
	}},
	{name: "zero-size pixels", want: "geotransform", fastFail: true, make: func(t *testing.T, d string) string {
		return withGeoTransform(t, d, "flatgrid.vrt", "500000, 10, 0, 4800000, 0, 0")
	}},
	// info samples the valid fraction of a huge scene and says so; tiles
	// counts every tile and lists the first ones; classify and batch refuse
	// it at once, before planning, since its product cannot fit the disk.
	{name: "huge declared size", want: "free", okFor: map[string]bool{"info": true, "tiles": true},
		okOut:    map[string]string{"info": "estimated from a regular sample", "tiles": "more tiles not listed"},
		fastFail: true, make: func(t *testing.T, d string) string {
			src := goodScene(t, d)
			p := filepath.Join(d, "huge.vrt")
			var b strings.Builder
			fmt.Fprintf(&b, `<VRTDataset rasterXSize="1000000" rasterYSize="1000000">`+"\n")
			fmt.Fprintf(&b, "  <SRS>EPSG:32631</SRS>\n  <GeoTransform>500000, 10, 0, 4800000, 0, -10</GeoTransform>\n")
			for i := 1; i <= fixture.Bands; i++ {
				fmt.Fprintf(&b, `  <VRTRasterBand dataType="Float32" band="%d"><SimpleSource><SourceFilename relativeToVRT="0">%s</SourceFilename><SourceBand>%d</SourceBand></SimpleSource></VRTRasterBand>`+"\n", i, src, i)
			}
			b.WriteString("</VRTDataset>\n")
			os.WriteFile(p, []byte(b.String()), 0o644)
			return p
		}},
	{name: "STAC item with missing asset", stacOnly: true, want: "asset", make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "noasset.json")
		os.WriteFile(p, []byte(`{"type":"Feature","stac_version":"1.0.0","id":"x","geometry":null,"properties":{"datetime":null},"links":[],"assets":{"thumb":{"href":"t.png","roles":["thumbnail"]}}}`), 0o644)
		return p
	}},
	// A 50 MB id made a 100 MB stderr line, a 200 MB report and 1.35 GB
	// RSS, and failed on a lock file name too long.
	{name: "STAC item with a 2 MB id", stacOnly: true, want: "stac item id of 2000000 bytes: want at most 1024", make: func(t *testing.T, d string) string {
		scene := goodScene(t, d)
		p := filepath.Join(d, "bigid.json")
		os.WriteFile(p, []byte(`{"type":"Feature","stac_version":"1.0.0","id":"`+strings.Repeat("a", 2_000_000)+
			`","geometry":null,"properties":{"datetime":"2024-06-01T00:00:00Z"},"links":[],"assets":{"hsi":{"href":"`+filepath.Base(scene)+`","roles":["data"]}}}`), 0o644)
		return p
	}},
	{name: "bad JSON", stacOnly: true, want: "json", make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "broken.json")
		os.WriteFile(p, []byte(`{"type":"Feature","assets":{`), 0o644)
		return p
	}},
	{name: "asset href escaping with ..", stacOnly: true, want: "leads outside the catalog's folder", make: func(t *testing.T, d string) string {
		p := filepath.Join(d, "escape.json")
		os.WriteFile(p, []byte(`{"type":"Feature","stac_version":"1.0.0","id":"x","geometry":null,"properties":{"datetime":null},"links":[],"assets":{"hsi":{"href":"../../etc/passwd","roles":["data"]}}}`), 0o644)
		return p
	}},
}

// allCommands accept an input (badInput.okFor).
var allCommands = map[string]bool{"info": true, "tiles": true, "classify": true, "batch": true}

// writeLayout writes the fixture scene as a DEFLATE GeoTIFF of 16 px tiles
// with the given interleaving option.
func writeLayout(t *testing.T, path, interleave string) string {
	t.Helper()
	data, _ := fixture.SceneData(9)
	writeGeoTIFF(t, path, geo.RasterSpec{Cols: fixture.Cols, Rows: fixture.Rows, Bands: fixture.Bands, DataType: geo.Float32, GeoRef: fixture.GeoRef,
		CreationOptions: []string{interleave, "TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16", "COMPRESS=DEFLATE"}}, data)
	return path
}

// withGeoTransform is a VRT of the fixture scene, without CRS, with the
// geotransform gt (GDAL's text: six numbers), named name in dir.
func withGeoTransform(t *testing.T, dir, name, gt string) string {
	t.Helper()
	src := goodScene(t, t.TempDir())
	var b strings.Builder
	fmt.Fprintf(&b, `<VRTDataset rasterXSize="%d" rasterYSize="%d">`+"\n  <GeoTransform>%s</GeoTransform>\n", fixture.Cols, fixture.Rows, gt)
	for i := 1; i <= fixture.Bands; i++ {
		fmt.Fprintf(&b, `  <VRTRasterBand dataType="Float32" band="%d"><SimpleSource><SourceFilename relativeToVRT="0">%s</SourceFilename><SourceBand>%d</SourceBand></SimpleSource></VRTRasterBand>`+"\n", i, src, i)
	}
	b.WriteString("</VRTDataset>\n")
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// commandArgs gives the arguments that run command on scene, writing under out.
func commandArgs(command, modelPath, scene, out string) []string {
	switch command {
	case "info":
		return []string{"info", scene}
	case "tiles":
		return []string{"tiles", "--model", modelPath, "--scene", scene}
	case "classify":
		return []string{"classify", "--quiet", "--model", modelPath, "--scene", scene, "--out", filepath.Join(out, "product.tif")}
	case "batch":
		// --datetime: these scenes carry no acquisition time, which batch
		// refuses first (stac.ErrNoDatetime); the table tests the rest.
		return []string{"batch", "--quiet", "--model", modelPath, "--out-dir", out, "--report", filepath.Join(out, "..", "report.jsonl"), "--datetime", "2024-06-01", scene}
	}
	panic(command)
}

// checkCOG: gdalinfo (an independent reader) opens the product and says LAYOUT=COG.
func checkCOG(t *testing.T, path string) {
	t.Helper()
	gi, err := exec.LookPath("gdalinfo")
	if err != nil {
		t.Logf("gdalinfo not installed: %s not checked by an independent reader", path)
		return
	}
	out, err := exec.Command(gi, path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "LAYOUT=COG") {
		t.Errorf("gdalinfo %s: %v, want LAYOUT=COG in:\n%s", path, err, out)
	}
}

// checkCleanFailure: non-zero exit without a panic, one line on stderr
// naming the input, and nothing left in the output directory (but the
// batch's report page).
func checkCleanFailure(t *testing.T, r runResult, input, want, out string) {
	t.Helper()
	if r.code == 0 {
		t.Errorf("exit status 0, want non-zero; stdout:\n%s", r.stdout)
		return
	}
	if r.code == 2 || strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
		t.Errorf("exit status %d with a panic:\n%s", r.code, r.stderr)
	}
	t.Logf("exit %d in %s: %s", r.code, r.elapsed.Round(time.Millisecond), strings.TrimSpace(r.stderr))
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "pnec: ") {
		t.Errorf("stderr has %d lines, want one 'pnec: ...' line:\n%.2000s", len(lines), r.stderr)
	}
	if len(r.stderr) > 20<<10 {
		t.Errorf("stderr of %d bytes, want at most 20 KiB", len(r.stderr))
	}
	msg := strings.ToLower(lines[len(lines)-1])
	if !strings.Contains(msg, strings.ToLower(filepath.Base(input))) {
		t.Errorf("error %q does not name the input %s", lines[len(lines)-1], filepath.Base(input))
	}
	if want != "" && !strings.Contains(msg, want) {
		t.Errorf("error %q does not say %q", lines[len(lines)-1], want)
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if e.Name() == "index.html" {
			continue // pnec batch's report page, which says what failed: a complete file
		}
		t.Errorf("left in the output directory after a failure: %s", e.Name())
	}
}

// TestBadInputs feeds each command each bad input.
func TestBadInputs(t *testing.T) {
	pnecBinary(t) // skips with -short
	modelPath := fixture.ModelFile(t)
	for _, bi := range badInputs {
		for _, command := range []string{"info", "tiles", "classify", "batch"} {
			if bi.stacOnly && command != "batch" {
				continue
			}
			t.Run(bi.name+"/"+command, func(t *testing.T) {
				dir := t.TempDir()
				input := bi.make(t, dir)
				out := filepath.Join(dir, "out")
				os.MkdirAll(out, 0o755)
				if why, ok := bi.knownGap[command]; ok {
					t.Skip("known gap: " + why)
				}
				r := runPnec(t, 2*time.Minute, commandArgs(command, modelPath, input, out)...)
				if bi.fastFail && r.elapsed > 10*time.Second {
					t.Errorf("took %s, want under 10 s", r.elapsed.Round(time.Millisecond))
				}
				if bi.okFor[command] {
					if r.code != 0 {
						t.Errorf("exit status %d, want 0 (%s accepts this input):\n%s", r.code, command, r.stderr)
					}
					if want := bi.okOut[command]; want != "" && !strings.Contains(r.stdout, want) {
						t.Errorf("stdout does not say %q:\n%.2000s", want, r.stdout)
					}
					if command == "classify" || command == "batch" {
						products, _ := filepath.Glob(filepath.Join(out, "*.tif"))
						if len(products) != 1 {
							t.Fatalf("got products %q, want one", products)
						}
						checkCOG(t, products[0])
					}
					return
				}
				checkCleanFailure(t, r, input, bi.want, out)
			})
		}
	}
}

// mountTmpfs mounts a tmpfs of sizeKiB at dir (root only) and unmounts it at cleanup.
func mountTmpfs(t *testing.T, dir string, sizeKiB int, readOnly bool) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	opts := fmt.Sprintf("size=%dk", sizeKiB)
	if readOnly {
		opts += ",ro"
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("mount tmpfs: %v %s", err, out)
		return false
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return true
}

// fillTo writes a file in dir that leaves about free bytes of its file system free.
func fillTo(t *testing.T, dir string, free int64) {
	t.Helper()
	var fs syscall.Statfs_t
	syscall.Statfs(dir, &fs)
	avail := int64(fs.Bavail) * int64(fs.Bsize)
	if avail < free {
		t.Fatalf("%s has %d bytes free, fewer than the %d to leave", dir, avail, free)
	}
	if err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, avail-free), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBadOutputs: an unwritable output directory and a full disk give one
// clear line, a non-zero exit, and no partial files.
func TestBadOutputs(t *testing.T) {
	pnecBinary(t)
	modelPath := fixture.Model(t)
	scene := goodScene(t, t.TempDir())
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) // makes dir unwritable or full
		want  string
	}{
		{"unwritable output directory", func(t *testing.T, dir string) {
			// Room for the product: the refusal is the write's, not the disk-space check's.
			if !mountTmpfs(t, dir, 1024, true) {
				if os.Geteuid() == 0 {
					t.Skip("root ignores permissions and tmpfs cannot be mounted here")
				}
				os.Chmod(dir, 0o555)
				t.Cleanup(func() { os.Chmod(dir, 0o755) })
			}
		}, "read-only file system"},
		{"disk too small for the product", func(t *testing.T, dir string) {
			if !mountTmpfs(t, dir, 64, false) {
				t.Skip("needs root to mount a small tmpfs; the disk-space check is not exercised")
			}
			// Leave 8 KiB: the product's pixels (2.5 KiB) fit, its write
			// (a whole 512 x 512 staged tile, 512 KiB) does not; the
			// pre-flight check refuses it (it counted the pixels only, and
			// the write failed).
			fillTo(t, dir, 8192)
		}, "not enough free disk space"},
		{"full disk", func(t *testing.T, dir string) {
			if !mountTmpfs(t, dir, 1024, false) {
				t.Skip("needs root to mount a small tmpfs; the write-error path is not exercised")
			}
			// Leave 6 KiB more than the pre-flight check's lower bound:
			// it passes, and the write runs out of space after the
			// staging file, so the write-error path is exercised.
			need, err := geo.ProductDiskBytes(geo.ProductSpec{Cols: fixture.Cols, Rows: fixture.Rows, Classes: []geo.ClassInfo{{Value: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			fillTo(t, dir, need+6<<10)
		}, "no space left"},
	} {
		for _, command := range []string{"classify", "batch"} {
			t.Run(tc.name+"/"+command, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "out")
				os.MkdirAll(dir, 0o755)
				tc.setup(t, dir)
				before, _ := os.ReadDir(dir)
				report := filepath.Join(t.TempDir(), "report.jsonl")
				var args []string
				if command == "classify" {
					args = []string{"classify", "--quiet", "--model", modelPath, "--scene", scene, "--out", filepath.Join(dir, "product.tif")}
				} else {
					args = []string{"batch", "--quiet", "--model", modelPath, "--out-dir", dir, "--report", report, "--datetime", "2024-06-01", scene}
				}
				r := runPnec(t, 2*time.Minute, args...)
				t.Logf("exit %d in %s: %s", r.code, r.elapsed.Round(time.Millisecond), strings.TrimSpace(r.stderr))
				if r.code == 0 || r.code == 2 || strings.Contains(r.stderr, "goroutine ") {
					t.Fatalf("exit status %d, want 1 without a panic:\n%s", r.code, r.stderr)
				}
				// GDAL's own "ERROR 1:" lines of a COG write that runs out
				// of space are printed beside pnec's (GDAL's messages are
				// not this test's concern); pnec's line must be one.
				var lines, gdalLines []string
				for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
					if strings.HasPrefix(l, "ERROR ") && tc.name == "full disk" {
						gdalLines = append(gdalLines, l)
						continue
					}
					lines = append(lines, l)
				}
				if len(gdalLines) > 0 {
					t.Logf("GDAL printed %d lines of its own", len(gdalLines))
				}
				if len(lines) != 1 || !strings.Contains(strings.ToLower(lines[0]), tc.want) {
					t.Errorf("stderr %q, want one line saying %q", r.stderr, tc.want)
				}
				if !strings.Contains(lines[0], dir) {
					t.Errorf("error %q does not name the output directory %s", lines[0], dir)
				}
				// The batch's report page says what failed: a complete
				// file, the only one the run may add.
				after, _ := os.ReadDir(dir)
				after = slices.DeleteFunc(after, func(e os.DirEntry) bool { return e.Name() == "index.html" })
				if len(after) != len(before) {
					var names []string
					for _, e := range after {
						names = append(names, e.Name())
					}
					t.Errorf("output directory holds %v after the failure, want only what was there before (and the report page)", names)
				}
			})
		}
	}
}
