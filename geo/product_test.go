package geo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airbusgeo/godal"
)

// productCase is a product layout used by the round-trip tests.
type productCase struct {
	name      string
	nClasses  int
	float32   bool
	wantType  godal.DataType
	relNoData float64
}

// relNoData is the no-data value both bands of the product share; the
// float32 case keeps a Byte product and adds the Float32 reliability file.
var productCases = []productCase{
	{"byte", 6, false, godal.Byte, 255},
	{"uint16", 300, false, godal.UInt16, 65535},
	{"float32", 6, true, godal.Byte, 255},
}

// stored is the class value the product stores for v (0 = no data).
func (pc productCase) stored(v uint16) float64 {
	if v == ClassNoData {
		return pc.relNoData
	}
	return float64(v)
}

func testClasses(n int) []ClassInfo {
	cs := make([]ClassInfo, n)
	for i := range cs {
		v := i + 1
		if n <= 10 {
			v = 2*i + 1 // sparse values: 1, 3, 5, ...
		}
		cs[i] = ClassInfo{Value: v, Name: fmt.Sprintf("class %d", v), Color: [3]uint8{uint8(v * 40), uint8(255 - v), uint8(v * 7)}}
	}
	return cs
}

// productPixel is the test product's content: 4x4 blocks of one majority
// class A, with the odd-odd pixel of each 2x2 block another class; rows
// 0..3 are no data. Reliability varies per pixel, NaN on a diagonal.
func productPixel(cs []ClassInfo, r, c int) (uint16, float32) {
	if r < 4 {
		return 0, float32(math.NaN())
	}
	a := ((r / 4) + (c / 4)) % len(cs)
	cls := cs[a].Value
	if r%2 == 1 && c%2 == 1 {
		cls = cs[(a+1)%len(cs)].Value
	}
	rel := float32((r*7+c*13)%101) / 100
	if (r+c)%37 == 0 {
		rel = float32(math.NaN())
	}
	return uint16(cls), rel
}

func writeTestProduct(t *testing.T, path string, pc productCase, cols, rows int, md map[string]string) ProductSpec {
	t.Helper()
	spec := ProductSpec{
		Cols: cols, Rows: rows,
		GeoRef:             GeoRef{GeoTransform: testGT, WKT: utm31(t)},
		Classes:            testClasses(pc.nClasses),
		ReliabilityFloat32: pc.float32,
		Metadata:           md,
	}
	p, err := CreateProduct(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Rows are streamed in uneven chunks, as a tiled processor would.
	for r0 := 0; r0 < rows; {
		n := min(37, rows-r0)
		cl := make([]uint16, n*cols)
		rl := make([]float32, n*cols)
		for r := 0; r < n; r++ {
			for c := 0; c < cols; c++ {
				cl[r*cols+c], rl[r*cols+c] = productPixel(spec.Classes, r0+r, c)
			}
		}
		if err := p.WriteRows(r0, cl, rl); err != nil {
			t.Fatal(err)
		}
		r0 += n
	}
	if err := p.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	return spec
}

func readBand(t *testing.T, b godal.Band) ([]float64, int, int) {
	t.Helper()
	st := b.Structure()
	buf := make([]float64, st.SizeX*st.SizeY)
	if err := b.Read(0, 0, buf, st.SizeX, st.SizeY); err != nil {
		t.Fatal(err)
	}
	return buf, st.SizeX, st.SizeY
}

func TestProductRoundTrip(t *testing.T) {
	const cols, rows = 1100, 700 // two overview levels: 550x350, 275x175
	for _, pc := range productCases {
		t.Run(pc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "product.tif")
			spec := writeTestProduct(t, path, pc, cols, rows, map[string]string{"MODEL_SHA256": "deadbeef", "INPUT": "scene.tif"})
			wantFiles := []string{"product.qml", "product.thumbnail.png", "product.tif", "product.tif.aux.xml"}
			if pc.float32 {
				wantFiles = []string{"product.qml", "product.reliability.tif", "product.thumbnail.png", "product.tif", "product.tif.aux.xml"}
			}
			if got := listDir(t, dir); !slices.Equal(got, wantFiles) {
				t.Errorf("files: got %v, want %v", got, wantFiles)
			}
			ds, err := godal.Open(path, godal.SiblingFiles())
			if err != nil {
				t.Fatal(err)
			}
			defer ds.Close()
			gt, err := ds.GeoTransform()
			if err != nil || gt != testGT {
				t.Errorf("geotransform: got %v (%v), want %v", gt, err, testGT)
			}
			want, _ := godal.NewSpatialRefFromEPSG(32631)
			got, _ := godal.NewSpatialRefFromWKT(ds.Projection())
			if !got.IsSame(want) {
				t.Errorf("CRS: got %s", ds.Projection())
			}
			bands := ds.Bands()
			if len(bands) != 2 {
				t.Fatalf("bands: got %d, want 2", len(bands))
			}
			cls, rel := bands[0], bands[1]
			if cls.Structure().DataType != pc.wantType || rel.Structure().DataType != pc.wantType {
				t.Errorf("data types: got %s/%s, want %s", cls.Structure().DataType, rel.Structure().DataType, pc.wantType)
			}
			if cls.Description() != "class" || rel.Description() != "reliability" {
				t.Errorf("descriptions: got %q %q", cls.Description(), rel.Description())
			}
			if nd, ok := cls.NoData(); !ok || nd != pc.relNoData {
				t.Errorf("class nodata: got %v %v, want %v", nd, ok, pc.relNoData)
			}
			if nd, ok := rel.NoData(); !ok || nd != pc.relNoData {
				t.Errorf("reliability nodata: got %v %v, want %v", nd, ok, pc.relNoData)
			}
			if rel.ColorInterp() == godal.CIAlpha {
				t.Error("reliability band is an alpha band")
			}
			// Colour table and class names inside the TIFF.
			for _, c := range spec.Classes {
				if got := cls.Metadata(fmt.Sprintf("CLASS_%d", c.Value)); got != c.Name {
					t.Errorf("CLASS_%d metadata: got %q, want %q", c.Value, got, c.Name)
				}
			}
			// A TIFF colour map always has 2^bits entries and no alpha: GDAL
			// reads the no-data entry back transparent, every other opaque.
			ct := cls.ColorTable()
			if n := len(ct.Entries); n != int(pc.relNoData)+1 {
				t.Errorf("colour table: got %d entries, want %d", n, int(pc.relNoData)+1)
			} else if e := ct.Entries[int(pc.relNoData)]; e[3] != 0 {
				t.Errorf("colour table entry of no-data %v: got %v, want transparent", pc.relNoData, e)
			}
			for _, c := range spec.Classes {
				e := ct.Entries[c.Value]
				if e != [4]int16{int16(c.Color[0]), int16(c.Color[1]), int16(c.Color[2]), 255} {
					t.Errorf("colour of class %d: got %v, want %v opaque", c.Value, e, c.Color)
				}
			}
			md := ds.Metadatas(godal.Domain(MetadataDomain))
			if md["MODEL_SHA256"] != "deadbeef" || md["INPUT"] != "scene.tif" {
				t.Errorf("PNEC metadata: got %v", md)
			}
			if _, err := time.Parse(time.RFC3339, md[MetaCreated]); err != nil {
				t.Errorf("PNEC CREATED %q: %v", md[MetaCreated], err)
			}
			if ds.Metadata("PNEC_MODEL_SHA256") != "deadbeef" {
				t.Errorf("in-TIFF PNEC_MODEL_SHA256: got %q", ds.Metadata("PNEC_MODEL_SHA256"))
			}
			// Full-resolution values.
			cv, _, _ := readBand(t, cls)
			rv, _, _ := readBand(t, rel)
			for r := 0; r < rows; r++ {
				for c := 0; c < cols; c++ {
					wc, wr := productPixel(spec.Classes, r, c)
					i := r*cols + c
					if cv[i] != pc.stored(wc) {
						t.Fatalf("class (%d,%d): got %v, want %v", r, c, cv[i], wc)
					}
					if math.IsNaN(float64(wr)) {
						if rv[i] != pc.relNoData {
							t.Fatalf("reliability (%d,%d): got %v, want nodata", r, c, rv[i])
						}
					} else if d := rv[i] - relStored(wr, pc); math.Abs(d) > 1e-6 {
						t.Fatalf("reliability (%d,%d): got %v, want %v", r, c, rv[i], relStored(wr, pc))
					}
				}
			}
			checkOverviews(t, spec, pc, cls, rel, cv, rv, false)
			if pc.float32 {
				checkFloatReliability(t, spec, ReliabilityPath(path))
			}
		})
	}
}

// checkFloatReliability checks the Float32 reliability file of a product:
// one band, 0..1 with NaN no-data, unit "1", the product's georeference and
// overviews of exact means.
func checkFloatReliability(t *testing.T, spec ProductSpec, path string) {
	t.Helper()
	ds, err := godal.Open(path)
	if err != nil {
		t.Fatalf("reliability file: %v", err)
	}
	defer ds.Close()
	if md := ds.Metadata("LAYOUT", godal.Domain("IMAGE_STRUCTURE")); md != "COG" {
		t.Errorf("reliability file LAYOUT=%q, want COG", md)
	}
	if gt, err := ds.GeoTransform(); err != nil || gt != testGT {
		t.Errorf("reliability file geotransform: got %v (%v)", gt, err)
	}
	bands := ds.Bands()
	if len(bands) != 1 || bands[0].Structure().DataType != godal.Float32 {
		t.Fatalf("reliability file: got %d bands, want one Float32", len(bands))
	}
	b := bands[0]
	if nd, ok := b.NoData(); !ok || !math.IsNaN(nd) {
		t.Errorf("reliability file nodata: got %v %v, want NaN", nd, ok)
	}
	rv, _, _ := readBand(t, b)
	for r := 0; r < spec.Rows; r++ {
		for c := 0; c < spec.Cols; c++ {
			_, wr := productPixel(spec.Classes, r, c)
			got := rv[r*spec.Cols+c]
			if math.IsNaN(float64(wr)) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-float64(wr)) > 1e-6 {
				t.Fatalf("reliability file (%d,%d): got %v, want %v", r, c, got, wr)
			}
		}
	}
	pc := productCase{float32: true, relNoData: math.NaN()}
	checkOverviews(t, spec, pc, godal.Band{}, b, nil, rv, true)
}

// relStored is the value the product's reliability band stores for r.
func relStored(r float32, pc productCase) float64 {
	return float64(percent(r, int(pc.relNoData)))
}

// checkOverviews checks the class overviews (unless relOnly) and the
// reliability overviews of a product.
func checkOverviews(t *testing.T, spec ProductSpec, pc productCase, cls, rel godal.Band, cv, rv []float64, relOnly bool) {
	t.Helper()
	isClass := map[float64]bool{pc.relNoData: true}
	for _, c := range spec.Classes {
		isClass[float64(c.Value)] = true
	}
	rOv := rel.Overviews()
	var cOv []godal.Band
	if !relOnly {
		cOv = cls.Overviews()
		if len(cOv) != 2 {
			t.Fatalf("class overview levels: got %d, want 2", len(cOv))
		}
	}
	if len(rOv) != 2 {
		t.Fatalf("reliability overview levels: got %d, want 2", len(rOv))
	}
	for lvl := range rOv {
		f := 2 << lvl // decimation factor
		or, ow, oh := readBand(t, rOv[lvl])
		if ow != spec.Cols/f || oh != spec.Rows/f {
			t.Fatalf("level %d size: got %dx%d, want %dx%d", lvl, ow, oh, spec.Cols/f, spec.Rows/f)
		}
		// Every level is the mean of the valid full-resolution pixels of its
		// block, rounded to a whole percent for integer bands.
		tol := 0.5 + 1e-9
		if relOnly {
			tol = 1e-5
		}
		var oc []float64
		if !relOnly {
			oc, _, _ = readBand(t, cOv[lvl])
		}
		for r := 0; r < oh; r++ {
			for c := 0; c < ow; c++ {
				if !relOnly {
					v := oc[r*ow+c]
					if !isClass[v] {
						t.Fatalf("level %d class (%d,%d) = %v is not a class value", lvl, r, c, v)
					}
					// The block's majority class.
					wantC, _ := productPixel(spec.Classes, r*f, c*f)
					if v != pc.stored(wantC) {
						t.Fatalf("level %d class (%d,%d): got %v, want majority %v", lvl, r, c, v, pc.stored(wantC))
					}
				}
				sum, n := 0.0, 0
				for dr := 0; dr < f; dr++ {
					for dc := 0; dc < f; dc++ {
						x := rv[(r*f+dr)*spec.Cols+c*f+dc]
						if x == pc.relNoData || math.IsNaN(x) {
							continue
						}
						sum += x
						n++
					}
				}
				got := or[r*ow+c]
				if n == 0 {
					if !(got == pc.relNoData || math.IsNaN(got) && math.IsNaN(pc.relNoData)) {
						t.Fatalf("level %d reliability (%d,%d): got %v, want nodata", lvl, r, c, got)
					}
					continue
				}
				if mean := sum / float64(n); math.Abs(got-mean) > tol {
					t.Fatalf("level %d reliability (%d,%d): got %v, want mean %v", lvl, r, c, got, mean)
				}
			}
		}
	}
}

func TestProductIndependentReaders(t *testing.T) {
	if _, err := exec.LookPath("gdalinfo"); err != nil {
		t.Skip("gdalinfo not installed (apt-get install gdal-bin)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.tif")
	spec := writeTestProduct(t, path, productCases[0], 600, 530, nil)
	out, err := exec.Command("gdalinfo", path).CombinedOutput()
	if err != nil {
		t.Fatalf("gdalinfo: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "LAYOUT=COG") {
		t.Errorf("gdalinfo does not report LAYOUT=COG:\n%s", text)
	}
	// Category names come back through GDAL (from the sidecar).
	for _, c := range spec.Classes {
		if want := fmt.Sprintf("%d: %s\n", c.Value, c.Name); !strings.Contains(text, want) {
			t.Errorf("gdalinfo categories lack %q", want)
		}
	}
	for _, want := range []string{"Description = class", "Description = reliability", "NoData Value=255", "Overviews: 300x265"} {
		if !strings.Contains(text, want) {
			t.Errorf("gdalinfo lacks %q", want)
		}
	}

	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import rasterio").Run(); err != nil {
		t.Logf("rasterio check skipped: %s cannot import rasterio (apt-get install python3-rasterio)", py)
		return
	}
	script := `
import json, sys, rasterio
with rasterio.open(sys.argv[1]) as s:
    print(json.dumps({
        "count": s.count, "dtypes": list(s.dtypes), "nodata": list(s.nodatavals),
        "epsg": s.crs.to_epsg(), "transform": list(s.transform.to_gdal()),
        "descriptions": list(s.descriptions),
        "colorinterp": [c.name for c in s.colorinterp],
        "class": s.read(1)[:8, 60:64].tolist(), "rel": s.read(2)[10:12, 5:8].tolist(),
        "colormap5": list(s.colormap(1)[5]), "overviews": s.overviews(1),
        "pnec": s.tags(ns="PNEC"),
    }))
`
	out, err = exec.Command(py, "-c", script, path).Output()
	if err != nil {
		t.Fatalf("rasterio: %v", err)
	}
	var got struct {
		Count        int
		Dtypes       []string
		Nodata       []float64
		EPSG         int
		Transform    []float64
		Descriptions []string
		Colorinterp  []string
		Class        [][]int
		Rel          [][]int
		Colormap5    []int
		Overviews    []int
		PNEC         map[string]string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("rasterio output %s: %v", out, err)
	}
	if got.Count != 2 || !slices.Equal(got.Dtypes, []string{"uint8", "uint8"}) || !slices.Equal(got.Nodata, []float64{255, 255}) {
		t.Errorf("rasterio bands: got count %d dtypes %v nodata %v", got.Count, got.Dtypes, got.Nodata)
	}
	if got.EPSG != 32631 || !slices.Equal(got.Transform, testGT[:]) {
		t.Errorf("rasterio georef: got EPSG %d transform %v", got.EPSG, got.Transform)
	}
	if !slices.Equal(got.Descriptions, []string{"class", "reliability"}) || got.Colorinterp[1] == "alpha" {
		t.Errorf("rasterio descriptions %v colorinterp %v", got.Descriptions, got.Colorinterp)
	}
	for r := range got.Class {
		for c := range got.Class[r] {
			if want, _ := productPixel(spec.Classes, r, 60+c); float64(got.Class[r][c]) != productCases[0].stored(want) {
				t.Errorf("rasterio class (%d,%d): got %d, want %d", r, 60+c, got.Class[r][c], want)
			}
		}
	}
	for r := range got.Rel {
		for c := range got.Rel[r] {
			_, wr := productPixel(spec.Classes, 10+r, 5+c)
			if want := percent(wr, 255); got.Rel[r][c] != want {
				t.Errorf("rasterio reliability (%d,%d): got %d, want %d", 10+r, 5+c, got.Rel[r][c], want)
			}
		}
	}
	if c5 := spec.Classes[2].Color; len(got.Colormap5) < 3 || got.Colormap5[0] != int(c5[0]) || got.Colormap5[1] != int(c5[1]) || got.Colormap5[2] != int(c5[2]) {
		t.Errorf("rasterio colour of class 5: got %v, want %v", got.Colormap5, c5)
	}
	if !slices.Equal(got.Overviews, []int{2}) {
		t.Errorf("rasterio overviews: got %v, want [2]", got.Overviews)
	}
	if _, err := time.Parse(time.RFC3339, got.PNEC["CREATED"]); err != nil {
		t.Errorf("rasterio PNEC tags: got %v", got.PNEC)
	}
}

func TestProductAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.tif")
	pc := productCases[0]
	writeTestProduct(t, path, pc, 40, 30, map[string]string{"RUN": "first"})
	oldTIF, _ := os.ReadFile(path)
	oldAux, _ := os.ReadFile(path + auxSuffix)
	oldQML, _ := os.ReadFile(StylePath(path))
	oldThumb, _ := os.ReadFile(ThumbnailPath(path))
	unchanged := func(t *testing.T) {
		t.Helper()
		tif, _ := os.ReadFile(path)
		aux, _ := os.ReadFile(path + auxSuffix)
		qml, _ := os.ReadFile(StylePath(path))
		thumb, _ := os.ReadFile(ThumbnailPath(path))
		if !bytes.Equal(tif, oldTIF) || !bytes.Equal(aux, oldAux) || !bytes.Equal(qml, oldQML) || !bytes.Equal(thumb, oldThumb) {
			t.Error("the existing product changed")
		}
		if got := listDir(t, dir); !slices.Equal(got, []string{"p.qml", "p.thumbnail.png", "p.tif", "p.tif.aux.xml"}) {
			t.Errorf("files: got %v, want only the existing product", got)
		}
	}
	spec := ProductSpec{Cols: 40, Rows: 30, Classes: testClasses(3)}
	full := make([]uint16, 40*30)
	rel := make([]float32, 40*30)

	t.Run("abandoned", func(t *testing.T) {
		p, err := CreateProduct(path, spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WriteRows(0, full[:40*10], rel[:40*10]); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		unchanged(t)
	})
	t.Run("incomplete", func(t *testing.T) {
		p, err := CreateProduct(path, spec)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.WriteRows(0, full[:40*29], rel[:40*29]); err != nil {
			t.Fatal(err)
		}
		err = p.Commit(context.Background())
		if err == nil || !strings.Contains(err.Error(), "row 29") {
			t.Errorf("Commit of 29 of 30 rows: got %v, want an error naming row 29", err)
		}
		unchanged(t)
	})
	t.Run("cancelled", func(t *testing.T) {
		p, err := CreateProduct(path, spec)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.WriteRows(0, full, rel); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Commit(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Commit with a cancelled context: got %v, want context.Canceled", err)
		}
		unchanged(t)
	})
	t.Run("bad class", func(t *testing.T) {
		p, err := CreateProduct(path, spec)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		bad := make([]uint16, 40)
		bad[7] = 4 // classes are 1, 3, 5
		err = p.WriteRows(3, bad, rel[:40])
		if err == nil || !strings.Contains(err.Error(), "class value 4 at row 3 col 7") {
			t.Errorf("got %v, want an error naming value 4 at row 3 col 7", err)
		}
	})
	t.Run("replaced", func(t *testing.T) {
		writeTestProduct(t, path, pc, 40, 30, map[string]string{"RUN": "second"})
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ds, _ := godal.Open(path, godal.SiblingFiles())
		defer ds.Close()
		if got := ds.Metadatas(godal.Domain(MetadataDomain))["RUN"]; got != "second" {
			t.Errorf("RUN after replacement: got %q, want second", got)
		}
	})
}

func TestProductSpecErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		spec ProductSpec
		want string
	}{
		{"no classes", ProductSpec{Cols: 2, Rows: 2}, "no classes"},
		{"zero value", ProductSpec{Cols: 2, Rows: 2, Classes: []ClassInfo{{Value: 0, Name: "x"}}}, "value 0"},
		{"duplicate", ProductSpec{Cols: 2, Rows: 2, Classes: []ClassInfo{{Value: 2}, {Value: 2}}}, "twice"},
		{"size", ProductSpec{Cols: 0, Rows: 2, Classes: []ClassInfo{{Value: 1}}}, "size"},
		{"option", ProductSpec{Cols: 2, Rows: 2, Classes: []ClassInfo{{Value: 1}}, CreationOptions: []string{"COMPRESS"}}, "KEY=VALUE"},
		{"block size", ProductSpec{Cols: 2, Rows: 2, Classes: []ClassInfo{{Value: 1}}, CreationOptions: []string{"BLOCKSIZE=100"}}, "BLOCKSIZE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CreateProduct(filepath.Join(dir, "p.tif"), tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			// A /vsi product is staged in a local directory, which a
			// refused spec once left behind (three early returns).
			staging := t.TempDir()
			t.Setenv("TMPDIR", staging)
			if _, err := CreateProduct("/vsimem/pnec-test/p.tif", tc.spec); err == nil {
				t.Errorf("/vsimem: got no error")
			}
			if got := listDir(t, staging); len(got) != 0 {
				t.Errorf("/vsi staging left in TMPDIR: %v", got)
			}
		})
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("files left: %v", got)
	}
}

func TestOverviewLevels(t *testing.T) {
	for _, tc := range []struct {
		cols, rows, block int
		want              []int
	}{
		{512, 512, 512, nil}, {513, 10, 512, []int{2}}, {1100, 700, 512, []int{2, 4}}, {5000, 100, 512, []int{2, 4, 8, 16}},
		{86, 83, 32, []int{2, 4}}, {86, 83, 512, nil}, {1100, 700, 256, []int{2, 4, 8}},
	} {
		if got := overviewLevels(tc.cols, tc.rows, tc.block); !slices.Equal(got, tc.want) {
			t.Errorf("%dx%d in %d blocks: got %v, want %v", tc.cols, tc.rows, tc.block, got, tc.want)
		}
	}
}

func TestProductCreationOptionsAndMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.tif")
	p, err := CreateProduct(path, ProductSpec{Cols: 20, Rows: 10, Classes: testClasses(2), CreationOptions: []string{"COMPRESS=LZW"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WriteRows(0, make([]uint16, 200), make([]float32, 200)); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	ds, err := godal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if got := ds.Metadata("COMPRESSION", godal.Domain("IMAGE_STRUCTURE")); got != "LZW" {
		t.Errorf("COMPRESSION: got %q, want LZW", got)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Same mode as any new file (0666 less umask), not a temp file's 0600.
	ref, err := os.Create(filepath.Join(dir, "ref"))
	if err != nil {
		t.Fatal(err)
	}
	ref.Close()
	rst, _ := os.Stat(ref.Name())
	if st.Mode().Perm() != rst.Mode().Perm() {
		t.Errorf("product mode: got %v, want %v", st.Mode().Perm(), rst.Mode().Perm())
	}
}

// TestProductNoSidecarLeftovers: a directory holding a file that one of
// GDAL's metadata readers takes for a satellite sidecar (ALOS reads any
// summary.txt as IMD metadata) gets the product and nothing else. GDAL
// wrote the stage's IMD into a .stage.IMD file when the stage was reopened
// for update with sidecar probing, and it was left behind.
func TestProductNoSidecarLeftovers(t *testing.T) {
	for _, pc := range productCases {
		t.Run(pc.name, func(t *testing.T) {
			dir := t.TempDir()
			summary := "memory budget 4.0 GiB\nvalid pixels 1200 of 1200\n"
			if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary), 0o644); err != nil {
				t.Fatal(err)
			}
			writeTestProduct(t, filepath.Join(dir, "p.tif"), pc, 40, 30, nil)
			got := listDir(t, dir)
			for _, f := range got {
				if strings.HasPrefix(f, ".") {
					t.Errorf("temporary %s left behind", f)
				}
			}
			if want := []string{"p.qml", "p.thumbnail.png", "p.tif", "p.tif.aux.xml", "summary.txt"}; !pc.float32 && !slices.Equal(got, want) {
				t.Errorf("files: got %v, want %v", got, want)
			}
		})
	}
}

// TestProductStatsMatchReadBack: the statistics the writer gathers while
// rows stream in equal what a reader of the finished product finds
// (class counts with no data under 0, valid pixels, reliability range,
// mean and deviation in stored percent), for Byte and UInt16 products and
// with the Float32 reliability file, whose main product keeps percent.
func TestProductStatsMatchReadBack(t *testing.T) {
	for _, pc := range productCases {
		t.Run(pc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.tif")
			const cols, rows = 45, 38
			spec := ProductSpec{Cols: cols, Rows: rows, GeoRef: GeoRef{GeoTransform: testGT, WKT: utm31(t)},
				Classes: testClasses(pc.nClasses), ReliabilityFloat32: pc.float32}
			p, err := CreateProduct(path, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for r0 := 0; r0 < rows; r0 += 11 {
				n := min(11, rows-r0)
				cl, rl := make([]uint16, n*cols), make([]float32, n*cols)
				for i := range cl {
					cl[i], rl[i] = productPixel(spec.Classes, r0+i/cols, i%cols)
				}
				if err := p.WriteRows(r0, cl, rl); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := p.Stats()

			blk := readWhole(t, path, cols, rows)
			want := ProductStats{Rows: rows, Cols: cols, ClassCounts: map[int]int64{}, RelMin: math.Inf(1), RelMax: math.Inf(-1)}
			var sum, sum2 float64
			for i := range cols * rows {
				cls, rel := int(blk.Data[i*2]), float64(blk.Data[i*2+1])
				want.ClassCounts[cls]++
				if cls == 0 {
					continue
				}
				want.ValidPixels++
				sum += rel
				sum2 += rel * rel
				want.RelMin, want.RelMax = min(want.RelMin, rel), max(want.RelMax, rel)
			}
			want.RelMean = sum / float64(want.ValidPixels)
			want.RelStdev = math.Sqrt(max(0, sum2/float64(want.ValidPixels)-want.RelMean*want.RelMean))
			if want.ClassCounts[0] == 0 || want.ValidPixels == 0 {
				t.Fatalf("fixture has %d no-data and %d valid pixels; want both", want.ClassCounts[0], want.ValidPixels)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("writer's stats %+v, read back %+v", got, want)
			}
		})
	}
}
