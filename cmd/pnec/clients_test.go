package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
)

// TestClientsFixture writes the products that scripts/check_clients.py
// opens in QGIS (make check-clients) to $PNEC_CLIENTS_OUT; without that
// variable it is skipped. It runs pnec as users do:
//
//	geo/scene.tif       georeferenced scene, a no-data block at the bottom left
//	geo/out/scene.{tif,qml,json}, geo/out/collection.json   its product (pnec batch)
//	local/scene.tif     the same pixels without geotransform or CRS
//	local/product.tif   its product (pnec classify), .qml beside it
//	plugin/model.pnec, plugin/labels.tif, plugin/big.tif   for the QGIS plugin's
//	                    check (scripts/check_qgis_plugin.py): the model, the
//	                    scene's labels, and a 384 x 384 scene that takes a while
func TestClientsFixture(t *testing.T) {
	out := os.Getenv("PNEC_CLIENTS_OUT")
	if out == "" {
		t.Skip("PNEC_CLIENTS_OUT not set: the fixture of make check-clients")
	}
	modelPath := fixture.ModelFile(t)
	data, _ := fixture.SceneData(1)
	// No-data block: rows 26.. and columns ..5 (bottom left).
	for r := 26; r < fixture.Rows; r++ {
		for c := 0; c < 6; c++ {
			for b := 0; b < fixture.Bands; b++ {
				data[(r*fixture.Cols+c)*fixture.Bands+b] = fixture.NoData
			}
		}
	}
	geoDir, localDir := filepath.Join(out, "geo"), filepath.Join(out, "local")
	for _, d := range []string{geoDir, localDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	scene := filepath.Join(geoDir, "scene.tif")
	if err := fixture.WriteRaster(scene, fixture.Rows, fixture.Cols, fixture.Bands, data); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(localDir, "scene.tif")
	nd := fixture.NoData
	writeGeoTIFF(t, local, geo.RasterSpec{Cols: fixture.Cols, Rows: fixture.Rows, Bands: fixture.Bands,
		DataType: geo.Float32, NoData: &nd}, data)
	ctx := context.Background()
	prodDir := filepath.Join(geoDir, "out")
	if err := run(ctx, []string{"pnec", "batch", "--model", modelPath, "--backend", "go", "--out-dir", prodDir, "--report", filepath.Join(out, "report.jsonl"),
		"--stac-collection", filepath.Join(prodDir, "collection.json"), "--license", "CC-BY-4.0", "--datetime", "2024-06-01T10:30:00Z", "-q", scene}); err != nil {
		t.Fatalf("pnec batch: %v", err)
	}
	if err := run(ctx, []string{"pnec", "classify", "--model", modelPath, "--backend", "go", "--scene", local, "--out", filepath.Join(localDir, "product.tif")}); err != nil {
		t.Fatalf("pnec classify: %v", err)
	}
	pluginFixture(t, filepath.Join(out, "plugin"), modelPath)
}

// pluginFixture writes what the QGIS plugin's check runs pnec on.
func pluginFixture(t *testing.T, dir, modelPath string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(modelPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.pnec"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, labels := fixture.SceneData(1)
	lv := make([]float32, len(labels))
	for i, v := range labels {
		lv[i] = float32(v)
	}
	writeGeoTIFF(t, filepath.Join(dir, "labels.tif"), geo.RasterSpec{Cols: fixture.Cols, Rows: fixture.Rows, Bands: 1,
		DataType: geo.Byte, GeoRef: fixture.GeoRef}, lv)
	data, _ := fixture.SceneData(1)
	const n = 384
	big := make([]float32, n*n*fixture.Bands)
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			src := ((r%fixture.Rows)*fixture.Cols + c%fixture.Cols) * fixture.Bands
			copy(big[(r*n+c)*fixture.Bands:], data[src:src+fixture.Bands])
		}
	}
	if err := fixture.WriteRaster(filepath.Join(dir, "big.tif"), n, n, fixture.Bands, big); err != nil {
		t.Fatal(err)
	}
}

// TestBrowsersFixture writes the batch output folder that
// scripts/check-browsers.sh opens in headless Chromium and STAC Browser
// (make check-browsers) to $PNEC_BROWSERS_OUT; without that variable it is
// skipped. Three scenes placed 2 km apart and a corrupt file go through
// pnec batch as a user runs it (root Catalog, thumbnails, index.html):
//
//	in/north.tif, in/east.tif, in/south.tif, in/broken.tif
//	out/                 the products, Items, catalog.json, index.html
//	report.jsonl         the run's report (the statuses the checks expect)
//	out-collection/      the same with --stac-collection out-collection/catalog.json
//	                     (a Collection as the root, under the name the check opens)
func TestBrowsersFixture(t *testing.T) {
	out := os.Getenv("PNEC_BROWSERS_OUT")
	if out == "" {
		t.Skip("PNEC_BROWSERS_OUT not set: the fixture of make check-browsers")
	}
	modelPath := fixture.ModelFile(t)
	in := filepath.Join(out, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"north", "east", "south"} {
		data, _ := fixture.SceneData(uint64(3 + i))
		ref := fixture.GeoRef
		ref.GeoTransform[0] += float64([]int{0, 2000, 800}[i])
		ref.GeoTransform[3] -= float64([]int{0, 1200, 2600}[i])
		if err := fixture.WriteFloat32(filepath.Join(in, name+".tif"), fixture.Rows, fixture.Cols, fixture.Bands, data, ref, fixture.NoData); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(in, "broken.tif"), []byte("not a GeoTIFF"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"pnec", "batch", "--model", modelPath, "--backend", "go", "--out-dir", filepath.Join(out, "out"),
		"--report", filepath.Join(out, "report.jsonl"), "--datetime", fixture.Acquired, "-q", in})
	if err == nil {
		t.Fatal("pnec batch: want the corrupt scene's failure")
	}
	// The same night with a Collection as the root (named catalog.json, the
	// name the check's STAC Browser build opens).
	coll := filepath.Join(out, "out-collection")
	err = run(context.Background(), []string{"pnec", "batch", "--model", modelPath, "--backend", "go", "--out-dir", coll,
		"--stac-collection", filepath.Join(coll, "catalog.json"), "--license", "CC-BY-4.0",
		"--report", filepath.Join(out, "report-collection.jsonl"), "--datetime", fixture.Acquired, "-q", in})
	if err == nil {
		t.Fatal("pnec batch --stac-collection: want the corrupt scene's failure")
	}
}
