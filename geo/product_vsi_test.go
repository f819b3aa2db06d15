package geo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
)

// TestProductToVSI writes a product to a GDAL virtual path (as /vsis3/ would
// be): it is staged locally, uploaded whole on Commit with its sidecar, and no
// local staging directory is left behind.
func TestProductToVSI(t *testing.T) {
	register()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	path := "/vsimem/pnec-vsi-test/product.tif"
	defer vsiUnlink(path)
	defer vsiUnlink(path + auxSuffix)
	spec := writeTestProduct(t, path, productCases[0], 96, 80, map[string]string{"MODEL_CHECKSUM": "abc"})

	ds, err := godal.Open(path, godal.RasterOnly(), errh)
	if err != nil {
		t.Fatalf("open the uploaded product: %v", err)
	}
	defer ds.Close()
	if got := ds.Structure(); got.SizeX != 96 || got.SizeY != 80 || got.NBands != 2 {
		t.Fatalf("got %dx%d with %d bands, want 96x80 with 2", got.SizeX, got.SizeY, got.NBands)
	}
	if md := ds.Metadata("LAYOUT", godal.Domain("IMAGE_STRUCTURE")); md != "COG" {
		t.Errorf("got LAYOUT=%q, want COG", md)
	}
	got, cols, _ := readBand(t, ds.Bands()[0])
	for _, rc := range [][2]int{{5, 5}, {40, 17}, {79, 95}} {
		want, _ := productPixel(spec.Classes, rc[0], rc[1])
		if v := got[rc[0]*cols+rc[1]]; v != float64(want) {
			t.Errorf("class at row %d col %d: got %v, want %d", rc[0], rc[1], v, want)
		}
	}
	if cats := ds.Bands()[0].Metadata("CLASS_1"); !strings.Contains(cats, "class 1") {
		t.Errorf("got CLASS_1=%q, want the class name", cats)
	}
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		t.Errorf("left in the local staging area: %s", filepath.Join(tmp, e.Name()))
	}
}
