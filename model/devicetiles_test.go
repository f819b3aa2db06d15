package model

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/pnec/pnec/model/backend"
	"github.com/pnec/pnec/tiling"
)

// trainedTiny is a tiny paper-encoder model trained on rawScene.
func trainedTiny(t *testing.T) *Model {
	t.Helper()
	train := rawScene(32, 28, 6, false, 1)
	labels := make([]int32, train.Rows*train.Cols)
	for i := range labels {
		if train.Valid[i] {
			labels[i] = int32(1 + (i/train.Cols)*3/train.Rows)
		}
	}
	m, err := Train(context.Background(), train, labels, TrainOptions{Config: tinyConfig(2), Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPredictorDeviceMemory: what the predictor tells the planner of its
// device (tiling.DeviceMemory), from injected figures of an H100 at XLA's
// default memory fraction: the weights and workspaces once (InUseBytes),
// the rest of DeviceNeedBytes per tile, so that the planner holds two
// tiles where the limit has room for the weights and two tiles' calls, one
// where it has room for one, and refuses where not even one fits, as
// Predict's own check does. Without a device it says nothing.
func TestPredictorDeviceMemory(t *testing.T) {
	m := trainedTiny(t)
	p, err := NewPredictor(m, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if d, err := p.DeviceMemory(384, 384); err != nil || d.Present() {
		t.Fatalf("go backend: %+v, %v; want no device", d, err)
	}
	const rows, cols = 384, 384
	need, resident := m.DeviceNeedBytes(rows, cols), m.DeviceResidentBytes()
	call := need - resident
	if resident <= 64<<20 || call <= 0 {
		t.Fatalf("resident %d, need %d: want the weights above the workspaces and a positive call", resident, need)
	}
	for _, tc := range []struct {
		name  string
		limit int64
		tiles int
	}{
		{"H100", 81559 << 20 * 3 / 4, 2},
		{"room for two calls", resident + 2*call, 2},
		{"room for one call", resident + 2*call - 1, 1},
		{"exactly one", need, 1},
		{"none", need - 1, 0},
	} {
		p.mem = backend.DeviceMemory{Device: "NVIDIA H100 80GB HBM3", TotalBytes: 81559 << 20, LimitBytes: tc.limit, MemoryFraction: 0.75}
		d, err := p.DeviceMemory(rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if d.LimitBytes != tc.limit || d.InUseBytes != resident || d.InUseBytes+d.TileBytes != need {
			t.Errorf("%s: %+v; want limit %d, in use %d, in use + tile %d", tc.name, d, tc.limit, resident, need)
		}
		n, err := d.Tiles(tiling.MaxInFlight)
		if n != tc.tiles || (tc.tiles == 0) != errors.Is(err, tiling.ErrDevice) {
			t.Errorf("%s: %d tiles, %v; want %d", tc.name, n, err, tc.tiles)
		}
		// The planner and Predict agree on whether one tile fits.
		_, perr := p.Predict(context.Background(), rawScene(rows, cols, 6, false, 2))
		if fits := !errors.Is(perr, ErrDeviceMemory); fits != (tc.tiles > 0) || (fits && perr != nil) {
			t.Errorf("%s: Predict %v; the planner holds %d tiles", tc.name, perr, tc.tiles)
		}
	}
}

// TestSetDeviceTilesStagesUpload: with two device tiles a call converts
// and uploads its scene while another call runs the network (held here by
// taking the predictor's lock), and gives the same prediction; with one, a
// call stages nothing until the previous call has given its tile back.
func TestSetDeviceTilesStagesUpload(t *testing.T) {
	m := trainedTiny(t)
	p, err := NewPredictorPrep(m, "go", PrepGraph)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s := rawScene(30, 26, 6, false, 9)
	want, err := p.Predict(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if live := liveCallTensors.Load(); live != 0 {
		t.Fatalf("%d call tensors left after a call", live)
	}
	waitLive := func(n int64) bool {
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if liveCallTensors.Load() == n {
				return true
			}
		}
		return false
	}
	type result struct {
		p   Prediction
		err error
	}
	start := func() chan result {
		ch := make(chan result, 1)
		go func() {
			r, err := p.Predict(context.Background(), s)
			ch <- result{r, err}
		}()
		return ch
	}
	check := func(what string, r result) {
		t.Helper()
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		if d, at := maxDiffAt(r.p.Prob, want.Prob); d != 0 {
			t.Errorf("%s: probabilities differ by %g at %d", what, d, at)
		}
	}

	p.SetDeviceTiles(2)
	p.mu.Lock() // the network is busy with another call
	ch := start()
	staged := waitLive(2) // the raw scene and its valid mask
	p.mu.Unlock()
	if !staged {
		t.Errorf("two device tiles: %d tensors staged while the network was busy, want 2", liveCallTensors.Load())
	}
	check("two device tiles", <-ch)

	p.SetDeviceTiles(1)
	p.slots <- struct{}{} // a call holds the device's one tile
	ch = start()
	time.Sleep(200 * time.Millisecond)
	early := liveCallTensors.Load()
	<-p.slots
	if early != 0 {
		t.Errorf("one device tile: %d tensors staged while another call held it, want 0", early)
	}
	check("one device tile", <-ch)
	if n := p.DeviceTiles(); n != 1 {
		t.Errorf("DeviceTiles %d after SetDeviceTiles(1)", n)
	}
}

// TestRecoverNodePaddedAsClipped: the in-graph recovery of a scene padded
// with no-data (the ladder's padding) gives, on the scene's pixels, what
// tiling.Recover gives on the scene alone, whose windows the border clips:
// padding pixels enter no window, and come out zero.
func TestRecoverNodePaddedAsClipped(t *testing.T) {
	b := testBackend(t)
	rows, cols, k := 21, 19, 3
	pr, pc := 32, 32
	rng := rand.New(rand.NewPCG(3, 4))
	prob := make([]float32, rows*cols*k)
	for i := range prob {
		prob[i] = rng.Float32()
	}
	valid := make([]bool, rows*cols)
	for i := range valid {
		valid[i] = rng.Float64() > 0.15
	}
	// The scene in the top-left corner of the padded input.
	pp := make([]float32, pr*pc*k)
	pv := make([]float32, pr*pc)
	for r := range pr {
		for c := range pc {
			i := r*pc + c
			for j := range k {
				pp[i*k+j] = 0.5 // what no-data pixels hold does not matter
			}
			if r < rows && c < cols {
				copy(pp[i*k:(i+1)*k], prob[(r*cols+c)*k:(r*cols+c+1)*k])
				if valid[r*cols+c] {
					pv[i] = 1
				}
			}
		}
	}
	for _, rp := range []tiling.Recovery{{Window: 9, Eta: 1}, {Window: 13, Eta: 0.7}, {Window: 1, Eta: 1}} {
		e, err := NewExec(b, func(p, v *Node) *Node { return recoverNode(p, v, rp.Window, rp.Eta) })
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Call(tensorOf(pp, pr, pc, k), tensorOf(pv, pr, pc))
		if err != nil {
			t.Fatal(err)
		}
		got := tensors.MustCopyFlatData[float32](out[0])
		e.Finalize()
		want := tiling.Recover(prob, valid, rows, cols, k, rp)
		for r := range pr {
			for c := range pc {
				for j := range k {
					g := got[(r*pc+c)*k+j]
					w := float32(0)
					if r < rows && c < cols {
						w = want[(r*cols+c)*k+j]
					}
					if d := g - w; d > 1e-6 || d < -1e-6 {
						t.Fatalf("%+v: pixel (%d, %d) class %d: graph %g, clipped %g", rp, r, c, j, g, w)
					}
				}
			}
		}
	}
}

// TestPredictorKeepsEveryShape: a predictor compiles more input shapes
// than GoMLX's default executable cache of 32 holds (the model's grid has
// 36, each compiled for a whole scene and for tiles on the go backend's
// one executable): before, the 33rd failed with "maximum cache size of 32
// reached", which pnec backends --precompile of the grid met on its 33rd
// shape and a long batch of scenes of many sizes would have too.
func TestPredictorKeepsEveryShape(t *testing.T) {
	m := trainedTiny(t)
	p, err := NewPredictor(m, "go")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 40 {
		rows, cols := 8+i%7, 8+i/7
		s := rawScene(rows, cols, 6, false, uint64(i))
		if _, err := p.Predict(context.Background(), s); err != nil {
			t.Fatalf("shape %d (%dx%d): %v", i+1, rows, cols, err)
		}
	}
}
