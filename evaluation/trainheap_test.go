package evaluation

import (
	"context"
	"math"
	"runtime/debug"
	"testing"

	"github.com/pnec/pnec/model"
	"github.com/pnec/pnec/progress"
)

// TestWindowedTrainHoldsGoHeap: a run on tiles of a held scene holds the
// Go memory limit to its estimate and the collector's headroom while it
// trains and gives the limit back after; one read by windows keeps its
// budget's limit; a run on the whole scene leaves the limit alone.
func TestWindowedTrainHoldsGoHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three models: skipped with -short")
	}
	orig := debug.SetMemoryLimit(-1)
	s := newTinyScene(48, 100, 6, 7)
	scene, labels := writeBadBandScene(t, t.TempDir(), s)
	for _, tc := range []struct {
		name      string
		opts      model.TrainOptions
		byWindows bool
		capped    bool
	}{
		{"tiles, held", model.TrainOptions{Tile: 32}, false, true},
		{"tiles, read by windows", model.TrainOptions{Tile: 32}, true, true},
		{"whole scene", model.TrainOptions{Whole: true}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Config, opts.TrainPerClass, opts.Backend = tinyConfig(3), 10, "go"
			var during []int64
			opts.Progress = func(progress.Event) { during = append(during, debug.SetMemoryLimit(-1)) }
			res, err := Train(context.Background(), TrainRequest{Scene: scene, Labels: labels, Options: opts, ReadByWindows: tc.byWindows})
			if err != nil {
				t.Fatal(err)
			}
			if after := debug.SetMemoryLimit(-1); after != orig {
				t.Errorf("limit after training %d, want it given back (%d)", after, orig)
			}
			if len(during) == 0 {
				t.Fatal("no progress event")
			}
			if !tc.capped {
				if during[0] != orig {
					t.Errorf("whole-scene run set the limit to %d (was %d)", during[0], orig)
				}
				return
			}
			// The scene the model saw: the bad band left out, 3 classes.
			at := model.Scene{Rows: s.rows, Cols: s.cols, Bands: 5}
			need := model.WindowedTrainBytes(at, 3, opts)
			if res.ReadByWindows {
				// Read by windows: the budget's limit, less the block cache.
				if during[0] <= need+need/trainHeapHeadroom || during[0] >= orig {
					t.Errorf("limit while training by windows %d, want the budget's, under %d and over the held hold %d", during[0], orig, need+need/trainHeapHeadroom)
				}
				return
			}
			if want := min(orig, need+need/trainHeapHeadroom); need <= 0 || during[0] != want {
				t.Errorf("limit while training %d, want the estimate %d and its headroom: %d", during[0], need, want)
			}
			if during[0] == math.MaxInt64 {
				t.Error("no limit while training")
			}
		})
	}
}
