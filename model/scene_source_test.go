package model

import (
	"context"
	"errors"
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

func (c *countingSource) ReadWindow(ctx context.Context, row, col, rows, cols int, data []float32, valid []bool) error {
	c.n++
	if c.failAll || c.failAfter > 0 && c.n > c.failAfter {
		return errDiskGone
	}
	return c.src.ReadWindow(ctx, row, col, rows, cols, data, valid)
}
