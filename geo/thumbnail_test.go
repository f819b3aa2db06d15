package geo

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestThumbnailSize(t *testing.T) {
	for _, tc := range []struct{ cols, rows, w, h int }{
		{100, 80, 100, 80},
		{512, 300, 512, 300},
		{1100, 700, 512, 326},
		{700, 1100, 326, 512},
		{10000, 3, 512, 1},
	} {
		if w, h := ThumbnailSize(tc.cols, tc.rows, ThumbnailMaxSide); w != tc.w || h != tc.h {
			t.Errorf("ThumbnailSize(%d, %d) = %d x %d, want %d x %d", tc.cols, tc.rows, w, h, tc.w, tc.h)
		}
	}
}

// TestProductThumbnail: the thumbnail published with a product is a PNG of
// at most 512 px a side, each pixel its class's colour-table entry (opaque)
// or transparent for no data; NoThumbnail writes none and removes a stale one.
func TestProductThumbnail(t *testing.T) {
	for _, tc := range []struct {
		pc         productCase
		cols, rows int
		w, h       int
	}{
		{productCases[0], 1100, 700, 512, 326},
		{productCases[1], 300, 200, 300, 200},
	} {
		t.Run(tc.pc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.tif")
			spec := writeTestProduct(t, path, tc.pc, tc.cols, tc.rows, nil)
			b, err := os.ReadFile(ThumbnailPath(path))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if s := img.Bounds().Size(); s.X != tc.w || s.Y != tc.h {
				t.Fatalf("thumbnail %v, want %d x %d", s, tc.w, tc.h)
			}
			checkThumbnailColours(t, img, spec.Classes)
		})
	}
	t.Run("off", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "p.tif")
		if err := os.WriteFile(ThumbnailPath(path), []byte("stale"), 0o644); err != nil {
			t.Fatal(err)
		}
		spec := ProductSpec{Cols: 40, Rows: 30, GeoRef: GeoRef{GeoTransform: testGT, WKT: utm31(t)}, Classes: testClasses(3), NoThumbnail: true}
		p, err := CreateProduct(path, spec)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.WriteRows(0, make([]uint16, 40*30), make([]float32, 40*30)); err != nil {
			t.Fatal(err)
		}
		if err := p.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(ThumbnailPath(path)); !os.IsNotExist(err) {
			t.Errorf("stale thumbnail kept with NoThumbnail: %v", err)
		}
	})
}

// checkThumbnailColours: every pixel is transparent or opaque in one of
// the classes' colours, and both kinds occur (the test product's first
// rows are no data).
func checkThumbnailColours(t *testing.T, img image.Image, classes []ClassInfo) {
	t.Helper()
	want := map[[3]uint8]bool{}
	for _, c := range classes {
		want[c.Color] = true
	}
	transparent, opaque := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			switch a {
			case 0:
				transparent++
			case 0xffff:
				opaque++
				if c := [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}; !want[c] {
					t.Fatalf("pixel (%d,%d) colour %v is no class colour", x, y, c)
				}
			default:
				t.Fatalf("pixel (%d,%d) alpha %d: want 0 or opaque", x, y, a)
			}
		}
	}
	if transparent == 0 || opaque == 0 {
		t.Errorf("%d transparent and %d opaque pixels: want both (no-data rows and classes)", transparent, opaque)
	}
}
