package pipelines

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/internal/stacschema"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

// catalogSchema is STAC core's Catalog schema (shipped in testdata/stac/schemas).
const catalogSchema = "https://schemas.stacspec.org/v1.0.0/catalog-spec/json-schema/catalog.json"

// TestCatalogThumbnailsAndHTMLReport: a batch without --stac-collection
// leaves a root Catalog (valid, relative links to every Item, Items linking
// back as root and parent), each Item has its thumbnail (role thumbnail,
// file checksum of the file on disk) and render hints equal to its
// classes' colour hints, which equal the COG's colour table; the HTML page
// lists every scene with its status (the failed one with its reason, no
// thumbnail), its thumbnail as a file beside it, and a footprint per
// product. A rerun (all skipped) and a run over one scene still list the
// whole folder.
func TestCatalogThumbnailsAndHTMLReport(t *testing.T) {
	dir := t.TempDir()
	for i, n := range []string{"a", "b"} {
		fixture.Scene(t, filepath.Join(dir, "in", n+".tif"), uint64(7+i))
	}
	writeFile(t, filepath.Join(dir, "in", "bad.tif"), "not a GeoTIFF")
	out := filepath.Join(dir, "out")
	page := filepath.Join(out, "index.html")
	cfg := Config{ModelPath: tinyModel(t), OutDir: out, Inputs: []string{filepath.Join(dir, "in")},
		Options: processor.Options{Backend: "go"}, ReportHTML: page}
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("want the bad scene's failure")
	}
	checkCatalog(t, out, []string{"a.json", "b.json"})
	for _, k := range []string{"a", "b"} {
		checkThumbnailAndRenders(t, out, k)
	}
	checkPage(t, page, map[string]string{"a": StatusDone, "b": StatusDone, "bad": StatusFailed})

	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("want the bad scene's failure again")
	}
	checkPage(t, page, map[string]string{"a": StatusSkipped, "b": StatusSkipped, "bad": StatusFailed})

	one := cfg
	one.Inputs = []string{filepath.Join(dir, "in", "a.tif")}
	if _, err := Run(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	checkPage(t, page, map[string]string{"a": StatusSkipped, "b": StatusPublished})
	checkCatalog(t, out, []string{"a.json", "b.json"})

	// A scene that fails tonight has one row, failed, not a second one
	// for last night's Item.
	writeFile(t, filepath.Join(dir, "in", "a.tif"), "now corrupt")
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("want a's failure")
	}
	checkPage(t, page, map[string]string{"a": StatusFailed, "b": StatusSkipped, "bad": StatusFailed})
}

// checkCatalog: the root Catalog validates and links each Item once, relatively.
func checkCatalog(t *testing.T, out string, items []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, stac.CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := stacschema.Store(t).Validate(b, catalogSchema); err != nil {
		t.Errorf("catalog: %v", err)
	}
	var cat struct {
		Type  string
		Links []struct{ Rel, Href string }
	}
	json.Unmarshal(b, &cat)
	var got []string
	root := false
	for _, l := range cat.Links {
		switch l.Rel {
		case "item":
			got = append(got, l.Href)
		case "root":
			root = l.Href == stac.CatalogFile
		}
	}
	slices.Sort(got)
	if cat.Type != "Catalog" || !slices.Equal(got, items) || !root {
		t.Errorf("catalog %s with item links %v and root %v, want a Catalog linking %v and itself as root", cat.Type, got, root, items)
	}
	for _, it := range items {
		ib, _ := os.ReadFile(filepath.Join(out, it))
		var item struct{ Links []struct{ Rel, Href string } }
		json.Unmarshal(ib, &item)
		rels := map[string]string{}
		for _, l := range item.Links {
			rels[l.Rel] = l.Href
		}
		if rels["root"] != stac.CatalogFile || rels["parent"] != stac.CatalogFile || rels["collection"] != "" {
			t.Errorf("item %s links %v: want root and parent %s, no collection", it, rels, stac.CatalogFile)
		}
	}
}

// checkThumbnailAndRenders: the Item of key validates (render extension
// included), lists the thumbnail with its checksum, and its colour hints,
// its render colormap and the COG's colour table (gdalinfo) agree.
func checkThumbnailAndRenders(t *testing.T, out, key string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, key+".json"))
	if err != nil {
		t.Fatal(err)
	}
	validateItem(t, b)
	var item struct {
		Properties struct {
			Renders map[string]stac.RenderObject `json:"renders"`
		}
		Assets map[string]struct {
			Href     string
			Type     string
			Roles    []string
			Checksum string `json:"file:checksum"`
			Bands    []struct {
				Classes []stac.ClassObject `json:"classification:classes"`
			} `json:"raster:bands"`
		}
	}
	if err := json.Unmarshal(b, &item); err != nil {
		t.Fatal(err)
	}
	th := item.Assets[stac.ThumbnailAssetKey]
	sum, _, err := stac.FileChecksum(filepath.Join(out, th.Href))
	if err != nil || th.Href != key+".thumbnail.png" || th.Type != "image/png" || !slices.Equal(th.Roles, []string{"thumbnail"}) || th.Checksum != sum {
		t.Errorf("thumbnail asset %+v (file checksum %s, %v): want %s.thumbnail.png, image/png, role thumbnail, its checksum", th, sum, err, key)
	}
	palette := gdalPalette(t, filepath.Join(out, key+".tif"))
	cmap := item.Properties.Renders[stac.RenderClasses].Colormap
	classes := item.Assets[stac.ProductAssetKey].Bands[0].Classes
	if len(classes) == 0 || len(cmap) != len(classes) {
		t.Fatalf("classes %v, render colormap %v: want one entry per class", classes, cmap)
	}
	for _, c := range classes {
		p, ok := palette[c.Value]
		hint := strings.ToUpper(c.ColorHint)
		if !ok || hint != p {
			t.Errorf("class %d: color_hint %s, COG colour table %s", c.Value, hint, p)
		}
		if m := cmap[strconv.Itoa(c.Value)]; m[3] != 255 || hexOf(m) != hint {
			t.Errorf("class %d: render colormap %v, color_hint %s", c.Value, m, hint)
		}
	}
}

func hexOf(c [4]int) string {
	const digits = "0123456789ABCDEF"
	var s []byte
	for _, v := range c[:3] {
		s = append(s, digits[v>>4], digits[v&15])
	}
	return string(s)
}

// gdalPalette is the colour table of band 1 of the COG as gdalinfo reads
// it: class value -> RRGGBB.
func gdalPalette(t *testing.T, path string) map[int]string {
	t.Helper()
	gi, err := exec.LookPath("gdalinfo")
	if err != nil {
		t.Skip("gdalinfo not installed")
	}
	o, err := exec.Command(gi, "-json", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Bands []struct {
			ColorTable struct{ Entries [][4]int } `json:"colorTable"`
		}
	}
	if err := json.Unmarshal(o, &info); err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for v, e := range info.Bands[0].ColorTable.Entries {
		out[v] = hexOf(e)
	}
	return out
}

var rowRE = regexp.MustCompile(`<tr id="row-[^"]*" data-key="([^"]*)" data-status="([^"]*)">`)
var imgRE = regexp.MustCompile(`<img class="thumb" src="([^"]*)"`)

// checkPage: the page lists exactly want (key -> status), each thumbnail
// is a file beside it, a failed scene has its reason, the map has a
// footprint per product, and nothing reaches the network.
func checkPage(t *testing.T, page string, want map[string]string) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	got := map[string]string{}
	for _, m := range rowRE.FindAllStringSubmatch(html, -1) {
		got[m[1]] = m[2]
	}
	if len(got) != len(want) {
		t.Errorf("page rows %v, want %v", got, want)
	}
	products := 0
	for k, st := range want {
		if got[k] != st {
			t.Errorf("page row %s: status %q, want %q", k, got[k], st)
		}
		if st != StatusFailed {
			products++
		}
	}
	imgs := imgRE.FindAllStringSubmatch(html, -1)
	if len(imgs) != products {
		t.Errorf("%d thumbnails on the page, want %d", len(imgs), products)
	}
	for _, m := range imgs {
		if _, err := os.Stat(filepath.Join(filepath.Dir(page), m[1])); err != nil {
			t.Errorf("thumbnail %s: %v", m[1], err)
		}
	}
	if n := strings.Count(html, `<path class="fp `); n != products {
		t.Errorf("%d footprints on the map, want %d", n, products)
	}
	if bare := strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, ""); strings.Contains(bare, "http://") || strings.Contains(bare, "https://") || strings.Contains(bare, "<script") {
		t.Error("the page names a URL or a script: it must be self-contained")
	}
	if n := len(rowRE.FindAllString(html, -1)); n != len(want) {
		t.Errorf("%d rows on the page, want %d (one per scene)", n, len(want))
	}
	if want["bad"] == StatusFailed && !strings.Contains(html, `<div class="reason">`) {
		t.Error("the failed scene has no reason on the page")
	}
}

func TestPageHref(t *testing.T) {
	for _, tc := range []struct{ href, itemDir, pageDir, want string }{
		{"a.thumbnail.png", "/srv/out", "/srv/out", "a.thumbnail.png"},
		{"a.thumbnail.png", "/srv/out", "/srv/www", "../out/a.thumbnail.png"},
		{"../data/a.tif", "/srv/out/items", "/srv/out", "data/a.tif"},
		{"https://example.org/a.tif", "/srv/out", "/tmp", "https://example.org/a.tif"},
		{"/abs/a.tif", "/srv/out", "/tmp", "/abs/a.tif"},
	} {
		if got := pageHref(tc.href, tc.itemDir, tc.pageDir); got != tc.want {
			t.Errorf("pageHref(%q, %q, %q) = %q, want %q", tc.href, tc.itemDir, tc.pageDir, got, tc.want)
		}
	}
}

func TestClassShares(t *testing.T) {
	classes := []stac.ClassObject{{Value: 1, Name: "water", ColorHint: "0000FF"}, {Value: 2, Name: "crop", ColorHint: "FFFF00"}}
	for _, tc := range []struct {
		name   string
		counts map[string]int64
		want   []htmlShare
	}{
		{"none", nil, nil},
		{"two", map[string]int64{"1": 1, "2": 3}, []htmlShare{{"crop", "#FFFF00", 75}, {"water", "#0000FF", 25}}},
		{"unknown class", map[string]int64{"7": 2}, []htmlShare{{"class 7", "#888888", 100}}},
		{"rounded", map[string]int64{"1": 1, "2": 2}, []htmlShare{{"crop", "#FFFF00", 66.7}, {"water", "#0000FF", 33.3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classShares(tc.counts, classes); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReportHTMLDirRefused: a report page in a missing directory is
// refused before any work.
func TestReportHTMLDirRefused(t *testing.T) {
	dir := t.TempDir()
	fixture.Scene(t, filepath.Join(dir, "in", "a.tif"), 7)
	out := filepath.Join(dir, "out")
	cfg := Config{ModelPath: tinyModel(t), OutDir: out, Inputs: []string{filepath.Join(dir, "in")},
		Options: processor.Options{Backend: "go"}, ReportHTML: filepath.Join(dir, "missing", "index.html")}
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "report page") {
		t.Fatalf("got %v, want the report page's directory refused", err)
	}
	if _, err := os.Stat(filepath.Join(out, "a.tif")); err == nil {
		t.Error("a product was written: the refusal must come before any work")
	}
}
