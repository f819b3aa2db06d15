package progress_test

import (
	"fmt"
	"testing"

	"github.com/pnec/pnec/progress"
)

func TestMetric(t *testing.T) {
	ev := progress.Event{Metrics: []progress.Metric{{Name: "loss", Value: 0.25}, {Name: "train_acc", Value: 0.9}, {Name: "loss", Value: 7}}}
	for _, tc := range []struct {
		name string
		want float64
		ok   bool
	}{
		{"loss", 0.25, true}, // the first of a name
		{"train_acc", 0.9, true},
		{"accuracy", 0, false},
	} {
		if got, ok := ev.Metric(tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("Metric(%q) = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := (progress.Event{}).Metric("loss"); ok {
		t.Error("an event without metrics has a loss")
	}
}

// A caller of a long piece of work (here a training's epochs) receives
// Events: the share done, the time left, the step's figures.
func ExampleFunc() {
	var report progress.Func = func(ev progress.Event) {
		loss, _ := ev.Metric("loss")
		fmt.Printf("%s %s: %d/%d %s, loss %.2f\n", ev.Stage, ev.Message, ev.Done, ev.Total, ev.Unit, loss)
	}
	for epoch := 1; epoch <= 2; epoch++ {
		report(progress.Event{Stage: "train", Done: int64(epoch), Total: 2, Unit: "epochs", Message: fmt.Sprintf("epoch %d/2", epoch),
			Metrics: []progress.Metric{{Name: "loss", Value: 1 / float64(epoch)}}})
	}
	// Output:
	// train epoch 1/2: 1/2 epochs, loss 1.00
	// train epoch 2/2: 2/2 epochs, loss 0.50
}
