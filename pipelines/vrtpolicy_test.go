package pipelines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
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
