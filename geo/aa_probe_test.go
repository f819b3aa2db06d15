package geo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func probeMem(tag string) {
	b, _ := os.ReadFile("/proc/self/status")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	fmt.Fprintf(os.Stderr, "PROBE %-14s %s\n", tag, strings.Join(out, "  "))
}

func TestZZProbe(t *testing.T) {
	h, _ := strconv.Atoi(os.Getenv("PROBE_ROWS"))
	if h == 0 {
		t.Skip()
	}
	cols := 128
	dir := t.TempDir()
	probeMem("start")
	pw, err := CreateProduct(filepath.Join(dir, "p.tif"), ProductSpec{Cols: cols, Rows: h,
		GeoRef:  GeoRef{GeoTransform: [6]float64{448000, 2.5, 0, 5412000, 0, -2.5}, EPSG: 32632},
		Classes: []ClassInfo{{Value: 1, Name: "a"}, {Value: 2, Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	for r0 := 0; r0 < h; r0 += 64 {
		cl := make([]uint16, 64*cols)
		rel := make([]float32, 64*cols)
		for i := range cl {
			cl[i] = uint16(1 + i%2)
			rel[i] = float32(i%100) / 100
		}
		if err := pw.WriteRows(r0, cl, rel); err != nil {
			t.Fatal(err)
		}
	}
	probeMem("written")
	probeHook = probeMem
	if err := pw.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	probeMem("committed")
}
