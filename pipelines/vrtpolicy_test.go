package pipelines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
)

// sceneVRT is a VRT of the fixture scene whose every band reads href
// (relativeToVRT as given), as gdalbuildvrt would write one.
func sceneVRT(href string, relativeToVRT int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<VRTDataset rasterXSize="%d" rasterYSize="%d">`+"\n", fixture.Cols, fixture.Rows)
	for i := 1; i <= fixture.Bands; i++ {
		fmt.Fprintf(&b, `  <VRTRasterBand dataType="Float32" band="%d"><SimpleSource><SourceFilename relativeToVRT="%d">%s</SourceFilename><SourceBand>%d</SourceBand></SimpleSource></VRTRasterBand>`+"\n",
			i, relativeToVRT, href, i)
	}
	b.WriteString("</VRTDataset>\n")
	return b.String()
}

// TestCatalogPolicyVRT: what a catalog's VRTs open passes the catalog
// policy like the hrefs: sources inside the folder (or remote) are read;
// an absolute path, ../ past the folder, a name relative to the working
// directory (relativeToVRT="0"), a symbolic link's ../ leading out, a GDAL
// virtual path (/vsicurl/file://), a source of a VRT of a VRT, a remote
// catalog's VRT naming a local file, and XML dataset descriptions other than
// VRTs are refused; so are hrefs that are inline VRT XML or /vsicurl/file://
// (they counted as inside the folder, or as remote, before). Nothing is
// refused with AllowOutsideCatalog.
func TestCatalogPolicyVRT(t *testing.T) {
	base := t.TempDir()
	cat, outside := filepath.Join(base, "cat"), filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(outside, "sub"), 0o755)
	writeFile(t, filepath.Join(cat, "data.tif"), "scene")
	secret := writeFile(t, filepath.Join(outside, "secret.tif"), "not the catalog's")
	os.Symlink(filepath.Join(outside, "sub"), filepath.Join(cat, "linkdir"))
	vrt := func(name, href string, rel int) string {
		writeFile(t, filepath.Join(cat, name), sceneVRT(href, rel))
		return name
	}
	writeFile(t, filepath.Join(cat, "inner.vrt"), sceneVRT(secret, 0))
	writeFile(t, filepath.Join(cat, "wms.tif"), `<GDAL_WMS><Service name="TMS"><ServerUrl>file://`+secret+`</ServerUrl></Service></GDAL_WMS>`)
	www := filepath.Join(base, "www")
	writeFile(t, filepath.Join(www, "stac", "data.tif"), "scene")
	writeFile(t, filepath.Join(www, "stac", "local.vrt"), sceneVRT(secret, 1))
	writeFile(t, filepath.Join(www, "stac", "up.vrt"), sceneVRT("../data.tif", 1))
	writeFile(t, filepath.Join(www, "stac", "beside.vrt"), sceneVRT("data.tif", 1))
	srv := httptest.NewServer(http.FileServer(http.Dir(www)))
	defer srv.Close()

	for _, tc := range []struct {
		name, href string
		remote     bool   // the Item is served with the VRTs of www/stac
		why        string // "" = read
		expand     bool   // refused when expanded (an href), not when checked
	}{
		{name: "source inside", href: vrt("in.vrt", "data.tif", 1)},
		{name: "source absolute", href: vrt("abs.vrt", secret, 0), why: `source "` + secret + `" leads outside the catalog's folder ` + cat + " (an absolute path)"},
		{name: "source ../", href: vrt("up.vrt", "../outside/secret.tif", 1), why: "(../ past the folder)"},
		{name: "source under the working directory", href: vrt("cwd.vrt", "secret.tif", 0), why: `(relativeToVRT="0": a path under the working directory)`},
		{name: "source through a link's ../", href: vrt("link.vrt", "linkdir/../secret.tif", 1), why: "(through a symbolic link, to " + secret + ")"},
		{name: "source /vsicurl/file://", href: vrt("vsi.vrt", "/vsicurl/file://"+secret, 0), why: "(a GDAL virtual path, which may read any local file)"},
		{name: "source of a VRT of a VRT", href: vrt("outer.vrt", "inner.vrt", 1), why: "through VRT " + filepath.Join(cat, "inner.vrt") + ": VRT source"},
		{name: "XML description", href: "wms.tif", why: "an XML dataset description <GDAL_WMS>, not a VRT"},
		{name: "href inline VRT XML", href: strings.ReplaceAll(sceneVRT(secret, 0), `"`, `\"`), why: "(XML in place of a path", expand: true},
		{name: "href /vsicurl/file://", href: "/vsicurl/file://" + secret, why: "(a GDAL virtual path, which may read any local file)", expand: true},
		{name: "remote VRT naming a local file", href: "local.vrt", remote: true, why: "(a local file named by a remote catalog)"},
		{name: "remote VRT ../ past the folder", href: "up.vrt", remote: true, why: "(../ past the folder)"},
		{name: "remote VRT beside it", href: "beside.vrt", remote: true},
	} {
		for _, allow := range []bool{false, true} {
			name := tc.name
			if allow {
				name += "/allowed"
			}
			t.Run(name, func(t *testing.T) {
				item := itemJSON("x", `"hsi":{"href":"`+strings.ReplaceAll(tc.href, "\n", `\n`)+`","roles":["data"]}`)
				doc := writeFile(t, filepath.Join(cat, "item.json"), item)
				if tc.remote {
					writeFile(t, filepath.Join(www, "stac", "item.json"), item)
					doc = srv.URL + "/stac/item.json"
				}
				got, errs, err := Expand(context.Background(), []string{doc}, ExpandOptions{AllowOutsideCatalog: allow})
				if err != nil {
					t.Fatal(err)
				}
				if tc.expand && !allow {
					if len(got) != 0 || len(errs) != 1 || !errors.Is(errs[0], ErrOutsideCatalog) || !strings.Contains(errs[0].Error(), tc.why) {
						t.Fatalf("got inputs %q and errors %q, want ErrOutsideCatalog saying %q", names(got), errText(errs), tc.why)
					}
					t.Log(errs[0])
					return
				}
				if len(errs) != 0 || len(got) != 1 {
					t.Fatalf("got inputs %q and errors %q, want one input", names(got), errText(errs))
				}
				err = checkOpens(got[0])
				if tc.why == "" || allow {
					if err != nil {
						t.Fatalf("checkOpens: %v, want it read", err)
					}
					return
				}
				if !errors.Is(err, ErrOutsideCatalog) || !strings.Contains(err.Error(), tc.why) {
					t.Fatalf("checkOpens: %v, want ErrOutsideCatalog saying %q", err, tc.why)
				}
				t.Log(err)
			})
		}
	}
}

// TestRunRemoteVRTLocalSource: a remote catalog's Item pointing at a VRT
// served beside it whose source is a local file: the batch classified the
// local file (done, exit 0); now the scene fails with one line naming the
// source, nothing is written, and AllowOutsideCatalog classifies it.
func TestRunRemoteVRTLocalSource(t *testing.T) {
	modelPath := tinyModel(t)
	dir := t.TempDir()
	local := fixture.Scene(t, filepath.Join(dir, "private", "scene.tif"), 3)
	www := filepath.Join(dir, "www")
	writeFile(t, filepath.Join(www, "x.vrt"), sceneVRT(local, 0))
	writeFile(t, filepath.Join(www, "item.json"), itemJSON("x", `"hsi":{"href":"x.vrt","roles":["data"]}`))
	srv := httptest.NewServer(http.FileServer(http.Dir(www)))
	defer srv.Close()
	for _, allow := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("out-%v", allow))
		var rep bytes.Buffer
		sum, err := Run(context.Background(), Config{ModelPath: modelPath, OutDir: out, Report: &rep,
			Inputs: []string{srv.URL + "/item.json"}, AllowOutsideCatalog: allow})
		_, statErr := os.Stat(filepath.Join(out, "x.tif"))
		if allow {
			if err != nil || sum.Done != 1 || statErr != nil {
				t.Errorf("allowed: %+v, %v, product %v: want it classified", sum, err, statErr)
			}
			continue
		}
		t.Log(err)
		if !errors.Is(err, ErrOutsideCatalog) || sum.Failed != 1 || !strings.Contains(err.Error(), `source "`+local+`"`) ||
			!strings.Contains(err.Error(), "(a local file named by a remote catalog)") {
			t.Errorf("got %+v, %v: want the scene refused for its VRT's local source", sum, err)
		}
		if statErr == nil {
			t.Error("the local file was classified")
		}
	}
}

// pdsLabel is a PDS3 label of a 16 x 16 byte image in the file image
// names, as a lander's archive writes one.
func pdsLabel(image string) string {
	return "PDS_VERSION_ID = PDS3\nRECORD_TYPE = FIXED_LENGTH\nRECORD_BYTES = 16\nFILE_RECORDS = 16\n" +
		"^IMAGE = \"" + image + "\"\nOBJECT = IMAGE\n  LINES = 16\n  LINE_SAMPLES = 16\n" +
		"  SAMPLE_TYPE = UNSIGNED_INTEGER\n  SAMPLE_BITS = 8\n  BANDS = 1\nEND_OBJECT = IMAGE\nEND\n"
}

// stacitJSON is a STAC ItemCollection that GDAL's STACIT driver opens as a
// mosaic of its one asset href.
func stacitJSON(href string) string {
	return `{"type":"FeatureCollection","features":[{"type":"Feature","stac_version":"1.0.0",` +
		`"stac_extensions":["https://stac-extensions.github.io/projection/v1.0.0/schema.json"],"id":"a",` +
		`"geometry":{"type":"Polygon","coordinates":[[[0,0],[16,0],[16,-16],[0,-16],[0,0]]]},"bbox":[0,-16,16,0],` +
		`"properties":{"datetime":"2020-01-01T00:00:00Z","proj:epsg":32631},"assets":{"B1":{"href":"` + href + `",` +
		`"type":"image/tiff; application=geotiff","proj:epsg":32631,"proj:transform":[1,0,0,0,-1,0],"proj:shape":[16,16],"proj:bbox":[0,-16,16,0]}}}]}`
}

// TestCatalogPolicyFileLists: the policy covers every
// file GDAL reads for a dataset, not only a VRT's sources: a PDS label
// whose image is ../ past the folder, a STAC ITem JSON whose asset is an
// absolute path outside, an HDF5 file with external storage or a virtual
// dataset in another file (which the HDF5 library reads, unlisted by
// GDAL), each as the scene, as a VRT's source and as the mask asset, and a
// remote catalog's PDS label whose image is ../ past its URL folder. All
// were read before (exit 0); labels whose files are inside stay read.
func TestCatalogPolicyFileLists(t *testing.T) {
	base := t.TempDir()
	cat, outside := filepath.Join(base, "cat"), filepath.Join(base, "outside")
	os.MkdirAll(cat, 0o755)
	raw := make([]byte, 256)
	for _, d := range []string{cat, outside} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "s.raw"), raw, 0o644)
	}
	secretTif := fixture.Scene(t, filepath.Join(outside, "secret.tif"), 2)
	writeFile(t, filepath.Join(cat, "up.lbl"), pdsLabel("../outside/s.raw"))
	writeFile(t, filepath.Join(cat, "in.lbl"), pdsLabel("s.raw"))
	writeFile(t, filepath.Join(cat, "stacit.json"), stacitJSON(secretTif))
	writeFile(t, filepath.Join(cat, "viavrt.vrt"), sceneVRT("up.lbl", 1))
	cases := []struct{ name, href, mask, why string }{
		{name: "PDS label inside", href: "in.lbl"},
		{name: "PDS label ../", href: "up.lbl", why: `file "` + cat + `/../outside/s.raw" leads outside`},
		{name: "STACIT absolute asset", href: "stacit.json", why: `file "` + secretTif + `"`},
		{name: "VRT source a PDS label ../", href: "viavrt.vrt", why: "a file GDAL reads for"},
		{name: "mask asset a PDS label ../", href: "in.lbl", mask: "up.lbl", why: "a file GDAL reads for"},
	}
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import h5py, numpy").Run(); err == nil {
		script := fmt.Sprintf(`import h5py, numpy as np
with h5py.File(%[1]q + "/ext.h5", "w") as f:
    f.create_dataset("d", shape=(16, 16), dtype="u1", external=[(%[2]q + "/s.raw", 0, 256)])
with h5py.File(%[2]q + "/src.h5", "w") as f:
    f["d"] = np.ones((16, 16), "f4")
lay = h5py.VirtualLayout(shape=(16, 16), dtype="f4")
lay[:] = h5py.VirtualSource(%[2]q + "/src.h5", "d", shape=(16, 16))
with h5py.File(%[1]q + "/vds.h5", "w") as f:
    f.create_virtual_dataset("v", lay)
with h5py.File(%[1]q + "/plain.h5", "w") as f:
    f["d"] = np.ones((16, 16), "f4")
`, cat, outside)
		if b, err := exec.Command(py, "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("h5py: %v: %s", err, b)
		}
		cases = append(cases,
			struct{ name, href, mask, why string }{name: "HDF5 plain", href: "plain.h5"},
			struct{ name, href, mask, why string }{name: "HDF5 external storage", href: "ext.h5", why: `external storage "` + filepath.Join(outside, "s.raw")},
			struct{ name, href, mask, why string }{name: "HDF5 virtual dataset", href: "vds.h5", why: `a virtual dataset's source "` + filepath.Join(outside, "src.h5")},
			struct{ name, href, mask, why string }{name: "HDF5 mask asset", href: "in.lbl", mask: "ext.h5", why: "external storage"})
	} else {
		t.Log("no h5py for /usr/bin/python3: the HDF5 cases are left out")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assets := `"hsi":{"href":"` + tc.href + `","roles":["data"]}`
			opts := ExpandOptions{}
			if tc.mask != "" {
				assets += `,"m":{"href":"` + tc.mask + `","roles":["cloud"]}`
				opts.MaskRole = "cloud"
			}
			doc := writeFile(t, filepath.Join(cat, "item.json"), itemJSON("x", assets))
			got, errs, err := Expand(context.Background(), []string{doc}, opts)
			if err != nil || len(errs) != 0 || len(got) != 1 {
				t.Fatalf("Expand: %v %q %q", err, names(got), errText(errs))
			}
			err = checkOpens(got[0])
			if tc.why == "" {
				if err != nil {
					t.Fatalf("checkOpens: %v, want it read", err)
				}
				return
			}
			if !errors.Is(err, ErrOutsideCatalog) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("checkOpens: %v, want ErrOutsideCatalog saying %q", err, tc.why)
			}
			t.Log(err)
		})
	}
	t.Run("remote PDS label ../", func(t *testing.T) {
		www := filepath.Join(base, "www")
		os.MkdirAll(filepath.Join(www, "stac"), 0o755)
		os.WriteFile(filepath.Join(www, "s.raw"), raw, 0o644)
		writeFile(t, filepath.Join(www, "stac", "up.lbl"), pdsLabel("../s.raw"))
		writeFile(t, filepath.Join(www, "stac", "item.json"), itemJSON("x", `"hsi":{"href":"up.lbl","roles":["data"]}`))
		srv := httptest.NewServer(http.FileServer(http.Dir(www)))
		defer srv.Close()
		got, errs, err := Expand(context.Background(), []string{srv.URL + "/stac/item.json"}, ExpandOptions{})
		if err != nil || len(errs) != 0 || len(got) != 1 {
			t.Fatalf("Expand: %v %q %q", err, names(got), errText(errs))
		}
		if err := checkOpens(got[0]); !errors.Is(err, ErrOutsideCatalog) || !strings.Contains(err.Error(), "../ past the folder") {
			t.Fatalf("checkOpens: %v, want ErrOutsideCatalog saying ../ past the folder", err)
		}
	})
}
