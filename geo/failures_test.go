package geo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airbusgeo/godal"
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
		// Before the commit the product's stages are written uncompressed,
		// on this thread: a worker thread's failure then is another's.
		emitFailureOffThread("failure before the commit")
		// The product's own worker-thread work (COG compression, overviews)
		// is in its commit: a failure there is the product's, once per
		// compression job, each naming its job's scratch file.
		atCommitPeak = func(string) {
			for i := range 3 {
				emitFailureOffThread(fmt.Sprintf("PredictorEncodeTile:/vsimem/gtiff/thread/job/0x5%d: simulated out of memory", i))
			}
		}
		defer func() { atCommitPeak = nil }()
		err = p.Commit(context.Background())
		var ge *GDALError
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), "simulated out of memory") ||
			strings.Contains(err.Error(), "failure before the") {
			t.Fatalf("Commit: got %v, want a *GDALError with this product's failure only", err)
		}
		if strings.Count(err.Error(), "simulated out of memory") != 1 || !strings.Contains(err.Error(), "(3 failures") {
			t.Errorf("Commit: got %q, want the failure once with its count", err)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, old) {
			t.Error("the earlier product was replaced")
		}
		if got := listDir(t, dir); !slices.Equal(got, []string{"p.qml", "p.thumbnail.png", "p.tif", "p.tif.aux.xml"}) {
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

// TestQuietMessagesKeepCountingFailures: QuietMessages (pnec without
// --verbose) silences GDAL's printing but not the counting of worker-thread
// failures that fails a product write; it once replaced the process-wide
// handler with GDAL's quiet one, which dropped both.
func TestQuietMessagesKeepCountingFailures(t *testing.T) {
	QuietMessages()
	w := startFailureWatch()
	emitFailureOffThread("quiet test failure")
	if err := w.err(); err == nil || !strings.Contains(err.Error(), "quiet test failure") {
		t.Fatalf("after QuietMessages a worker-thread failure gave %v, want it counted", err)
	}
}

// TestSceneReadsDoNotFailWriters: a scene read while a product is written
// (by the same classify before its commit, or by another job of a batch
// during it) does not fail the product through GDAL's worker threads. GDAL
// 3.6's multithreaded decoding of a band-interleaved GeoTIFF of 3 or more
// bands reports `Bad value N for "ExtraSamples" tag` on its threads for
// every block while decoding it correctly; counted as the product's, they
// refused every such scene ("commit: GDAL failed while the product was
// written"). Many bands, both interleavings, DEFLATE, 32 px tiles
// that the 95 px scene ends inside; the read is checked against what was
// written.
func TestSceneReadsDoNotFailWriters(t *testing.T) {
	if DecodeThreads() < 2 {
		t.Skip("GDAL_NUM_THREADS gives one decoding thread: GDAL's multithreaded decoding is not exercised")
	}
	const cols, rows, bands = 95, 95, 156
	for _, interleave := range []string{"BAND", "PIXEL"} {
		t.Run(interleave, func(t *testing.T) {
			dir := t.TempDir()
			scene := filepath.Join(dir, "scene.tif")
			want := make([]float32, cols*rows*bands)
			for i := range want {
				want[i] = float32(i%977) * 0.5
			}
			ds, err := godal.Create(godal.GTiff, scene, bands, godal.Float32, cols, rows, godal.CreationOption(
				"INTERLEAVE="+interleave, "TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=32", "COMPRESS=DEFLATE"))
			if err != nil {
				t.Fatal(err)
			}
			if err := ds.Write(0, 0, want, cols, rows); err != nil {
				t.Fatal(err)
			}
			if err := ds.Close(); err != nil {
				t.Fatal(err)
			}
			read := func() {
				t.Helper()
				for i, v := range readWhole(t, scene, cols, rows).Data {
					if v != want[i] {
						t.Fatalf("pixel %d band %d: read %v, want %v", i/bands, i%bands, v, want[i])
					}
				}
			}
			out := filepath.Join(dir, "p.tif")
			p, err := CreateProduct(out, ProductSpec{Cols: cols, Rows: rows, Classes: testClasses(3)})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			read() // the product's own scene, before its commit
			if err := p.WriteRows(0, make([]uint16, cols*rows), make([]float32, cols*rows)); err != nil {
				t.Fatal(err)
			}
			atCommitPeak = func(string) { read() } // another job's scene, during the commit
			defer func() { atCommitPeak = nil }()
			if err := p.Commit(context.Background()); err != nil {
				t.Fatalf("Commit with scene reads beside it: %v", err)
			}
		})
	}
}

// TestCorruptBlockFailsTheRead: failures of GDAL's decoding threads are not
// counted against a product (TestSceneReadsDoNotFailWriters) because the
// read judges them by its result: a block that cannot be decoded fails the
// read itself.
func TestCorruptBlockFailsTheRead(t *testing.T) {
	if DecodeThreads() < 2 {
		t.Skip("GDAL_NUM_THREADS gives one decoding thread: GDAL's multithreaded decoding is not exercised")
	}
	const cols, rows, bands = 64, 64, 4
	dir := t.TempDir()
	scene := filepath.Join(dir, "scene.tif")
	ds, err := godal.Create(godal.GTiff, scene, bands, godal.Float32, cols, rows, godal.CreationOption(
		"INTERLEAVE=BAND", "TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=32", "COMPRESS=DEFLATE"))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, cols*rows*bands)
	for i := range data {
		data[i] = float32(i % 1013)
	}
	if err := ds.Write(0, 0, data, cols, rows); err != nil {
		t.Fatal(err)
	}
	if err := ds.Close(); err != nil {
		t.Fatal(err)
	}
	// Overwrite the compressed bytes of band 3's block (1, 1).
	ds, err = godal.Open(scene)
	if err != nil {
		t.Fatal(err)
	}
	off, _ := strconv.ParseInt(ds.Bands()[2].Metadata("BLOCK_OFFSET_1_1", godal.Domain("TIFF")), 10, 64)
	size, _ := strconv.ParseInt(ds.Bands()[2].Metadata("BLOCK_SIZE_1_1", godal.Domain("TIFF")), 10, 64)
	ds.Close()
	if off == 0 || size < 8 {
		t.Fatalf("block offset %d size %d: GDAL did not say where the block is", off, size)
	}
	f, err := os.OpenFile(scene, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, int(size)), off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err := Open(scene)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ReadWindow(context.Background(), Window{Cols: cols, Rows: rows}); err == nil {
		t.Fatal("a read over a corrupt block succeeded")
	}
}
