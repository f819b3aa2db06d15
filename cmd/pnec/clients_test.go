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
