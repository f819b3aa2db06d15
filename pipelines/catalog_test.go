package pipelines

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatalogPolicy: a STAC document given as input may name local files
// inside its folder only, however an href leaves it (an absolute or /vsi
// path, a file:// URL, ../, a symbolic link to a file or a folder outside);
// remote hrefs are read either way, and AllowOutsideCatalog reads the local
// ones too. (The absolute, file://, /vsi and symbolic link hrefs were read
// and classified before, though docs/batch.md said a catalog could not make
// the batch read arbitrary files.)
func TestCatalogPolicy(t *testing.T) {
	base := t.TempDir()
	cat := filepath.Join(base, "cat")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(cat, "data"), filepath.Join(cat, "items"), outside} {
		os.MkdirAll(d, 0o755)
	}
	writeFile(t, filepath.Join(cat, "data", "a.tif"), "scene")
	secret := writeFile(t, filepath.Join(outside, "secret.tif"), "not the catalog's")
	writeFile(t, filepath.Join(outside, "item.json"), itemJSON("o", `"hsi":{"href":"secret.tif","roles":["data"]}`))
	if err := os.Symlink(secret, filepath.Join(cat, "data", "link.tif")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(cat, "linkdir"))
	asset := func(href string) string { return itemJSON("x", `"hsi":{"href":"`+href+`","roles":["data"]}`) }
	for _, tc := range []struct {
		name  string
		doc   string // written to cat/doc.json
		want  string // the input's name, when read
		why   string // the refusal, by default ("" = read by default)
		extra func()
	}{
		{name: "inside", doc: asset("data/a.tif"), want: filepath.Join(cat, "data", "a.tif")},
		{name: "remote https", doc: asset("https://example.com/a.tif"), want: "/vsicurl/https://example.com/a.tif"},
		{name: "remote s3", doc: asset("s3://bucket/a.tif"), want: "/vsis3/bucket/a.tif"},
		{name: "absolute path", doc: asset(secret), want: secret, why: "(an absolute path)"},
		{name: "absolute path inside", doc: asset(filepath.Join(cat, "data", "a.tif")), want: filepath.Join(cat, "data", "a.tif")},
		{name: "file URL", doc: asset("file://" + secret), want: secret, why: "(a file:// URL)"},
		{name: "file URL inside", doc: asset("file://" + filepath.Join(cat, "data", "a.tif")), want: filepath.Join(cat, "data", "a.tif")},
		{name: "vsi path", doc: asset("/vsizip/" + outside + "/x.zip/y.tif"), want: "/vsizip/" + outside + "/x.zip/y.tif", why: "(a GDAL virtual path, which may read any local file)"},
		{name: "remote vsi path", doc: asset("/vsis3/bucket/a.tif"), want: "/vsis3/bucket/a.tif"},
		{name: "dot-dot", doc: asset("../outside/secret.tif"), want: secret, why: "(../ past the folder)"},
		{name: "symbolic link to a file", doc: asset("data/link.tif"), want: filepath.Join(cat, "data", "link.tif"), why: "(through a symbolic link, to " + secret + ")"},
		{name: "symbolic link to a folder", doc: asset("linkdir/secret.tif"), want: filepath.Join(cat, "linkdir", "secret.tif"), why: "(through a symbolic link, to " + secret + ")"},
		{name: "catalog link outside", doc: `{"type":"Catalog","id":"c","links":[{"rel":"item","href":"../outside/item.json"}]}`, want: secret, why: "(../ past the folder)"},
		{name: "catalog link absolute", doc: `{"type":"Catalog","id":"c","links":[{"rel":"item","href":"` + filepath.Join(outside, "item.json") + `"}]}`, want: secret, why: "(an absolute path)"},
		{name: "nested item back up inside the catalog", doc: `{"type":"Catalog","id":"c","links":[{"rel":"item","href":"items/b.json"}]}`,
			want:  filepath.Join(cat, "data", "a.tif"),
			extra: func() { writeFile(t, filepath.Join(cat, "items", "b.json"), asset("../data/a.tif")) }},
	} {
		for _, allow := range []bool{false, true} {
			name := tc.name + "/default"
			if allow {
				name = tc.name + "/allowed"
			}
			t.Run(name, func(t *testing.T) {
				if tc.extra != nil {
					tc.extra()
				}
				doc := writeFile(t, filepath.Join(cat, "doc.json"), tc.doc)
				got, errs, err := Expand(context.Background(), []string{doc}, ExpandOptions{AllowOutsideCatalog: allow})
				if err != nil {
					t.Fatal(err)
				}
				if tc.why != "" && !allow {
					if len(got) != 0 || len(errs) != 1 || !errors.Is(errs[0], ErrOutsideCatalog) || !strings.Contains(errs[0].Error(), tc.why) ||
						!strings.Contains(errs[0].Error(), "leads outside the catalog's folder "+cat) {
						t.Fatalf("got inputs %q and errors %q, want only ErrOutsideCatalog saying %q", names(got), errText(errs), tc.why)
					}
					t.Log(errs[0])
					return
				}
				if len(errs) != 0 || len(got) != 1 || got[0].Name != tc.want {
					t.Fatalf("got inputs %q and errors %q, want %s", names(got), errText(errs), tc.want)
				}
			})
		}
	}
}

// TestCatalogPolicyMaskAsset: the asset --mask asset:ROLE takes passes the
// same policy as the scene's asset, from a local catalog and from a remote
// one (before, an absolute or ../../ mask href was read, and a remote
// catalog's Item named a local file as its mask while the same path as its
// data asset was refused).
func TestCatalogPolicyMaskAsset(t *testing.T) {
	base := t.TempDir()
	cat := filepath.Join(base, "cat")
	writeFile(t, filepath.Join(cat, "a.tif"), "scene")
	writeFile(t, filepath.Join(cat, "aoi.tif"), "mask")
	secret := writeFile(t, filepath.Join(base, "secret.tif"), "not the catalog's")
	item := func(maskHref string) string {
		return itemJSON("x", `"hsi":{"href":"a.tif","roles":["data"]},"aoi":{"href":"`+maskHref+`","roles":["aoi"]}`)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(cat)))
	defer srv.Close()
	for _, tc := range []struct {
		name, href, doc string // doc: the Item's location, local or a URL
		want, why       string
	}{
		{name: "inside", href: "aoi.tif", want: filepath.Join(cat, "aoi.tif")},
		{name: "absolute path", href: secret, want: secret, why: "(an absolute path)"},
		{name: "dot-dot", href: "data/../../secret.tif", want: secret, why: "(../ past the folder)"},
		{name: "file URL", href: "file://" + secret, want: secret, why: "(a file:// URL)"},
		{name: "remote catalog, local path", href: secret, doc: "remote", want: secret, why: "(a local file named by a remote catalog)"},
		{name: "remote catalog, beside it", href: "aoi.tif", doc: "remote", want: "/vsicurl/" + srv.URL + "/aoi.tif"},
	} {
		for _, allow := range []bool{false, true} {
			name := tc.name
			if allow {
				name += "/allowed"
			}
			t.Run(name, func(t *testing.T) {
				doc := writeFile(t, filepath.Join(cat, "item.json"), item(tc.href))
				if tc.doc == "remote" {
					doc = srv.URL + "/item.json"
				}
				got, errs, err := Expand(context.Background(), []string{doc}, ExpandOptions{MaskRole: "aoi", AllowOutsideCatalog: allow})
				if err != nil {
					t.Fatal(err)
				}
				if tc.why != "" && !allow {
					if len(got) != 0 || len(errs) != 1 || !errors.Is(errs[0], ErrOutsideCatalog) || !strings.Contains(errs[0].Error(), tc.why) ||
						!strings.Contains(errs[0].Error(), `mask asset "aoi"`) {
						t.Fatalf("got inputs %q and errors %q, want only ErrOutsideCatalog for the mask asset saying %q", names(got), errText(errs), tc.why)
					}
					t.Log(errs[0])
					return
				}
				if len(errs) != 0 || len(got) != 1 || got[0].Mask != tc.want {
					t.Fatalf("got inputs %+v and errors %q, want the mask %s", got, errText(errs), tc.want)
				}
			})
		}
	}
}
