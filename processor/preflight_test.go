package processor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
)

// counting is a pointwise network that counts the tiles it runs.
type counting struct {
	pointwise
	calls *atomic.Int32
}

func (c counting) Predict(ctx context.Context, s model.Scene) (model.Prediction, error) {
	c.calls.Add(1)
	return c.pointwise.Predict(ctx, s)
}

// tinyModel is the shared tiny model (its classes, bands and recovery are
// all these tests use; the network is replaced).
func tinyModel(t *testing.T) *model.Model {
	t.Helper()
	if testing.Short() {
		t.Skip("trains the shared tiny model: skipped with -short")
	}
	m := fixture.LoadModel(t)
	return m
}

func writeTyped(t *testing.T, path string, rows, cols, bands int, dt geo.DataType, nodata *float64, data []float32) {
	t.Helper()
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{Cols: cols, Rows: rows, Bands: bands, DataType: dt, GeoRef: fixture.GeoRef, NoData: nodata})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.WriteWindow(geo.Window{Cols: cols, Rows: rows}, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestClassifyRefusesScenesWithoutSignal: a scene with no valid pixel, or
// whose valid pixels are 0 in every band, fails naming the scene, before
// the network runs on its last tile, and leaves nothing in the output
// directory; a scene with a single non-zero pixel in its last tile is
// classified.
func TestClassifyRefusesScenesWithoutSignal(t *testing.T) {
	m := tinyModel(t)
	nb := m.Bands()
	const rows, cols = 70, 90
	nd := -9999.0
	fill := func(v float32) []float32 {
		d := make([]float32, rows*cols*nb)
		for i := range d {
			d[i] = v
		}
		return d
	}
	nanInf := fill(0)
	for i := range nanInf {
		nanInf[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[i%3]
	}
	zerosWithNoData := fill(0)
	for i := 0; i < rows*cols; i += 7 {
		zerosWithNoData[i*nb] = float32(nd)
	}
	lastPixel := fill(0)
	lastPixel[len(lastPixel)-1] = 1
	for _, tc := range []struct {
		name   string
		dt     geo.DataType
		nodata *float64
		data   []float32
		tile   int
		want   error  // nil: classified
		words  string // in the message
	}{
		{"NaN and Inf, whole image", geo.Float32, nil, nanInf, 0, ErrNoValidPixels, "no valid pixels"},
		{"all nodata, tiled", geo.Float32, &nd, fill(float32(nd)), 32, ErrNoValidPixels, "no valid pixels"},
		{"Int16 zeros without nodata, whole image", geo.Int16, nil, fill(0), 0, ErrNoSignal, "every pixel is 0 in all bands and the scene sets no nodata"},
		{"Int16 zeros without nodata, tiled", geo.Int16, nil, fill(0), 32, ErrNoSignal, "set nodata"},
		{"Float32 zeros beside nodata", geo.Float32, &nd, zerosWithNoData, 0, ErrNoSignal, "every valid pixel is 0"},
		{"one non-zero pixel in the last tile", geo.Int16, nil, lastPixel, 32, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, outDir := t.TempDir(), t.TempDir()
			scene := filepath.Join(in, "scene.tif")
			writeTyped(t, scene, rows, cols, nb, tc.dt, tc.nodata, tc.data)
			c, err := NewClassifier(m, Options{TileSize: tc.tile})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			closePredictor(c)
			var calls atomic.Int32
			c.pred = counting{pointwise{classes: len(m.Classes())}, &calls}
			out := filepath.Join(outDir, "product.tif")
			res, err := c.Run(context.Background(), Request{Scene: scene, Out: out})
			ents, _ := os.ReadDir(outDir)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("got %v, want a product", err)
				}
				if res.ValidPixels != rows*cols {
					t.Errorf("valid pixels: got %d, want %d", res.ValidPixels, rows*cols)
				}
				if len(ents) == 0 {
					t.Errorf("no product in the output directory")
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), scene) || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("error %q: want the scene's name and %q", err, tc.words)
			}
			if n, tiles := int(calls.Load()), res.Tiles; n >= tiles {
				t.Errorf("network ran on %d of %d tiles, want fewer (the verdict comes before the last)", n, tiles)
			}
			for _, e := range ents {
				t.Errorf("left in the output directory: %s", e.Name())
			}
		})
	}
}

// TestClassifyRefusesHugeScene: a VRT declaring 10^6 x 10^6 pixels fails
// at once, naming the scene and the free space, with nothing written.
func TestClassifyRefusesHugeScene(t *testing.T) {
	m := tinyModel(t)
	in, outDir := t.TempDir(), t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(outDir, &fs); err != nil || int64(fs.Bavail)*int64(fs.Bsize) > 2<<40 {
		t.Skipf("the temporary directory's file system has over 2 TiB free (or cannot be queried: %v): the product would fit", err)
	}
	src := filepath.Join(in, "src.tif")
	if err := fixture.WriteScene(src, 5); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`<VRTDataset rasterXSize="1000000" rasterYSize="1000000">` + "\n")
	for i := 1; i <= m.Bands(); i++ {
		fmt.Fprintf(&b, `<VRTRasterBand dataType="Float32" band="%d"><SimpleSource><SourceFilename relativeToVRT="0">%s</SourceFilename><SourceBand>%d</SourceBand></SimpleSource></VRTRasterBand>`+"\n", i, src, i)
	}
	b.WriteString("</VRTDataset>\n")
	scene := filepath.Join(in, "huge.vrt")
	if err := os.WriteFile(scene, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Run(context.Background(), Request{Scene: scene, Out: filepath.Join(outDir, "huge.tif")})
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("refusing took %s, want at once", el)
	}
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("got %v, want ErrNoSpace", err)
	}
	for _, w := range []string{scene, outDir, "free", "2.4 TiB"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if ents, _ := os.ReadDir(outDir); len(ents) > 0 {
		t.Errorf("output directory holds %d entries after the refusal", len(ents))
	}
}
