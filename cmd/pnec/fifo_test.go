package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
)

// fifoVRT is a VRT of the fixture scene's shape whose every band reads the
// FIFO pipe.
func fifoVRT(pipe string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<VRTDataset rasterXSize="%d" rasterYSize="%d">`+"\n", fixture.Cols, fixture.Rows)
	for i := 1; i <= fixture.Bands; i++ {
		fmt.Fprintf(&b, `  <VRTRasterBand dataType="Float32" band="%d"><SimpleSource><SourceFilename relativeToVRT="0">%s</SourceFilename><SourceBand>%d</SourceBand></SimpleSource></VRTRasterBand>`+"\n", i, pipe, i)
	}
	b.WriteString("</VRTDataset>\n")
	return b.String()
}

// TestFIFORoles: a FIFO in any role pnec reads, or a
// VRT reading one, fails at once with one line saying it is not a regular
// file; each blocked until killed: --model of classify, batch, evaluate,
// tiles, model-item and backends --precompile, --stac-collection,
// --class-names, import mat --cube, and a VRT whose source is a FIFO as
// the scene, the mask and the quality mask.
func TestFIFORoles(t *testing.T) {
	pnecBinary(t) // skips with -short
	modelPath := fixture.ModelFile(t)
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe.bin")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	scene := fixture.Scene(t, filepath.Join(dir, "scene.tif"), 3)
	vrt := filepath.Join(dir, "fifo.vrt")
	os.WriteFile(vrt, []byte(fifoVRT(pipe)), 0o644)
	labels := filepath.Join(dir, "labels.tif")
	writeTyped(t, labels, fixture.Rows, fixture.Cols, 1, geo.Byte, nil, make([]float32, fixture.Rows*fixture.Cols))
	out := func(name string) string { return filepath.Join(dir, "out", name) }
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	for _, tc := range []struct {
		name string
		args []string
		want string // the name the message must give
	}{
		{"classify --model", []string{"classify", "--quiet", "--model", pipe, "--scene", scene, "--out", out("a.tif")}, "pipe.bin"},
		{"batch --model", []string{"batch", "--quiet", "--model", pipe, "--out-dir", out("b"), "--datetime", "2024-06-01", scene}, "pipe.bin"},
		{"evaluate --model", []string{"evaluate", "--model", pipe, "--scene", scene, "--labels", labels}, "pipe.bin"},
		{"tiles --model", []string{"tiles", "--model", pipe, "--scene", scene}, "pipe.bin"},
		{"model-item --model", []string{"model-item", "--model", pipe, "--out", out("m.json")}, "pipe.bin"},
		{"backends --precompile", []string{"backends", "--precompile", pipe, "--backend", "go"}, "pipe.bin"},
		{"batch --stac-collection", []string{"batch", "--quiet", "--model", modelPath, "--out-dir", out("c"), "--datetime", "2024-06-01", "--stac-collection", pipe, scene}, "pipe.bin"},
		{"train --class-names", []string{"train", "--scene", scene, "--labels", labels, "--out", out("m.pnec"), "--class-names", pipe, "--epochs", "1"}, "pipe.bin"},
		{"import mat --cube", []string{"import", "mat", "--cube", pipe, "--out", out("cube.tif")}, "pipe.bin"},
		{"classify a VRT of a FIFO", []string{"classify", "--quiet", "--model", modelPath, "--scene", vrt, "--out", out("d.tif")}, "pipe.bin"},
		{"batch a VRT of a FIFO", []string{"batch", "--quiet", "--model", modelPath, "--out-dir", out("e"), "--datetime", "2024-06-01", vrt}, "pipe.bin"},
		{"classify --mask a VRT of a FIFO", []string{"classify", "--quiet", "--model", modelPath, "--scene", scene, "--mask", vrt, "--out", out("f.tif")}, "pipe.bin"},
		{"classify --quality-mask a VRT of a FIFO", []string{"classify", "--quiet", "--model", modelPath, "--scene", scene, "--quality-mask", vrt, "--out", out("g.tif")}, "pipe.bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runPnec(t, 30*time.Second, tc.args...)
			if r.code == 0 || r.code == 2 || r.elapsed > 20*time.Second {
				t.Fatalf("exit %d after %s, want a refusal at once:\n%s", r.code, r.elapsed.Round(time.Millisecond), r.stderr)
			}
			msg := strings.TrimSpace(r.stderr)
			if !strings.Contains(msg, "not a regular file") || !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") > 0 {
				t.Errorf("stderr %q: want one line saying %s is not a regular file", msg, tc.want)
			}
		})
	}
}
