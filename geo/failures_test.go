package geo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWorkerThreadFailureFailsWriters: a GDAL failure reported on a thread
// without a handler of its own (as GDAL's block-compression and decoding
// worker threads report them) while a product or a GeoTIFF is written fails
// its Commit with the message, publishes nothing and leaves no temporary;
// one reported before the writer was created does not. (The real case, an
// out-of-memory compression of 16384 px COG tiles, is
// cmd/pnec TestWriteFailureIsNotIgnored.)
func TestWorkerThreadFailureFailsWriters(t *testing.T) {
	t.Run("product", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "p.tif")
		writeTestProduct(t, path, productCases[0], 40, 30, nil)
		old, _ := os.ReadFile(path)
		spec := ProductSpec{Cols: 40, Rows: 30, Classes: testClasses(3)}
		emitFailureOffThread("failure before the product") // not this product's
		p, err := CreateProduct(path, spec)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.WriteRows(0, make([]uint16, 40*30), make([]float32, 40*30)); err != nil {
			t.Fatal(err)
		}
		emitFailureOffThread("PredictorEncodeTile: simulated out of memory")
		err = p.Commit(context.Background())
		var ge *GDALError
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), "PredictorEncodeTile: simulated out of memory") ||
			strings.Contains(err.Error(), "failure before the product") {
			t.Fatalf("Commit: got %v, want a *GDALError with this product's failure only", err)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
			t.Error("the earlier product was replaced")
		}
		if got := listDir(t, dir); !slices.Equal(got, []string{"p.qml", "p.tif", "p.tif.aux.xml"}) {
			t.Errorf("files after the failure: %v, want the earlier product's only", got)
		}
	})
	t.Run("geotiff", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.tif")
		w, err := CreateGeoTIFF(path, RasterSpec{Cols: 8, Rows: 4, Bands: 2, DataType: Float32})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := w.WriteWindow(Window{Cols: 8, Rows: 4}, make([]float32, 64)); err != nil {
			t.Fatal(err)
		}
		emitFailureOffThread("simulated compression failure")
		if err := w.Commit(); err == nil || !strings.Contains(err.Error(), "simulated compression failure") {
			t.Fatalf("Commit: got %v, want the failure", err)
		}
		if got := listDir(t, dir); len(got) != 0 {
			t.Errorf("files after the failure: %v, want none", got)
		}
	})
}
