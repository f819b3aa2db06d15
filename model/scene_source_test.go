package model

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// streamTestScene is a windowed-size scene with no-data pixels (a block
// and a scatter), so that the valid masks of both paths are exercised.
func streamTestScene() (Scene, []int32) {
	s, labels := synthScene(128, 256, 8, 3, 11)
	s.Valid = make([]bool, s.Rows*s.Cols)
	for i := range s.Valid {
		r, c := i/s.Cols, i%s.Cols
		s.Valid[i] = !(r < 10 && c < 30) && i%97 != 5
	}
	return s, labels
}

// TestTrainStreamedSameModel: a scene read by windows (NewStreamedScene)
// trains to the same model as the scene in memory, bit for bit: the same
// steps on the same tiles, the same stretch (every pixel is in the
// sample of a scene this small), the same choices and statistics.
func TestTrainStreamedSameModel(t *testing.T) {
	s, labels := streamTestScene()
	opts := TrainOptions{Config: tinyConfig(12), TrainPerClass: 12, Backend: "go", Tile: 128}
	ctx := context.Background()
	mem, err := Train(ctx, s, labels, opts)
	if err != nil {
		t.Fatal(err)
	}
	reads := &countingSource{src: SceneMemorySource{Scene: s}}
	ss, err := NewStreamedScene(ctx, reads, s.Rows, s.Cols, s.Bands, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ss.Streamed() || ss.Data != nil {
		t.Fatal("NewStreamedScene holds the scene's values")
	}
	if !slices.Equal(ss.Valid, s.Valid) {
		t.Fatal("streamed valid mask differs from the scene's")
	}
	str, err := Train(ctx, ss, labels, opts)
	if err != nil {
		t.Fatal(err)
	}
	if reads.n < opts.Config.Epochs {
		t.Errorf("%d reads for %d steps: the steps did not read their tiles", reads.n, opts.Config.Epochs)
	}
	a, b := mem.meta, str.meta
	a.TrainSeconds, b.TrainSeconds = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Errorf("streamed model's record differs:\n memory   %+v\n streamed %+v", a, b)
	}
	if !reflect.DeepEqual(mem.params, str.params) || !slices.Equal(mem.protos, str.protos) {
		t.Error("streamed model's weights differ from the in-memory model's")
	}
}

// TestTrainStreamedReadErrors: a read that fails mid-run fails the run,
// naming the rows it read; a streamed scene is not trained whole.
func TestTrainStreamedReadErrors(t *testing.T) {
	s, labels := streamTestScene()
	ctx := context.Background()
	opts := TrainOptions{Config: tinyConfig(12), TrainPerClass: 12, Backend: "go", Tile: 128}
	src := &countingSource{src: SceneMemorySource{Scene: s}}
	ss, err := NewStreamedScene(ctx, src, s.Rows, s.Cols, s.Bands, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.failAfter = src.n + 5
	_, err = Train(ctx, ss, labels, opts)
	if err == nil || !errors.Is(err, errDiskGone) || !strings.Contains(err.Error(), "read rows") {
		t.Errorf("failing source: error %v, want the read's, naming its rows", err)
	}

	src = &countingSource{src: SceneMemorySource{Scene: s}}
	if ss, err = NewStreamedScene(ctx, src, s.Rows, s.Cols, s.Bands, nil); err != nil {
		t.Fatal(err)
	}
	whole := opts
	whole.Whole = true
	if _, err := Train(ctx, ss, labels, whole); !errors.Is(err, errStreamedWhole) {
		t.Errorf("streamed scene trained whole: error %v, want errStreamedWhole", err)
	}

	src = &countingSource{src: SceneMemorySource{Scene: s}, failAll: true}
	if _, err := NewStreamedScene(ctx, src, s.Rows, s.Cols, s.Bands, nil); !errors.Is(err, errDiskGone) {
		t.Errorf("first pass over a failing source: error %v, want the read's", err)
	}
}

var errDiskGone = errors.New("disk gone")

// countingSource counts reads and fails every read after failAfter (when
// set), or every read (failAll).
type countingSource struct {
	src       SceneSource
	n         int
	failAfter int
	failAll   bool
}

func (c *countingSource) ReadWindow(ctx context.Context, row, col, rows, cols, rowPixels int, data []float32, valid []bool) error {
	c.n++
	if c.failAll || c.failAfter > 0 && c.n > c.failAfter {
		return errDiskGone
	}
	return c.src.ReadWindow(ctx, row, col, rows, cols, rowPixels, data, valid)
}

// TestStreamedStretchExact: the stretch of a streamed scene (two passes
// of histograms) is the held scene's (selection over every value) on
// values with ties, signs, zeros of both signs, NaN, Inf, no-data
// pixels, a constant band and a band of one finite value, at sizes where
// the percentiles' ranks fall anywhere.
func TestStreamedStretchExact(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {3, 7}, {40, 53}, {97, 211}} {
		rows, cols, B := size[0], size[1], 6
		rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
		s := Scene{Rows: rows, Cols: cols, Bands: B, Data: make([]float32, rows*cols*B), Valid: make([]bool, rows*cols)}
		for i := range rows * cols {
			s.Valid[i] = rows*cols == 1 || rng.IntN(10) > 0
			for b := range B {
				var v float32
				switch b {
				case 0: // wide range, both signs
					v = float32(rng.NormFloat64() * 1e4)
				case 1: // few distinct values: ties at every rank
					v = float32(rng.IntN(5)) - 2
				case 2: // zeros of both signs, NaN and Inf among small values
					switch rng.IntN(6) {
					case 0:
						v = float32(math.Copysign(0, -1))
					case 1:
						v = float32(math.NaN())
					case 2:
						v = float32(math.Inf(1 - 2*rng.IntN(2)))
					default:
						v = float32(rng.Float64() * 1e-3)
					}
				case 3: // constant
					v = 7
				case 4: // one finite value, the rest NaN
					v = float32(math.NaN())
					if i == 0 {
						v = 3
					}
				default: // close values sharing the high key bits
					v = 1000 + float32(rng.IntN(1<<14))/1024
				}
				s.Data[i*B+b] = v
			}
		}
		s.Valid[0] = true
		lo, hi, err := bandStretch(s)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := NewStreamedScene(context.Background(), SceneMemorySource{Scene: s}, rows, cols, B, nil)
		if err != nil {
			t.Fatal(err)
		}
		slo, shi, err := bandStretch(ss)
		if err != nil {
			t.Fatal(err)
		}
		for b := range B {
			if lo[b] != slo[b] || hi[b] != shi[b] {
				t.Errorf("%dx%d band %d: streamed stretch %v..%v, held %v..%v", rows, cols, b, slo[b], shi[b], lo[b], hi[b])
			}
		}
	}
}

func TestOrderKey(t *testing.T) {
	vals := []float32{float32(math.Inf(-1)), -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32, 0, math.SmallestNonzeroFloat32, 1, math.MaxFloat32, float32(math.Inf(1))}
	for i := 1; i < len(vals); i++ {
		if orderKey(vals[i-1]) >= orderKey(vals[i]) {
			t.Errorf("key of %v not below key of %v", vals[i-1], vals[i])
		}
	}
	for _, v := range vals {
		if keyValue(orderKey(v)) != v {
			t.Errorf("keyValue(orderKey(%v)) = %v", v, keyValue(orderKey(v)))
		}
	}
	if orderKey(float32(math.Copysign(0, -1))) != orderKey(0) {
		t.Error("-0 and +0 have different keys")
	}
}
