package geo

import (
	"strings"
	"testing"
)

func TestParseENVIHeader(t *testing.T) {
	text := "ENVI\ndescription = {\n  DESIS L2A, reflectance}\nsamples = 40\nLines  = 32\n; a comment\n" +
		"wavelength = { 401.3, 404.1,\n 406.9 }\ndata gain values = {1e-4,1e-4,1e-4}\nband names = {b1, b2, b3}\n"
	h, err := parseENVIHeader(text)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := h.int("lines"); !ok || v != 32 {
		t.Errorf("lines: got %v %v", v, ok)
	}
	wl, err := h.perBand("wavelength", 3)
	if err != nil || len(wl) != 3 || wl[2] != 406.9 {
		t.Errorf("wavelength: got %v, %v", wl, err)
	}
	if _, err := h.perBand("wavelength", 4); err == nil {
		t.Error("3 wavelengths accepted for 4 bands")
	}
	if names := h.strings("band names"); strings.Join(names, "|") != "b1|b2|b3" {
		t.Errorf("band names: got %q", names)
	}
	for _, bad := range []string{"", "GDAL\nsamples = 1", "ENVI\nsamples 1", "ENVI\nwavelength = {1, 2"} {
		if _, err := parseENVIHeader(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzParseENVIHeader: any text parses or fails without a panic, and a
// parsed header's keys are lower case with single spaces, its lists closed.
func FuzzParseENVIHeader(f *testing.F) {
	f.Add("ENVI\nsamples = 5\nwavelength = { 0.45, 0.55,\n 0.65}\n")
	f.Add("ENVI\nbbl = {1,0,1}\ndata gain values = {1,2,3}\n")
	f.Add("ENVI\na = {{}\n}\n")
	f.Fuzz(func(t *testing.T, text string) {
		h, err := parseENVIHeader(text)
		if err != nil {
			return
		}
		for k, v := range h {
			if k != strings.ToLower(k) || strings.Contains(k, "  ") || strings.TrimSpace(k) != k || k == "" {
				t.Fatalf("key %q", k)
			}
			if strings.HasPrefix(v, "{") && strings.Count(v, "{") > strings.Count(v, "}") {
				t.Fatalf("%s = %q: list not closed", k, v)
			}
			_, _ = h.numbers(k)
			_ = h.strings(k)
		}
	})
}

func TestParseHEGrid(t *testing.T) {
	odl := "GROUP=GridStructure\n\tGROUP=GRID_1\n\t\tGridName=\"HYP\"\n\t\tXDim=40\n\t\tYDim=32\n" +
		"\t\tUpperLeftPointMtrs=(600000.000000,5000010.000000)\n\t\tLowerRightMtrs=(601200.000000,4999050.000000)\n" +
		"\t\tProjection=HE5_GCTP_UTM\n\t\tZoneCode=-32\n\tEND_GROUP=GRID_1\nEND_GROUP=GridStructure\nEND\n"
	g, err := parseHEGrid(odl, "HYP")
	if err != nil {
		t.Fatal(err)
	}
	if g.EPSG != 32732 || g.geoTransform() != [6]float64{600000, 30, 0, 5000010, 0, -30} {
		t.Errorf("got EPSG:%d %v", g.EPSG, g.geoTransform())
	}
	if _, err := parseHEGrid(odl, "OTHER"); err == nil {
		t.Error("a grid the metadata does not have was found")
	}
	geographic := strings.Replace(odl, "HE5_GCTP_UTM", "HE5_GCTP_GEO", 1)
	if _, err := parseHEGrid(geographic, "HYP"); err == nil || !strings.Contains(err.Error(), "HE5_GCTP_GEO") {
		t.Errorf("a geographic grid: got %v, want an error naming it", err)
	}
}

// FuzzParseHEGrid: any StructMetadata parses or fails without a panic; a
// parsed grid has positive dimensions, a UTM code and a north-up extent.
func FuzzParseHEGrid(f *testing.F) {
	f.Add("GridName=\"HYP\"\nXDim=4\nYDim=3\nUpperLeftPointMtrs=(0,90)\nLowerRightMtrs=(120,0)\nProjection=HE5_GCTP_UTM\nZoneCode=31\n")
	f.Add("GridName=\"HYP\"\nXDim=1\nYDim=1\nUpperLeftPointMtrs=(1e300,-1e300)\nLowerRightMtrs=(,)\n")
	f.Fuzz(func(t *testing.T, odl string) {
		g, err := parseHEGrid(odl, "HYP")
		if err != nil {
			return
		}
		gt := g.geoTransform()
		if g.XDim < 1 || g.YDim < 1 || g.EPSG < 32601 || g.EPSG > 32760 || !(gt[1] > 0) || !(gt[5] < 0) {
			t.Fatalf("grid %+v, geotransform %v", g, gt)
		}
	})
}

func TestRemotePath(t *testing.T) {
	for name, want := range map[string]bool{
		"scene.tif": false, "/data/scene.tif": false, "/vsizip/a.zip/scene.tif": false, "/vsimem/x.tif": false,
		"/vsis3/bucket/scene.tif": true, "/vsicurl/https://x/scene.tif": true, "/vsizip//vsis3/b/a.zip/s.tif": true,
	} {
		if got := remotePath(name); got != want {
			t.Errorf("remotePath(%q) = %v, want %v", name, got, want)
		}
	}
}
