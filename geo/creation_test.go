package geo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCreationOptions: options GDAL's COG driver refuses, and options
// it takes but that cannot write a product's bands, are refused with one
// line naming the option; the options products are written with pass.
func TestCheckCreationOptions(t *testing.T) {
	classes := testClasses(3)
	for _, tc := range []struct {
		opts []string
		f32  bool
		want string // "" = accepted
	}{
		{nil, false, ""},
		{[]string{"COMPRESS=ZSTD", "BLOCKSIZE=256"}, true, ""},
		{[]string{"compress=lzw", "level=9"}, false, ""},
		{[]string{"COMPRESS=LERC", "MAX_Z_ERROR=0"}, false, ""},
		{[]string{"NUM_THREADS=2", "BIGTIFF=YES", "OVERVIEW_RESAMPLING=MODE"}, false, ""},
		{[]string{"COMPRESS=NOPE"}, false, `"COMPRESS=NOPE"`},
		{[]string{"NOPE=1"}, false, `"NOPE=1": driver COG does not support creation option NOPE`},
		{[]string{"LEVEL=abc"}, false, `"LEVEL=abc"`},
		{[]string{"BIGTIFF=MAYBE"}, false, `"BIGTIFF=MAYBE"`},
		{[]string{"BLOCKSIZE=100"}, false, `creation option "BLOCKSIZE=100": want a multiple of 16`},
		{[]string{"BLOCKSIZE"}, false, `"BLOCKSIZE": want KEY=VALUE`},
		{[]string{"COMPRESS=JPEG"}, false, "JPEG compression not supported with paletted image"},
		{[]string{"COMPRESS=WEBP"}, false, "WEBP"},
	} {
		t.Run(strings.Join(tc.opts, " "), func(t *testing.T) {
			err := CheckCreationOptions(tc.opts, classes, tc.f32)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			if !errors.Is(err, ErrCreationOption) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line with ErrCreationOption and %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

// TestProductWriteBytes: tiles above the default cost several whole tiles
// of C memory while the COG is compressed, one job per thread at most one per
// tile; the default and smaller tiles cost nothing beyond the calibrated model.
func TestProductWriteBytes(t *testing.T) {
	spec := func(cols, rows int, co ...string) ProductSpec {
		return ProductSpec{Cols: cols, Rows: rows, Classes: testClasses(3), CreationOptions: co}
	}
	for _, tc := range []struct {
		spec ProductSpec
		min  int64
		max  int64
	}{
		{spec(128, 128), 0, 0},
		{spec(128, 128, "BLOCKSIZE=256"), 0, 0},
		// One tile of 16384^2 x 2 bytes (512 MiB): measured +1.57 GB peak RSS.
		{spec(128, 128, "BLOCKSIZE=16384", "NUM_THREADS=4"), 1570 << 20, 4 << 29},
		// 100000 px tiles: 20 GB each.
		{spec(128, 128, "BLOCKSIZE=100000"), 60 << 30, 100 << 30},
		// Four tiles, two threads: two jobs.
		{spec(8192, 8192, "BLOCKSIZE=4096", "NUM_THREADS=2"), 9 * 4096 * 4096 * 2 * 9 / 10, 9 * 4096 * 4096 * 2},
	} {
		got, err := ProductWriteBytes(tc.spec)
		if err != nil || got < tc.min || got > tc.max {
			t.Errorf("%dx%d %v: got %d bytes (%v), want %d..%d", tc.spec.Cols, tc.spec.Rows, tc.spec.CreationOptions, got, err, tc.min, tc.max)
		}
	}
	if _, err := ProductWriteBytes(spec(10, 10, "BLOCKSIZE=abc")); !errors.Is(err, ErrCreationOption) {
		t.Errorf("BLOCKSIZE=abc: got %v, want ErrCreationOption", err)
	}
}

// TestProductDiskBytes: the estimate is a lower bound of the disk space a
// product's write holds at its peak (everything written, nothing published),
// and close to it (the compressed COG it leaves out is small). The earlier
// estimate, the product's uncompressed pixels, missed the whole staged
// tiles of small products by up to hundreds of times.
func TestProductDiskBytes(t *testing.T) {
	defer func() { atCommitPeak = nil }()
	for _, tc := range []struct {
		cols, rows int
		classes    int
		f32        bool
		co         []string
	}{
		{1, 1, 3, false, nil},
		{40, 32, 3, false, nil},
		{40, 32, 3, true, nil},
		{600, 500, 3, false, nil},
		{600, 500, 300, true, nil},
		{700, 300, 3, false, []string{"BLOCKSIZE=128"}},
	} {
		t.Run(fmt.Sprintf("%dx%d %d classes f32 %v %v", tc.cols, tc.rows, tc.classes, tc.f32, tc.co), func(t *testing.T) {
			dir := t.TempDir()
			spec := ProductSpec{Cols: tc.cols, Rows: tc.rows, Classes: testClasses(tc.classes), ReliabilityFloat32: tc.f32, CreationOptions: tc.co}
			var peak int64
			atCommitPeak = func(d string) {
				ents, _ := os.ReadDir(d)
				for _, e := range ents {
					if fi, err := e.Info(); err == nil {
						peak += fi.Size()
					}
				}
			}
			p, err := CreateProduct(filepath.Join(dir, "p.tif"), spec)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			cl := make([]uint16, tc.cols*tc.rows)
			for i := range cl {
				cl[i] = uint16(spec.Classes[i%len(spec.Classes)].Value)
			}
			if err := p.WriteRows(0, cl, make([]float32, len(cl))); err != nil {
				t.Fatal(err)
			}
			if err := p.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			est, err := ProductDiskBytes(spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("estimate %d bytes, peak %d bytes on disk (%.2f); the pixels alone %d", est, peak, float64(est)/float64(peak), tc.cols*tc.rows*2)
			if est > peak || est < peak*6/10 {
				t.Errorf("estimate %d bytes, peak %d: want a lower bound within 60%%", est, peak)
			}
		})
	}
}
