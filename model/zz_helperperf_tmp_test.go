package model

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"runtime/pprof"
	"testing"
	"time"
)

// Temporary (helper perf work): removed before report.
func TestZZPerfTmp(t *testing.T) {
	if os.Getenv("ZZPERF") == "" {
		t.Skip()
	}
	s, labels := benchScene()
	mp := "/tmp/zzperf.pnec"
	m, err := Load(mp)
	if err != nil {
		cfg := DefaultConfig()
		cfg.Epochs = 1
		m, err = Train(context.Background(), s, labels, TrainOptions{Config: cfg, Backend: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Save(mp); err != nil {
			t.Fatal(err)
		}
	}
	bk := os.Getenv("ZZBACKEND")
	if bk == "" {
		bk = "go"
	}
	p, err := NewPredictor(m, bk)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pr, err := p.Predict(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	ref := os.Getenv("ZZREF")
	if b, err := os.ReadFile(ref); err == nil {
		var dp, du float64
		for i, v := range pr.Prob {
			dp = math.Max(dp, math.Abs(float64(v-math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))))
		}
		off := 4 * len(pr.Prob)
		for i, v := range pr.Uncertainty {
			du = math.Max(du, math.Abs(float64(v-math.Float32frombits(binary.LittleEndian.Uint32(b[off+4*i:])))))
		}
		t.Logf("max abs diff prob %.3g uncertainty %.3g", dp, du)
	} else if ref != "" {
		var b []byte
		for _, v := range append(append([]float32{}, pr.Prob...), pr.Uncertainty...) {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		os.WriteFile(ref, b, 0o644)
		t.Logf("wrote %s", ref)
	}
	f, _ := os.Create("/tmp/zzpred.prof")
	pprof.StartCPUProfile(f)
	c0 := cpuSeconds()
	t0 := time.Now()
	const n = 3
	for range n {
		if _, err := p.Predict(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	pprof.StopCPUProfile()
	f.Close()
	t.Logf("wall %.3f s/op cpu %.3f s/op", time.Since(t0).Seconds()/n, (cpuSeconds()-c0)/n)
}
