package geo

import (
	"errors"
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
