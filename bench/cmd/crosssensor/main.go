// Command crosssensor measures one model on several sensors
// (docs/sensors.md "One model for several sensors"):
//
//	go run ./bench/cmd/crosssensor -out bench/crosssensor.json -md bench/crosssensor.md
//	make bench-crosssensor
//
// For each real AVIRIS scene of ../shared/data (SalinasA and Jasper Ridge,
// with their fixed training splits) it simulates each sensor's delivery of
// the same ground: the sensor's band table (spectral.Sensors) and Gaussian
// spectral responses of its centres and widths, applied to the AVIRIS
// spectra (simulate.go), written as an ENVI cube with its wavelengths,
// widths and bad band list, as a delivery states them. Then, for each
// sensor T and each seed, it trains the default model on T's simulated
// scene restricted to the bands every other sensor covers (what `pnec
// train --bands-common-with` does, with the other simulated scenes), and
// evaluates it on the test pixels of every sensor's simulated scene: T's
// own (its bands as they are) and each other's (resampled to the model's
// bands, as classify does). The drop is T's own OA minus the other's, per
// seed. It writes every run as JSON and the tables as Markdown, after each
// training run (a stopped run keeps what it measured).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pnec/pnec/evaluation"
	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/shareddata"
	"github.com/pnec/pnec/internal/tempfiles"
	"github.com/pnec/pnec/matfile"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/spectral"
)

// sceneData is a real scene: its cube, labels and fixed training split.
type sceneData struct {
	name              string
	rows, cols, bands int
	px                []float32
	labels, train     []float32
}

func loadScene(data, name string) (sceneData, error) {
	s := sceneData{name: name}
	read := func(file, v string) (int, int, int, []float32, error) {
		return matfile.ReadImage(filepath.Join(data, file), v)
	}
	var err error
	switch name {
	case "SalinasA":
		if s.rows, s.cols, s.bands, s.px, err = read("SalinasA/SalinasA_corrected.mat", "salinasA_corrected"); err != nil {
			return s, err
		}
		if _, _, _, s.labels, err = read("SalinasA/SalinasA_gt.mat", "salinasA_gt"); err != nil {
			return s, err
		}
		_, _, _, s.train, err = read("SalinasA/SalinasA_train_seed12345.mat", "train")
	case "JasperRidge":
		if s.rows, s.cols, s.bands, s.px, err = matfile.ReadUnmixing(filepath.Join(data, "JasperRidge/JasperRidge2_R198.mat")); err != nil {
			return s, err
		}
		if _, _, _, s.labels, err = read("JasperRidge/JasperRidge_gt.mat", "jasper_gt"); err != nil {
			return s, err
		}
		_, _, _, s.train, err = read("JasperRidge/JasperRidge_train_seed12345.mat", "train")
	default:
		return s, fmt.Errorf("unknown scene %q (SalinasA, JasperRidge)", name)
	}
	if err == nil && len(avirisKept(name)) != s.bands {
		err = fmt.Errorf("%s: %d bands, the AVIRIS channel list keeps %d", name, s.bands, len(avirisKept(name)))
	}
	return s, err
}

// writeClasses writes class values as a one-band UInt16 GeoTIFF on the
// scene's (local) grid.
func writeClasses(path string, rows, cols int, v []float32) error {
	w, err := geo.CreateGeoTIFF(path, geo.RasterSpec{Cols: cols, Rows: rows, Bands: 1, DataType: geo.UInt16})
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.WriteWindow(geo.Window{Cols: cols, Rows: rows}, v); err != nil {
		return err
	}
	return w.Commit()
}

// delivery is one sensor's simulated scene on disk.
type delivery struct {
	sensor string
	path   string
	bands  spectral.BandSet // as pnec reads it
}

// Run is one trained model's results.
type Run struct {
	Scene       string             `json:"scene"`
	TrainSensor string             `json:"train_sensor"`
	Seed        int64              `json:"seed"`
	ModelBands  int                `json:"model_bands"`
	SceneBands  int                `json:"scene_bands"`
	Selection   string             `json:"selection"`
	OA          map[string]float64 `json:"oa"` // by the sensor whose scene it was applied to
	TrainSecs   float64            `json:"train_seconds"`
}

// Report is the JSON output.
type Report struct {
	Command  string   `json:"command"`
	Started  string   `json:"started"`
	Sensors  []string `json:"sensors"`
	Seeds    []int64  `json:"seeds"`
	Epochs   int      `json:"epochs"`
	Backend  string   `json:"backend"`
	Runs     []Run    `json:"runs"`
	Finished bool     `json:"finished"`
}

func main() {
	scenes := flag.String("scenes", "SalinasA,JasperRidge", "real scenes to simulate from")
	sensors := flag.String("sensors", "EnMAP,EMIT,PRISMA,AVIRIS-NG", "sensors to simulate (spectral.Sensors names)")
	seeds := flag.Int("seeds", 5, "training seeds (202501, 202502, ...) per sensor and scene")
	epochs := flag.Int("epochs", model.DefaultConfig().Epochs, "training epochs")
	backend := flag.String("backend", "go", "compute backend")
	out := flag.String("out", "bench/crosssensor.json", "JSON of every run")
	md := flag.String("md", "bench/crosssensor.md", "Markdown tables")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, strings.Split(*scenes, ","), strings.Split(*sensors, ","), *seeds, *epochs, *backend, *out, *md); err != nil {
		fmt.Fprintln(os.Stderr, "crosssensor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, sceneNames, sensorNames []string, nSeeds, epochs int, backend, out, md string) error {
	data, err := shareddata.Find(".")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "pnec-crosssensor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rep := Report{Command: strings.Join(os.Args, " "), Started: time.Now().UTC().Format(time.RFC3339), Epochs: epochs, Backend: backend}
	for i := range nSeeds {
		rep.Seeds = append(rep.Seeds, model.DefaultSeed+int64(i))
	}
	var sens []spectral.Sensor
	for _, n := range sensorNames {
		s, ok := spectral.SensorByName(n)
		if !ok {
			return fmt.Errorf("unknown sensor %q (%s)", n, strings.Join(spectral.SensorNames(), ", "))
		}
		sens = append(sens, s)
		rep.Sensors = append(rep.Sensors, s.Name)
	}
	x := crossRun{rep: &rep, backend: backend, epochs: epochs, out: out, md: md}
	for _, sn := range sceneNames {
		sc, err := loadScene(data, sn)
		if err != nil {
			return err
		}
		dir := filepath.Join(tmp, sn)
		labels, train, err := writeSceneClasses(dir, sc)
		if err != nil {
			return err
		}
		dels, err := simulateDeliveries(dir, sn, sc, sens)
		if err != nil {
			return err
		}
		for ti := range dels {
			for _, seed := range rep.Seeds {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := x.trainAndApply(ctx, sn, dels, ti, labels, train, seed); err != nil {
					return err
				}
			}
		}
	}
	rep.Finished = true
	return x.save()
}

// crossRun is a run's report and settings: the backend and epochs of its
// trainings and the JSON and Markdown files it rewrites after each.
type crossRun struct {
	rep     *Report
	backend string
	epochs  int
	out, md string
}

// save writes the report as it stands: the JSON, then its tables.
func (x crossRun) save() error {
	b, err := json.MarshalIndent(*x.rep, "", "  ")
	if err != nil {
		return err
	}
	if err := tempfiles.WriteFile(x.out, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return tempfiles.WriteFile(x.md, []byte(markdown(*x.rep)), 0o644)
}

// writeSceneClasses writes the scene's labels and training mask into dir
// (made) as class rasters.
func writeSceneClasses(dir string, sc sceneData) (labels, train string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	labels, train = filepath.Join(dir, "labels.tif"), filepath.Join(dir, "train.tif")
	if err := writeClasses(labels, sc.rows, sc.cols, sc.labels); err != nil {
		return "", "", err
	}
	if err := writeClasses(train, sc.rows, sc.cols, sc.train); err != nil {
		return "", "", err
	}
	return labels, train, nil
}

// simulateDeliveries resamples scene sn (its AVIRIS channels kept) to each
// sensor's bands and writes each as an ENVI file into dir, with the band
// set geo reads back from it.
func simulateDeliveries(dir, sn string, sc sceneData, sens []spectral.Sensor) ([]delivery, error) {
	aviris, _ := spectral.SensorByName("AVIRIS")
	kept := avirisKept(sn)
	src := make([]float64, len(kept))
	for i, ch := range kept {
		src[i] = aviris.Bands.CentresNM[ch]
	}
	var dels []delivery
	for _, s := range sens {
		sim := newSimulation(src, s.Bands)
		p := filepath.Join(dir, strings.ReplaceAll(s.Name, "-", "")+".img")
		if err := writeENVI(p, sc.rows, sc.cols, sim.apply(sc.px, sc.bands, -9999), s.Bands, sim.bad, -9999); err != nil {
			return nil, err
		}
		g, err := geo.Open(p)
		if err != nil {
			return nil, err
		}
		dels = append(dels, delivery{sensor: s.Name, path: p, bands: g.Info().BandSet()})
		g.Close()
		fmt.Fprintf(os.Stderr, "%s: simulated %s: %d bands, %d good\n", sn, s.Name, s.Bands.Bands, len(dels[len(dels)-1].bands.Good()))
	}
	return dels, nil
}

// trainAndApply trains a model with seed on delivery dels[ti] of scene sn,
// on the bands it has in common with the others, applies it to every
// delivery, adds the run to the report and saves it.
func (x crossRun) trainAndApply(ctx context.Context, sn string, dels []delivery, ti int, labels, train string, seed int64) error {
	t := dels[ti]
	var sel evaluation.BandSelection
	for oi, o := range dels {
		if oi != ti {
			sel.CommonWith = append(sel.CommonWith, evaluation.NamedBandSet{Name: o.sensor, Bands: o.bands})
		}
	}
	cfg := model.DefaultConfig()
	cfg.Epochs = x.epochs
	start := time.Now()
	res, err := evaluation.Train(ctx, evaluation.TrainRequest{Scene: t.path, Labels: labels, TrainMask: train, Bands: sel,
		Options: model.TrainOptions{Config: cfg, Seed: seed, Backend: x.backend}})
	if err != nil {
		return fmt.Errorf("%s %s seed %d: train: %w", sn, t.sensor, seed, err)
	}
	r := Run{Scene: sn, TrainSensor: t.sensor, Seed: seed, ModelBands: res.Model.Bands(), SceneBands: t.bands.Bands,
		Selection: res.Model.BandRecord().Selection, OA: map[string]float64{}, TrainSecs: time.Since(start).Seconds()}
	for _, a := range dels {
		ev, err := evaluation.EvaluateFiles(ctx, res.Model, a.path, labels, evaluation.EvalOptions{Backend: x.backend})
		if err != nil {
			return fmt.Errorf("%s: a %s model on %s: %w", sn, t.sensor, a.sensor, err)
		}
		r.OA[a.sensor] = ev.Final().OA
	}
	x.rep.Runs = append(x.rep.Runs, r)
	fmt.Fprintf(os.Stderr, "%s %s seed %d: %d bands, %.0f s, OA %v\n", sn, t.sensor, seed, r.ModelBands, r.TrainSecs, r.OA)
	return x.save()
}

// markdown is the report's tables: per scene, rows the sensor a model was
// trained on, columns the sensor it was applied to: mean OA over the seeds
// and, off the diagonal, the mean drop from the model's own sensor (points,
// with its largest single-seed drop).
func markdown(rep Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# One model for several sensors: measured\n\nGenerated by `%s` (%s; %d epochs, backend %s, seeds %v; finished: %v).\n\n",
		rep.Command, rep.Started, rep.Epochs, rep.Backend, rep.Seeds, rep.Finished)
	b.WriteString("Rows: the sensor whose simulated scene the model was trained on (its bands shared with every other sensor); columns: the sensor whose simulated scene it classified. Cells: mean OA (%) over the seeds; off the diagonal, the drop: the same models' OA on their own sensor minus this one, in points (negative: better than on their own), its mean over the seeds and its largest single-seed value.\n")
	byScene := map[string][]Run{}
	var order []string
	for _, r := range rep.Runs {
		if _, ok := byScene[r.Scene]; !ok {
			order = append(order, r.Scene)
		}
		byScene[r.Scene] = append(byScene[r.Scene], r)
	}
	worst := 0.0
	for _, sn := range order {
		runs := byScene[sn]
		fmt.Fprintf(&b, "\n## %s\n\n| trained on (bands) | %s |\n|---|%s\n", sn, strings.Join(rep.Sensors, " | "), strings.Repeat("---|", len(rep.Sensors)))
		for _, t := range rep.Sensors {
			var rs []Run
			for _, r := range runs {
				if r.TrainSensor == t {
					rs = append(rs, r)
				}
			}
			if len(rs) == 0 {
				continue
			}
			cells := []string{fmt.Sprintf("%s (%d of %d), %d seeds", t, rs[0].ModelBands, rs[0].SceneBands, len(rs))}
			for _, a := range rep.Sensors {
				var oa, drop []float64
				for _, r := range rs {
					oa = append(oa, 100*r.OA[a])
					drop = append(drop, 100*(r.OA[t]-r.OA[a]))
				}
				if a == t {
					cells = append(cells, fmt.Sprintf("**%.2f**", mean(oa)))
					continue
				}
				sort.Float64s(drop)
				worst = math.Max(worst, mean(drop))
				cells = append(cells, fmt.Sprintf("%.2f (drop %.2f, worst seed %.2f)", mean(oa), mean(drop), drop[len(drop)-1]))
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
	}
	fmt.Fprintf(&b, "\nLargest mean drop of any pair: %.2f points (target: at most 2).\n", worst)
	return b.String()
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
