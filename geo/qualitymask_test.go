package geo

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/airbusgeo/godal"
)

// writeQualityMask writes a cols x rows Byte GeoTIFF whose pixels in rect are
// value (0 elsewhere), in two bands: band 2 marks the first column too.
func writeQualityMask(t *testing.T, path string, cols, rows int, rect Window, value byte) {
	t.Helper()
	ds, err := godal.Create(godal.GTiff, path, 2, godal.Byte, cols, rows)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, cols*rows*2)
	for r := rect.Row; r < rect.Row+rect.Rows; r++ {
		for c := rect.Col; c < rect.Col+rect.Cols; c++ {
			buf[(r*cols+c)*2] = value
		}
	}
	for r := range rows {
		buf[(r*cols)*2+1] = 1
	}
	if err := ds.Write(0, 0, buf, cols, rows); err != nil {
		t.Fatal(err)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAddQualityMask: a mask raster's non-zero pixels become invalid in reads and
// in the valid fraction; a mask of another size, or product masks of a
// plain raster, are refused.
func TestAddQualityMask(t *testing.T) {
	dir := t.TempDir()
	const cols, rows = 20, 10
	scene := writeScene(t, dir, godal.Int16, cols, rows, 3, nil)
	maskPath := filepath.Join(dir, "clouds.tif")
	cloud := Window{Col: 4, Row: 2, Cols: 5, Rows: 3}
	writeQualityMask(t, maskPath, cols, rows, cloud, 1)
	s, err := Open(scene)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if f, err := s.ValidFraction(ctx); err != nil || f != 1 {
		t.Fatalf("before the mask: valid fraction %v (%v), want 1", f, err)
	}
	if err := s.AddQualityMask(maskPath, nil); err != nil {
		t.Fatal(err)
	}
	blk, err := s.ReadWindow(ctx, Window{Cols: cols, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	for r := range rows {
		for c := range cols {
			in := r >= cloud.Row && r < cloud.Row+cloud.Rows && c >= cloud.Col && c < cloud.Col+cloud.Cols
			if blk.Valid[r*cols+c] == in {
				t.Fatalf("pixel (%d,%d): valid %v, want %v", r, c, blk.Valid[r*cols+c], !in)
			}
		}
	}
	if f, err := s.ValidFraction(ctx); err != nil || f != 1-15.0/200 {
		t.Errorf("valid fraction %v (%v), want %v", f, err, 1-15.0/200)
	}
	// Band 2 of the mask flags the first column as well.
	if err := s.AddQualityMask(maskPath, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.ValidFraction(ctx); f != 1-25.0/200 {
		t.Errorf("with band 2: valid fraction %v, want %v", f, 1-25.0/200)
	}
	small := filepath.Join(dir, "small.tif")
	writeQualityMask(t, small, cols-1, rows, cloud, 1)
	var me *QualityMaskError
	if err := s.AddQualityMask(small, nil); !errors.As(err, &me) {
		t.Errorf("a 19-column mask: got %v, want a *QualityMaskError", err)
	}
	if err := s.UseProductQualityMasks(); !errors.Is(err, ErrNoProductQualityMasks) {
		t.Errorf("product masks of a GeoTIFF: got %v, want ErrNoProductQualityMasks", err)
	}
}
