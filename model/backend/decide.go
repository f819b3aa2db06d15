package backend

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Task is the work a job does with the network.
type Task string

const (
	TaskClassify Task = "classify" // inference over scenes
	TaskTrain    Task = "train"    // training epochs on one scene
)

// Job is what Decide knows of the work when no backend is named:
// the default picks XLA only where it is expected to be faster. Zero
// fields are unknown.
type Job struct {
	Task Task
	// Pixels is the job's pixels in all (every scene's rows x cols).
	Pixels int64
	// Scenes is the number of scenes (classify); 0 = one.
	Scenes int
	// Shapes is the number of distinct compiled input shapes (tiles and
	// whole scenes); 0 = one per scene, at most ladderShapes.
	Shapes int
	// Epochs is the training epochs (train).
	Epochs int
	// Cores is the cores the Go backend runs on; 0 = runtime.GOMAXPROCS(0).
	Cores int
	// Warm says the compile cache holds the job's graphs (a precompiled
	// node image, or a rerun): compiling then costs the warm figure.
	Warm bool
}

// ladderShapes bounds the distinct shapes of a classify job whose shapes
// are unknown: scenes run on a short ladder of padded sizes
// (tiling.Rung), so a batch compiles a few graphs, not one per scene.
const ladderShapes = 4

// SpeedFacts are the measured costs the default rule weighs. Each figure
// names the measurement it comes from; scripts/gpu-check.sh measures the
// XLA ones again on a GPU machine (its table prints them), and they are
// to be updated from its log. The host work common to both backends
// (reading, decoding, writing) is left out: it does not change the choice.
type SpeedFacts struct {
	// GoClassifyCoreSecPerPixel: the Go backend's full-scene inference,
	// core-seconds per pixel. BenchmarkPredictPaviaU, 0.7094 cpu-s for
	// 610 x 340 px (BENCHMARKS.md, AMD EPYC, paper encoder).
	GoClassifyCoreSecPerPixel float64
	// XLAClassifySecPerPixel: XLA's whole inference call from host
	// memory, wall seconds per pixel. 131 ms for 610 x 340 px on an H100
	// (bench/gpu.md, BenchmarkBackendInference, paper encoder).
	XLAClassifySecPerPixel float64
	// XLACompileColdSec: compiling one inference shape with an empty
	// cache, autotuning included: 42.3 s (the network stage of the first
	// pnec classify of a Pavia-size scene on an H100, docs/backends.md).
	XLACompileColdSec float64
	// XLACompileWarmSec: the same with the compile cache filled. Not yet
	// measured; 2.9 s is the largest compile-s of BenchmarkBackendInference
	// on the H100 (bench/gpu.md), the closest figure measured.
	XLACompileWarmSec float64
	// GoTrainCoreSecPerPixelEpoch: a full-scene training step on the Go
	// backend, core-seconds per pixel. BenchmarkTrainStepPaviaU, 2.686
	// cpu-s for 610 x 340 px (BENCHMARKS.md).
	GoTrainCoreSecPerPixelEpoch float64
	// XLATrainSecPerPixelEpoch: an epoch on XLA with the default
	// augmentation: (98.4 s - 13 s compile) / 200 epochs for 610 x 340 px
	// on an H100 (bench/gpu.md).
	XLATrainSecPerPixelEpoch float64
	// XLATrainCompileSec: compiling the training step, autotuning off:
	// about 13 s on the H100 (bench/gpu.md).
	XLATrainCompileSec float64
}

const paviaPixels = 610 * 340

// MeasuredSpeed are the figures Decide uses (see SpeedFacts).
var MeasuredSpeed = SpeedFacts{
	GoClassifyCoreSecPerPixel:   0.7094 / paviaPixels,
	XLAClassifySecPerPixel:      0.131 / paviaPixels,
	XLACompileColdSec:           42.3,
	XLACompileWarmSec:           2.9,
	GoTrainCoreSecPerPixelEpoch: 2.686 / paviaPixels,
	XLATrainSecPerPixelEpoch:    (98.4 - 13) / 200 / paviaPixels,
	XLATrainCompileSec:          13,
}

// Estimate is the seconds a job takes on the Go backend and on an XLA
// accelerator under f: the network's share, compilation included.
func (f SpeedFacts) Estimate(j Job) (goSec, xlaSec float64) {
	cores := j.Cores
	if cores <= 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	px := float64(j.Pixels)
	if px <= 0 {
		px = paviaPixels * float64(max(j.Scenes, 1))
	}
	switch j.Task {
	case TaskTrain:
		epochs := float64(max(j.Epochs, 1))
		goSec = px * epochs * f.GoTrainCoreSecPerPixelEpoch / float64(cores)
		xlaSec = f.XLATrainCompileSec + px*epochs*f.XLATrainSecPerPixelEpoch
	default:
		shapes := j.Shapes
		if shapes <= 0 {
			shapes = min(max(j.Scenes, 1), ladderShapes)
		}
		compile := f.XLACompileColdSec
		if j.Warm {
			compile = f.XLACompileWarmSec
		}
		goSec = px * f.GoClassifyCoreSecPerPixel / float64(cores)
		xlaSec = float64(shapes)*compile + px*f.XLAClassifySecPerPixel
	}
	return goSec, xlaSec
}

// Decide is the one place that decides the backend of a run:
//
//  1. name, when given ("go", "xla:cuda", "xla:/abs/plugin.so[,options]");
//  2. else GOMLX_BACKEND;
//  3. else the default rule: XLA on an accelerator plugin found here
//     (FindPlugins: go-xla's folders and pip-installed jax plugins) when
//     MeasuredSpeed estimates job faster there than on the Go backend
//     with the host's cores, else Go. A job of unknown size (the zero
//     Job) is not expected to be faster on XLA, whose compilation alone
//     outlasts a small scene on the CPU: it runs on Go.
//
// The result says why (Backend.Reason). A named CUDA plugin that is a
// pip-installed jax plugin gets its NVIDIA set-up too (Backend.CUDA).
func Decide(name string, job Job) (Backend, error) {
	// Looking for plugins reads folders (nothing is loaded or run): only
	// for the default, or a plugin named by its path (whose pip set-up is
	// wanted).
	var found []Plugin
	n := name
	if n == "" {
		n = os.Getenv("GOMLX_BACKEND")
	}
	if n == "" || strings.HasPrefix(n, "xla:/") {
		found = FindPlugins()
	}
	return decide(name, job, MeasuredSpeed, found)
}

func decide(name string, job Job, f SpeedFacts, found []Plugin) (Backend, error) {
	reason := "named"
	if name == "" {
		if env := os.Getenv("GOMLX_BACKEND"); env != "" {
			name, reason = env, "GOMLX_BACKEND"
		}
	}
	if name != "" {
		b, err := Parse(name)
		if err != nil {
			return Backend{}, err
		}
		b.Reason = reason
		for _, p := range found {
			if p.Path == b.Plugin && p.CUDA != nil {
				b.CUDA = p.CUDA
			}
		}
		return b, nil
	}
	goB := Backend{Name: "go", Kind: Go}
	var acc *Plugin
	for i := range found {
		if pluginKind(found[i].Path) != XLACPU && !found[i].NoGPU {
			acc = &found[i]
			break
		}
	}
	if acc == nil {
		goB.Reason = "default: no accelerator plugin found"
		return goB, nil
	}
	xb := Backend{Name: "xla:" + acc.Path, Kind: pluginKind(acc.Path), Plugin: acc.Path, CUDA: acc.CUDA}
	if job == (Job{}) {
		goB.Reason = fmt.Sprintf("default: plugin %s found, but the job's size is unknown (XLA's compilation outlasts a small scene on the CPU)", acc.Path)
		return goB, nil
	}
	if job.Cores <= 0 {
		job.Cores = runtime.GOMAXPROCS(0)
	}
	job.Warm = job.Warm || xb.CacheWarm()
	goSec, xlaSec := f.Estimate(job)
	why := fmt.Sprintf("estimated %.1f s on XLA against %.1f s on go with %d cores", xlaSec, goSec, job.Cores)
	if xlaSec < goSec {
		xb.Reason = "default: plugin found and faster: " + why
		return xb, nil
	}
	goB.Reason = fmt.Sprintf("default: plugin %s found, but go is faster: %s", acc.Path, why)
	return goB, nil
}
