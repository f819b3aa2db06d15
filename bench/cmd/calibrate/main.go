// Command calibrate measures the memory model of pnec's planner
// (processor.MemoryModel) and rewrites processor/calibration.go with it.
//
// It builds pnec, generates scenes of several widths and band counts
// (pnec synth, uncompressed 64 x 64 blocks so that GDAL's block cache stays
// small and known), trains a model per band count, then runs pnec classify
// with forced tiles as child processes and reads each child's peak resident
// memory from the kernel (rusage). The runs set GOGC low, so the peak is
// close to the data the run holds live; the memory model's coefficients are
// the non-negative least-squares fit of those peaks, relative error
// weighted. Rerun it when the network (model/) or the pipeline's buffers
// change:
//
//	flock /tmp/pnec-bench.lock go run ./bench/cmd/calibrate
//
// It takes about five minutes on 2 cores.
package main

import (
	"context"
	"flag"
	"fmt"
	"go/format"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/tiling"
	"github.com/pnec/pnec/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "calibrate: "+err.Error())
		os.Exit(1)
	}
}

// calibrationGOGC keeps the Go heap close to its live data in the runs.
const calibrationGOGC = "5"

// cacheMiB is the GDAL block cache of the runs: enough for a row of the
// scenes' 64 x 64 blocks across the widest tile.
const cacheMiB = 48

type runSpec struct {
	bands, tile, cols, rows int
	encoder                 string // model.EncoderCell or model.EncoderPaper
}

type sample struct {
	runSpec
	peak     int64 // measured peak RSS, bytes
	scratch  int64 // the read strip's scratch buffer, bytes (an explicit term of the model)
	features [nFeatures]float64
	wall     time.Duration
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	out := fs.String("out", "processor/calibration.go", "Go file to write (\"-\" prints it)")
	data := fs.String("data", "", "shared data folder for pnec synth (default: $PNEC_DATA or ../shared/data)")
	quick := fs.Bool("quick", false, "fewer, smaller runs (for a check of the harness)")
	keep := fs.String("work", "", "work directory to use and keep (default: a temporary one, removed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	work := *keep
	if work == "" {
		d, err := os.MkdirTemp("", "pnec-calibrate-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	if *data == "" {
		*data = os.Getenv("PNEC_DATA")
	}
	if *data == "" {
		*data = "../shared/data"
	}
	pnec := filepath.Join(work, "pnec")
	if err := sh(ctx, nil, "go", "build", "-o", pnec, "./cmd/pnec"); err != nil {
		return err
	}
	c := calibration{pnec: pnec, data: *data, work: work, models: map[string]string{}}
	var samples []sample
	for _, s := range calibrationSpecs(*quick) {
		m, err := c.model(ctx, s)
		if err != nil {
			return err
		}
		if m == "" {
			continue
		}
		smp, err := c.measure(ctx, s, m)
		if err != nil {
			return err
		}
		samples = append(samples, smp)
	}
	base := samples[0].peak // the tiny run holds almost no data and barely touches the cache
	mm, resid := fit(samples[1:], base)
	src := render(mm, samples, resid, c.skipped)
	if *out == "-" {
		fmt.Print(src)
		return nil
	}
	return os.WriteFile(*out, []byte(src), 0o644)
}

// calibrationSpecs are the runs to measure (fewer and smaller with
// quick), after the base run.
func calibrationSpecs(quick bool) []runSpec {
	const cell, paper = model.EncoderCell, model.EncoderPaper
	specs := []runSpec{
		{50, 256, 512, 384, cell}, {50, 512, 2048, 640, cell}, {50, 256, 2048, 384, cell},
		{200, 256, 512, 384, cell}, {200, 512, 1024, 640, cell}, {200, 256, 2048, 384, cell}, {200, 384, 4096, 448, cell},
		{400, 256, 1024, 384, cell},
		{50, 256, 512, 384, paper}, {200, 256, 1024, 384, paper}, {200, 512, 1024, 640, paper},
	}
	if quick {
		specs = []runSpec{{50, 128, 256, 192, cell}, {50, 256, 512, 320, cell}, {100, 128, 1024, 192, cell}, {50, 128, 512, 192, paper}}
	}
	// The base: the process with a model loaded and a tiny scene.
	return append([]runSpec{{50, 64, 64, 64, cell}}, specs...)
}

// calibration is a run's pnec binary, synth data folder and work
// directory, the models trained so far (by band count and encoder; ""
// for one that could not be trained) and the runs skipped.
type calibration struct {
	pnec, data, work string
	models           map[string]string
	skipped          []string
}

// model is the path of the model for s's band count and encoder, trained
// on a synth scene the first time; "" when the paper encoder's could not
// be trained (its runs are skipped, and noted).
func (c *calibration) model(ctx context.Context, s runSpec) (string, error) {
	key := fmt.Sprintf("%d-%s", s.bands, s.encoder)
	if m, ok := c.models[key]; ok {
		return m, nil
	}
	m := filepath.Join(c.work, fmt.Sprintf("m%d_%s.pnec", s.bands, s.encoder))
	tr := filepath.Join(c.work, fmt.Sprintf("train%d.tif", s.bands))
	gt := filepath.Join(c.work, fmt.Sprintf("train%d_gt.tif", s.bands))
	if err := sh(ctx, nil, c.pnec, "synth", "--data-dir", c.data, "--layout", "procedural:96x96", "--bands", fmt.Sprint(s.bands), "--out", tr, "--labels-out", gt); err != nil {
		return "", err
	}
	if err := sh(ctx, nil, c.pnec, "train", "-q", "--backend", "go", "--scene", tr, "--labels", gt, "--out", m, "--epochs", "2", "--encoder", s.encoder); err != nil {
		if s.encoder == model.EncoderCell {
			return "", err
		}
		// The other encoder's runs are skipped (its coefficient
		// stays 0) rather than losing the whole calibration.
		c.skipped = append(c.skipped, fmt.Sprintf("%s encoder at %d bands: %s", s.encoder, s.bands, firstLine(err.Error())))
		fmt.Fprintln(os.Stderr, "calibrate: skipped: "+c.skipped[len(c.skipped)-1])
		c.models[key] = ""
		return "", nil
	}
	c.models[key] = m
	return m, nil
}

// measure classifies s's scene (made by pnec synth the first time) with
// model m in a child process with s's forced tiles, and returns its peak
// RSS beside the plan's memory-model features.
func (c *calibration) measure(ctx context.Context, s runSpec, m string) (sample, error) {
	scene := filepath.Join(c.work, fmt.Sprintf("s%d_%dx%d.tif", s.bands, s.cols, s.rows))
	if _, err := os.Stat(scene); err != nil {
		if err := sh(ctx, nil, c.pnec, "synth", "--data-dir", c.data, "--layout", fmt.Sprintf("procedural:%dx%d", s.rows, s.cols),
			"--bands", fmt.Sprint(s.bands), "--out", scene,
			"--co", "COMPRESS=NONE", "--co", "BLOCKXSIZE=64", "--co", "BLOCKYSIZE=64"); err != nil {
			return sample{}, err
		}
	}
	mod, err := model.Load(m)
	if err != nil {
		return sample{}, err
	}
	sc, err := geo.Open(scene)
	if err != nil {
		return sample{}, err
	}
	info := sc.Info()
	sc.Close()
	opts := processor.Options{TileSize: s.tile, MaxMemoryBytes: 1 << 50}
	plan, _, err := processor.PlanSceneInfo(info, mod, opts)
	if err != nil {
		return sample{}, err
	}
	f := features(plan, info, mod, opts)
	env := []string{"GOGC=" + calibrationGOGC, fmt.Sprintf("GDAL_CACHEMAX=%d", cacheMiB), "GOMEMLIMIT=off"}
	t0 := time.Now()
	peak, err := peakRSS(ctx, env, c.pnec, "classify", "-q", "--backend", "go", "--model", m, "--scene", scene,
		"--out", filepath.Join(c.work, "out.tif"), "--tile", fmt.Sprint(s.tile), "--max-memory", "1000T")
	if err != nil {
		return sample{}, err
	}
	smp := sample{runSpec: s, peak: peak, scratch: processor.StripScratchBytes(info, plan.TileCols), features: f, wall: time.Since(t0)}
	fmt.Fprintf(os.Stderr, "calibrate: %d bands, %s encoder, %dx%d scene, %d px tiles (%s): peak %s in %s\n",
		s.bands, s.encoder, s.cols, s.rows, s.tile, plan, memory.FormatBytes(peak), smp.wall.Round(time.Second))
	return smp, nil
}

// nFeatures is the number of live-data terms of processor.MemoryModel.
const nFeatures = 5

// features are the live-data terms of processor.MemoryModel for a plan:
// input samples, the network estimate, output values, canvas values and
// full-resolution encoder values.
func features(plan tiling.Plan, info geo.Info, m *model.Model, opts processor.Options) [nFeatures]float64 {
	tr, tc := plan.TileRows, plan.TileCols
	k := len(m.Classes())
	if _, ref, err := m.ResolveReliability(opts.Reliability, nil); err == nil && ref != nil {
		k *= 2
	}
	stripe := plan.Rows
	if !plan.Whole {
		stripe = min(tr+plan.Overlap+2*m.Recovery().Window, plan.Rows)
	}
	tpx := float64(tr) * float64(tc)
	return [nFeatures]float64{
		tpx * float64(info.Bands),
		float64(m.EstimatePredictBytes(tr, tc)),
		tpx * float64(k+2),
		float64(stripe) * float64(plan.Cols) * float64(k+2),
		processor.FullResValues(m, tr, tc),
	}
}

// fit solves min sum ((base + x.f - peak)/peak)^2 over x >= 0 by trying
// every set of free coefficients (2^nFeatures - 1 sets) and keeping the best
// feasible one. It returns the model and the relative residuals.
func fit(s []sample, base int64) (processor.MemoryModel, []float64) {
	best := math.Inf(1)
	var bx [nFeatures]float64
	for mask := 1; mask < 1<<nFeatures; mask++ {
		var idx []int
		for j := 0; j < nFeatures; j++ {
			if mask&(1<<j) != 0 {
				idx = append(idx, j)
			}
		}
		n := len(idx)
		// Normal equations of the weighted problem.
		a := make([][]float64, n)
		for i := range a {
			a[i] = make([]float64, n+1)
		}
		for _, smp := range s {
			w := 1 / float64(smp.peak)
			y := float64(smp.peak-base-smp.scratch) * w
			for i, ji := range idx {
				for k, jk := range idx {
					a[i][k] += smp.features[ji] * w * smp.features[jk] * w
				}
				a[i][n] += smp.features[ji] * w * y
			}
		}
		sol, ok := solve(a)
		if !ok {
			continue
		}
		var x [nFeatures]float64
		feasible := true
		for i, j := range idx {
			if sol[i] < 0 {
				feasible = false
			}
			x[j] = sol[i]
		}
		if !feasible {
			continue
		}
		var sse float64
		for _, smp := range s {
			r := (predict(x, base, smp) - float64(smp.peak)) / float64(smp.peak)
			sse += r * r
		}
		if sse < best {
			best, bx = sse, x
		}
	}
	resid := make([]float64, len(s))
	for i, smp := range s {
		resid[i] = (predict(bx, base, smp) - float64(smp.peak)) / float64(smp.peak)
	}
	return processor.MemoryModel{
		BaseBytes: base, ReadBytesPerSample: bx[0], NetworkFactor: bx[1],
		OutputBytesPerValue: bx[2], CanvasBytesPerValue: bx[3], FullResBytesPerValue: bx[4],
	}, resid
}

func predict(x [nFeatures]float64, base int64, s sample) float64 {
	v := float64(base + s.scratch)
	for j := range x {
		v += x[j] * s.features[j]
	}
	return v
}

// solve does Gaussian elimination with partial pivoting on an augmented n x (n+1) matrix.
func solve(a [][]float64) ([]float64, bool) {
	n := len(a)
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-300 {
			return nil, false
		}
		a[c], a[p] = a[p], a[c]
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k <= n; k++ {
				a[r][k] -= f * a[c][k]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		v := a[r][n]
		for k := r + 1; k < n; k++ {
			v -= a[r][k] * x[k]
		}
		x[r] = v / a[r][r]
	}
	return x, true
}

// headroom is the Go heap's growth over its live data that the plan
// allows for under the memory limit a run sets: the limit makes the
// collector run before the heap doubles, and this margin keeps it from
// running all the time.
const headroom = 1.15

func render(mm processor.MemoryModel, s []sample, resid []float64, skipped []string) string {
	var b strings.Builder
	b.WriteString("// Code generated by go run ./bench/cmd/calibrate; DO NOT EDIT.\n\npackage processor\n\n")
	fmt.Fprintf(&b, "// Calibrated is the memory model measured by bench/cmd/calibrate on %s\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "// (GDAL %s, model %s), peak RSS of pnec classify with GOGC=%s:\n//\n", geo.GDALVersion(), version.String, calibrationGOGC)
	b.WriteString("//\tbands  encoder  scene cols x rows  tile  peak MiB  fit error\n")
	for i, smp := range s {
		e := "(base)"
		if i > 0 {
			e = fmt.Sprintf("%+.1f%%", 100*resid[i-1])
		}
		fmt.Fprintf(&b, "//\t%5d  %-7s  %8d x %-6d  %4d  %8d  %s\n", smp.bands, smp.encoder, smp.cols, smp.rows, smp.tile, smp.peak>>20, e)
	}
	for _, k := range skipped {
		fmt.Fprintf(&b, "//\n// Skipped (no model could be trained): %s\n", k)
	}
	b.WriteString("var Calibrated = MemoryModel{\n")
	fmt.Fprintf(&b, "\tBaseBytes:           %d,\n", mm.BaseBytes)
	fmt.Fprintf(&b, "\tReadBytesPerSample:  %.4g,\n", mm.ReadBytesPerSample)
	fmt.Fprintf(&b, "\tNetworkFactor:       %.4g,\n", mm.NetworkFactor)
	fmt.Fprintf(&b, "\tOutputBytesPerValue: %.4g,\n", mm.OutputBytesPerValue)
	fmt.Fprintf(&b, "\tCanvasBytesPerValue: %.4g,\n", mm.CanvasBytesPerValue)
	fmt.Fprintf(&b, "\tFullResBytesPerValue: %.4g,\n", mm.FullResBytesPerValue)
	fmt.Fprintf(&b, "\tHeadroom:            %.4g,\n", headroom)
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return b.String()
	}
	return string(src)
}

func firstLine(s string) string {
	// The command's own error line (pnec: ...) says more than the exit status.
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "pnec: ") {
			s = l
			break
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200] + "..."
			}
			return l
		}
	}
	return s
}

func sh(ctx context.Context, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// peakRSS runs a command and returns its peak resident set size (the
// kernel's ru_maxrss of the child), bytes.
func peakRSS(ctx context.Context, env []string, name string, args ...string) (int64, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, fmt.Errorf("no rusage for %s", name)
	}
	return ru.Maxrss << 10, nil
}
