package geo

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/airbusgeo/godal"
)

// vrtOf writes a VRT of src at dst with GDAL (gdal_translate -of VRT, as a
// user makes one): its source is relative to the VRT when beside it.
func vrtOf(t testing.TB, src, dst string) string {
	t.Helper()
	ds, err := godal.Open(src, godal.RasterOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	out, err := ds.Translate(dst, []string{"-of", "VRT"})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// vrtXML is a one-band VRT whose band reads each name through a
// SimpleSource, written as given (element and attribute spelling too).
func vrtXML(sources ...string) string {
	var b strings.Builder
	b.WriteString(`<VRTDataset rasterXSize="8" rasterYSize="8"><VRTRasterBand dataType="Float32" band="1">`)
	for _, s := range sources {
		b.WriteString("<SimpleSource>" + s + "<SourceBand>1</SourceBand></SimpleSource>")
	}
	b.WriteString("</VRTRasterBand></VRTDataset>")
	return b.String()
}

func walkAll(t *testing.T, name string) []VRTSource {
	t.Helper()
	var got []VRTSource
	if err := WalkVRT(name, func(s VRTSource) error { got = append(got, s); return nil }); err != nil {
		t.Fatalf("WalkVRT(%s): %v", name, err)
	}
	return got
}

// TestWalkVRT: the datasets a VRT opens, as GDAL resolves them, at any
// depth: a VRT of a VRT, a source relative to the VRT or to the working
// directory, element and attribute names in any case (GDAL reads them so:
// checked against GDAL's own file list), a warped VRT's source dataset,
// inline XML, vrt:// names, and no call for what is not a VRT. GDAL's file
// list (DatasetFiles) stops at the first level, which is why the walk is
// needed: a mask VRT of a VRT of the output hid the output from the
// output-is-input check.
func TestWalkVRT(t *testing.T) {
	dir := t.TempDir()
	src := writeScene(t, dir, godal.Float32, 8, 8, 1, nil)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	inner := vrtOf(t, src, filepath.Join(dir, "inner.vrt"))
	outer := filepath.Join(dir, "sub", "outer.vrt")
	os.WriteFile(outer, []byte(vrtXML(`<SourceFilename relativeToVRT="1">../inner.vrt</SourceFilename>`)), 0o644)

	got := walkAll(t, outer)
	if len(got) != 2 || got[0].Name != filepath.Join(dir, "sub")+"/../inner.vrt" || got[0].Depth != 1 || !got[0].RelativeToVRT ||
		filepath.Clean(got[1].Name) != src || got[1].Depth != 2 || got[1].VRT != got[0].Name {
		t.Fatalf("nested VRT: got %+v, want ../inner.vrt at depth 1 and %s at depth 2", got, src)
	}
	if files := VRTFiles(outer); !slices.Equal(files, []string{got[0].Name, got[1].Name}) {
		t.Errorf("VRTFiles: got %q", files)
	}
	// GDAL's own list names the first level only.
	if files := DatasetFiles(outer); slices.Contains(files, src) {
		t.Logf("GDAL's file list now recurses: %q", files)
	}

	// Lower case element and attribute names: GDAL reads the source.
	lower := filepath.Join(dir, "lower.vrt")
	os.WriteFile(lower, []byte(vrtXML(`<sourcefilename RELATIVETOVRT="1">`+filepath.Base(src)+`</sourcefilename>`)), 0o644)
	if got := walkAll(t, lower); len(got) != 1 || got[0].Name != src {
		t.Errorf("lower case: got %+v, want %s", got, src)
	}
	if files := DatasetFiles(lower); !slices.Contains(files, src) {
		t.Errorf("GDAL does not read the lower case source (files %q): the walk should not either", files)
	}

	// relativeToVRT="0": a relative name is under the working directory.
	cwd := filepath.Join(dir, "sub", "cwd.vrt")
	os.WriteFile(cwd, []byte(vrtXML(`<SourceFilename relativeToVRT="0">`+filepath.Base(src)+`</SourceFilename>`)), 0o644)
	if got := walkAll(t, cwd); len(got) != 1 || got[0].Name != filepath.Base(src) || got[0].RelativeToVRT {
		t.Errorf("relativeToVRT=0: got %+v, want %s as written", got, filepath.Base(src))
	}

	// A warped VRT names its source as SourceDataset.
	warped := filepath.Join(dir, "warped.vrt")
	ds, err := godal.Open(src, godal.RasterOnly())
	if err != nil {
		t.Fatal(err)
	}
	w, err := ds.Warp(warped, []string{"-of", "VRT", "-t_srs", "EPSG:4326"})
	ds.Close()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got := walkAll(t, warped); len(got) != 1 || got[0].Name != src {
		b, _ := os.ReadFile(warped)
		t.Errorf("warped VRT: got %+v, want %s\n%s", got, src, b)
	}

	// Inline XML and vrt:// names.
	if got := walkAll(t, vrtXML(`<SourceFilename>`+src+`</SourceFilename>`)); len(got) != 1 || got[0].Name != src || got[0].VRT != "inline VRT XML" {
		t.Errorf("inline XML: got %+v", got)
	}
	if got := walkAll(t, "vrt://"+inner+"?bands=1"); len(got) != 2 || got[0].Name != inner || got[1].Name != src {
		t.Errorf("vrt://: got %+v, want %s then %s", got, inner, src)
	}

	// Not VRTs: a GeoTIFF, a missing file, a driver-prefixed name.
	for _, name := range []string{src, filepath.Join(dir, "missing.vrt"), `HDF5:"` + filepath.Join(dir, "x.h5") + `"://cube`} {
		if got := walkAll(t, name); len(got) != 0 {
			t.Errorf("%s: got %+v, want no sources", name, got)
		}
	}

	// A cycle ends (GDAL refuses it when opening).
	a, b := filepath.Join(dir, "a.vrt"), filepath.Join(dir, "b.vrt")
	os.WriteFile(a, []byte(vrtXML(`<SourceFilename relativeToVRT="1">b.vrt</SourceFilename>`)), 0o644)
	os.WriteFile(b, []byte(vrtXML(`<SourceFilename relativeToVRT="1">a.vrt</SourceFilename>`)), 0o644)
	if got := walkAll(t, a); len(got) != 2 {
		t.Errorf("cycle: got %+v, want b.vrt then a.vrt once", got)
	}
}

// TestWalkVRTRefusedNotRead: a source the visit refuses is never read, and
// a FIFO source is refused, not opened: a VRT served over HTTP whose first
// source is refused sends no request for either source.
func TestWalkVRTRefusedNotRead(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.FileServer(http.Dir(dir)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	os.WriteFile(filepath.Join(dir, "nested.vrt"), []byte(vrtXML(`<SourceFilename relativeToVRT="1">deep.tif</SourceFilename>`)), 0o644)
	os.WriteFile(filepath.Join(dir, "x.vrt"), []byte(vrtXML(
		`<SourceFilename relativeToVRT="1">nested.vrt</SourceFilename>`,
		`<SourceFilename relativeToVRT="1">/etc/hostname</SourceFilename>`)), 0o644)
	name := "/vsicurl/" + srv.URL + "/x.vrt"
	var seen []string
	err := WalkVRT(name, func(s VRTSource) error {
		seen = append(seen, s.Name)
		if !strings.HasPrefix(s.Name, "/vsicurl/") {
			return fmt.Errorf("refused %s", s.Name)
		}
		return nil
	})
	want := []string{"/vsicurl/" + srv.URL + "/nested.vrt", "/etc/hostname"}
	if err == nil || err.Error() != "refused /etc/hostname" || !slices.Equal(seen, want) {
		t.Fatalf("got %v after %q, want the refusal of /etc/hostname after %q", err, seen, want)
	}
	mu.Lock()
	for _, p := range paths {
		if p != "/x.vrt" && p != "/" { // the VRT, and GDAL's listing of its folder
			t.Errorf("the server got a request for %s: a source was read before all were accepted", p)
		}
	}
	mu.Unlock()
	// Accepted, the nested VRT is read and its source resolved on the server.
	got := walkAll(t, name)
	if len(got) != 3 || got[2].Name != "/vsicurl/"+srv.URL+"/deep.tif" || got[2].Depth != 2 {
		t.Errorf("got %+v, want deep.tif at depth 2 on the server", got)
	}

	fifo := filepath.Join(dir, "fifo.vrt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	outer := filepath.Join(dir, "outer.vrt")
	os.WriteFile(outer, []byte(vrtXML(`<SourceFilename relativeToVRT="1">fifo.vrt</SourceFilename>`)), 0o644)
	if err := WalkVRT(outer, func(VRTSource) error { return nil }); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("a FIFO source: got %v, want it refused as a FIFO", err)
	}
}

// TestXMLDescription: the root element of datasets GDAL opens from XML,
// "" for others.
func TestXMLDescription(t *testing.T) {
	dir := t.TempDir()
	src := writeScene(t, dir, godal.Float32, 8, 8, 1, nil)
	wms := filepath.Join(dir, "wms.tif")
	os.WriteFile(wms, []byte("\xef\xbb\xbf<?xml version=\"1.0\"?>\n<!-- a comment -->\n<GDAL_WMS><Service name=\"TMS\"><ServerUrl>file:///etc/x</ServerUrl></Service></GDAL_WMS>"), 0o644)
	for name, want := range map[string]string{
		src:                                    "",
		vrtOf(t, src, filepath.Join(dir, "v")): "VRTDataset",
		wms:                                    "GDAL_WMS",
		"<GDAL_WMS/>":                          "GDAL_WMS",
		filepath.Join(dir, "missing.tif"):      "",
	} {
		if got, err := XMLDescription(name); err != nil || got != want {
			t.Errorf("XMLDescription(%.40s) = %q, %v; want %q", name, got, err, want)
		}
	}
}
