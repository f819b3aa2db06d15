package geo

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/airbusgeo/godal"
)

func TestUnmarkAlpha(t *testing.T) {
	dir := t.TempDir()
	// A paletted two-band COG: GDAL 3.6 marks band 2 as alpha.
	src := writeScene(t, dir, godal.Byte, 600, 600, 2, func(ds *godal.Dataset) {
		ct := godal.ColorTable{PaletteInterp: godal.RGBPalette, Entries: [][4]int16{{0, 0, 0, 255}, {255, 0, 0, 255}}}
		if err := ds.Bands()[0].SetColorTable(ct); err != nil {
			t.Fatal(err)
		}
	})
	ds, err := godal.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	cog := filepath.Join(dir, "cog.tif")
	out, err := ds.Translate(cog, []string{"-of", "COG"})
	if err != nil {
		t.Fatal(err)
	}
	out.Close()
	ds.Close()
	interp := func() godal.ColorInterp {
		d, err := godal.Open(cog)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		return d.Bands()[1].ColorInterp()
	}
	if interp() != godal.CIAlpha {
		t.Skip("this GDAL does not mark the band as alpha; nothing to undo")
	}
	before, _ := os.ReadFile(cog)
	if err := unmarkAlpha(cog); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(cog)
	if got := interp(); got == godal.CIAlpha {
		t.Errorf("band 2 is still alpha")
	}
	if len(after) != len(before) {
		t.Errorf("size changed: %d -> %d", len(before), len(after))
	}
	diff := 0
	for i := range before {
		if before[i] != after[i] {
			diff++
		}
	}
	// Only the ExtraSamples values of the main IFD and its overview change.
	if diff == 0 || diff > 8 {
		t.Errorf("%d bytes changed, want 1..8", diff)
	}
	if !bytes.Equal(before[:8], after[:8]) {
		t.Error("header changed")
	}
}

// FuzzUnmarkAlpha checks that any file gives a patched file or an error,
// never a panic, a hang or a write past the file's end.
func FuzzUnmarkAlpha(f *testing.F) {
	f.Add([]byte("II*\x00\x08\x00\x00\x00\x01\x00\x52\x01\x03\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x00"))
	f.Add([]byte("II+\x00\x08\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.tif")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = unmarkAlpha(p)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != int64(len(data)) {
			t.Fatalf("size changed: %d -> %d", len(data), st.Size())
		}
	})
}
