package processor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
)

// The sceneFixture is a small synthetic scene with a few land-cover regions, a
// nodata hole and scattered nodata pixels, written as a georeferenced
// GeoTIFF, and a small model trained on it. It is built once per test
// binary, on first use.
type sceneFixture struct {
	dir        string
	scene      string // GeoTIFF path
	rows, cols int
	bands      int
	labels     []int32 // class value per pixel (0 = nodata pixel)
	valid      []bool
	model      *model.Model
	modelPath  string
	geoRef     geo.GeoRef
	trainTime  time.Duration
}

var (
	fixOnce sync.Once
	fix     *sceneFixture
	fixErr  error
)

const (
	fixRows, fixCols, fixBands, fixClasses = 224, 260, 16, 5
	fixTrainSize                           = 96 // rows and columns of the training scene
	fixEpochs                              = 60
	fixNoData                              = -9999
)

func getFixture(tb testing.TB) *sceneFixture {
	tb.Helper()
	if testing.Short() {
		tb.Skip("trains a model on a 96x96 scene (about a minute here): skipped with -short")
	}
	fixOnce.Do(func() { fix, fixErr = buildFixture() })
	if fixErr != nil {
		tb.Fatalf("sceneFixture: %v", fixErr)
	}
	return fix
}

func TestMain(m *testing.M) {
	code := fixture.RunTests(m)
	if benchTmp != "" {
		os.RemoveAll(benchTmp)
	}
	if fix != nil {
		os.RemoveAll(fix.dir)
	}
	os.Exit(code)
}

// synthScene draws class regions as the Voronoi cells of a few seeds, each
// class with its own smooth spectrum, plus within-class variation and noise.
// The class spectra depend on bands and classes only, so scenes of any
// size and layout (seed) share them and one model serves them all.
func synthScene(rows, cols, bands, classes int, seed uint64) (data []float32, labels []int32) {
	srng := rand.New(rand.NewPCG(uint64(bands), uint64(classes)))
	rng := rand.New(rand.NewPCG(seed, 7))
	type pt struct{ r, c float64 }
	seeds := make([]pt, max(3*classes, rows*cols/1500))
	cls := make([]int32, len(seeds))
	for i := range seeds {
		seeds[i] = pt{rng.Float64() * float64(rows), rng.Float64() * float64(cols)}
		cls[i] = int32(i%classes) + 1
	}
	means := make([][]float64, classes)
	for k := range means {
		means[k] = make([]float64, bands)
		a, f, ph := 0.2+0.6*srng.Float64(), 0.5+3*srng.Float64(), 2*math.Pi*srng.Float64()
		for b := range means[k] {
			x := float64(b) / float64(bands)
			means[k][b] = 1000 * (0.3 + a*(0.5+0.5*math.Sin(2*math.Pi*f*x+ph)))
		}
	}
	data = make([]float32, rows*cols*bands)
	labels = make([]int32, rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			best, bd := 0, math.Inf(1)
			for i, s := range seeds {
				if d := (s.r-float64(r))*(s.r-float64(r)) + (s.c-float64(c))*(s.c-float64(c)); d < bd {
					best, bd = i, d
				}
			}
			k := cls[best]
			labels[r*cols+c] = k
			gain := 1 + 0.05*math.Sin(float64(r)/9)*math.Cos(float64(c)/13)
			for b := 0; b < bands; b++ {
				data[(r*cols+c)*bands+b] = float32(means[k-1][b]*gain + 15*rng.NormFloat64())
			}
		}
	}
	return data, labels
}

// writeScene writes data as a Float32 GeoTIFF with nodata fixNoData.
// writeSynthScene writes synthScene(rows, cols, bands, classes, seed) on
// fixture.GeoRef as path and returns path.
func writeSynthScene(t *testing.T, path string, rows, cols, bands, classes int, seed uint64) string {
	t.Helper()
	data, _ := synthScene(rows, cols, bands, classes, seed)
	if err := writeScene(path, rows, cols, bands, data, fixture.GeoRef); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeScene(path string, rows, cols, bands int, data []float32, ref geo.GeoRef) error {
	return fixture.WriteFloat32(path, rows, cols, bands, data, ref, float64(fixNoData))
}

func buildFixture() (f *sceneFixture, err error) {
	dir, err := os.MkdirTemp("", "pnec-processor-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	// The model learns on a small scene (training cost grows with it) and
	// classifies a larger one drawn from the same class spectra, so that
	// tiles of realistic sizes fit in a scene that still runs whole.
	cfg := model.DefaultConfig()
	cfg.Hidden, cfg.DState, cfg.HeadDim, cfg.Chunk = 16, 8, 16, 32
	cfg.Epochs, cfg.ECWarmupEpochs, cfg.LearningRate = fixEpochs, 10, 3e-3
	tdata, tlabels := synthScene(fixTrainSize, fixTrainSize, fixBands, fixClasses, 1)
	start := time.Now()
	ts := model.Scene{Rows: fixTrainSize, Cols: fixTrainSize, Bands: fixBands, Data: tdata}
	m, err := model.Train(context.Background(), ts, tlabels, model.TrainOptions{Config: cfg, TrainPerClass: 40, Backend: "go"})
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	f = &sceneFixture{dir: dir, rows: fixRows, cols: fixCols, bands: fixBands, scene: filepath.Join(dir, "scene.tif"),
		model: m, trainTime: time.Since(start), modelPath: filepath.Join(dir, "model.pnec")}
	if err := m.Save(f.modelPath); err != nil {
		return nil, err
	}

	data, labels := synthScene(fixRows, fixCols, fixBands, fixClasses, 2)
	// A nodata hole and scattered nodata pixels.
	f.valid = make([]bool, fixRows*fixCols)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range f.valid {
		r, c := i/fixCols, i%fixCols
		f.valid[i] = !(r >= 50 && r < 62 && c >= 70 && c < 90) && rng.IntN(200) != 0
		if !f.valid[i] {
			labels[i] = 0
			for b := 0; b < fixBands; b++ {
				data[i*fixBands+b] = fixNoData
			}
		}
	}
	f.labels = labels
	f.geoRef = geo.GeoRef{GeoTransform: [6]float64{448000, 2.5, 0, 5412000, 0, -2.5}, EPSG: 32632, WKT: epsg32632WKT}
	if err := writeScene(f.scene, fixRows, fixCols, fixBands, data, f.geoRef); err != nil {
		return nil, fmt.Errorf("write scene: %w", err)
	}
	return f, nil
}

// epsg32632WKT is WGS 84 / UTM zone 32N, so that the sceneFixture does not
// depend on a CRS lookup.
const epsg32632WKT = `PROJCS["WGS 84 / UTM zone 32N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4326"]],PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",9],PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],AXIS["Northing",NORTH],AUTHORITY["EPSG","32632"]]`

func TestFixtureTrains(t *testing.T) {
	f := getFixture(t)
	t.Logf("trained %d-band %d-class model in %s", f.model.Bands(), len(f.model.Classes()), f.trainTime)
}
