package model

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/pnec/pnec/model/internal/kernels"
)

// benchSize is Pavia University's size (610 x 340 x 103, 9 classes), or a
// quarter of it with PNEC_BENCH_QUICK=1.
func benchSize() (rows, cols, bands, classes int) {
	if os.Getenv("PNEC_BENCH_QUICK") != "" {
		return 152, 85, 103, 9
	}
	return 610, 340, 103, 9
}

// benchScene is a random scene of benchSize with smooth class regions.
func benchScene() (Scene, []int32) {
	rows, cols, bands, k := benchSize()
	s, labels := synthScene(rows, cols, bands, k, 11)
	return s, labels
}

// benchSplit is the default split of the bench scene's labels: the
// training pixels and their dense classes.
func benchSplit(labels []int32) (idx []int, y []int32) {
	dense := make([]int32, len(labels))
	for i, v := range labels {
		dense[i] = v - 1
	}
	_, _, _, k := benchSize()
	idx = pickSplit(dense, k, DefaultTrainPerClass, DefaultSplitSeed)
	y = make([]int32, len(idx))
	for t, i := range idx {
		y[t] = dense[i]
	}
	return idx, y
}

// benchTrainer builds the training step of a default-size network on the bench scene.
func benchTrainer(b *testing.B) (*trainer, trainData) {
	s, labels := benchScene()
	cfg := DefaultConfig()
	_, _, _, k := benchSize()
	idx, y := benchSplit(labels)
	lo, hi, err := bandStretch(s)
	if err != nil {
		b.Fatal(err)
	}
	d, err := makeDims(cfg, s.Bands, k)
	if err != nil {
		b.Fatal(err)
	}
	var fr *kernels.FullRes
	if useFullRes && fullResTraining(cfg) { // as Train decides
		fr = newFullRes(d, s, newInputSpec(cfg.Input, cfg.InputLevels, lo, hi), runtime.GOMAXPROCS(0))
	}
	td := newTrainData(s, newInputSpec(cfg.Input, cfg.InputLevels, lo, hi), idx, y, cfg.Encoder, fr != nil)
	tr, err := newTrainer(testBackend(b), d, cfg, initParams(d, cfg, rand.New(rand.NewPCG(1, 2))), fr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tr.finalize)
	return tr, td
}

// BenchmarkTrainStepPaviaU times one full-scene training step (forward,
// backward, Adam, prototype update) with evidence calibration on.
func BenchmarkTrainStepPaviaU(b *testing.B) {
	tr, td := benchTrainer(b)
	if _, _, err := tr.step(td, 1); err != nil { // compile outside the timing
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuSeconds()
	for range b.N {
		if _, _, err := tr.step(td, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-c0)/float64(b.N), "cpu-s/op")
	reportPeak(b)
}

// BenchmarkPredictPaviaU times full-scene inference (normalisation,
// network, bilinear upsampling and softmax at full resolution).
func BenchmarkPredictPaviaU(b *testing.B) {
	s, labels := benchScene()
	cfg := DefaultConfig()
	cfg.Epochs = 1
	m, err := Train(context.Background(), s, labels, TrainOptions{Config: cfg, Backend: "go"})
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewPredictor(m, "go")
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Predict(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuSeconds()
	for range b.N {
		if _, err := p.Predict(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-c0)/float64(b.N), "cpu-s/op")
	reportPeak(b)
}

// cpu-s/op (process CPU seconds per operation, all threads) is reported
// beside the wall time because the machine these run on is shared: on 2
// idle cores the wall time of these parallel kernels is about cpu-s/op / 2.

// reportPeak reports the process's peak resident memory (VmHWM) in MB.
func reportPeak(b *testing.B) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Sys)/(1<<20), "go-sys-MB")
	if hwm, ok := peakRSSBytes(); ok {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-rss-MB")
	}
}
