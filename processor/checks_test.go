package processor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckTile(t *testing.T) {
	const window = 9
	for _, tc := range []struct {
		tile, overlap int
		ok            bool
		words         string
	}{
		{0, 0, true, ""},          // automatic
		{3, 0, false, "at least"}, // the issue's --tile 3: 4 px tiles, no overlap left
		{12, 0, false, "at least"},
		{16, 4, true, ""},
		{16, 8, false, "at least 20 px"}, // 8 + 9 = 17, rounded to the stride
		{16, 16, false, "overlap 16 px must be smaller"},
		{16, -1, true, ""}, // no overlap: 16 >= 0 + 9
		{48, 0, true, ""},
	} {
		err := checkTile(Options{TileSize: tc.tile, Overlap: tc.overlap}, window)
		if tc.ok != (err == nil) {
			t.Errorf("tile %d overlap %d: %v, want ok=%v", tc.tile, tc.overlap, err, tc.ok)
			continue
		}
		if err != nil && (!errors.Is(err, ErrTileTooSmall) || !strings.Contains(err.Error(), tc.words)) {
			t.Errorf("tile %d overlap %d: %q, want ErrTileTooSmall saying %q", tc.tile, tc.overlap, err, tc.words)
		}
	}
	// The minimum it names is accepted, and the stride below it is not.
	for _, ov := range []int{0, -1, 8, 40} {
		min := MinTileSize(Options{Overlap: ov}, window)
		if err := checkTile(Options{TileSize: min, Overlap: ov}, window); err != nil {
			t.Errorf("overlap %d: MinTileSize %d refused: %v", ov, min, err)
		}
		if err := checkTile(Options{TileSize: min - 4, Overlap: ov}, window); err == nil && min > 4 {
			t.Errorf("overlap %d: tile %d below MinTileSize %d accepted", ov, min-4, min)
		}
	}
}

func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		out   string
		words string // "" = accepted
	}{
		{filepath.Join(dir, "p.tif"), ""},
		{file, ""}, // an existing product is replaced
		{"/vsimem/p.tif", ""},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "p.tif"), "does not exist"},
		{filepath.Join(file, "p.tif"), "is not a directory"},
	} {
		err := CheckOutput(tc.out)
		if tc.words == "" {
			if err != nil {
				t.Errorf("%s: %v, want accepted", tc.out, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadOutput) || !strings.Contains(err.Error(), tc.words) || !strings.Contains(err.Error(), tc.out) {
			t.Errorf("%s: %v, want ErrBadOutput naming it and saying %q", tc.out, err, tc.words)
		}
	}
}
