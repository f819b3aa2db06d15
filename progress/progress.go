// Package progress is the one progress event of pnec's long work:
// classifying a scene (processor.Request.Progress), training
// (model.TrainOptions.Progress), an experiment
// (evaluation.ExperimentOptions.Progress) and a batch
// (pipelines.Config.Progress) each call a Func with an Event, and cmd/pnec
// draws them (a bar on a terminal, a line per step in a log:
// internal/progress). Plain data without dependencies, so that every
// package may import it.
package progress

import "time"

// Event is where a stage of work is.
type Event struct {
	// Stage names the work: "classify", "train", "experiment", "batch".
	Stage string
	// Subject is what the stage works on now: the scene being classified
	// (classify, batch), the training run ("full run 2/5 seed 8",
	// experiment); "" for a training.
	Subject string
	// Done of Total Units are done: pixels (classify), epochs (train and
	// experiment, over all its trainings), scenes (batch).
	Done, Total int64
	Unit        string
	// Part of Parts are done of the step in progress within Done's unit:
	// the scene's tiles (classify, and the scene a batch classifies), the
	// training's epochs (experiment); 0 of 0 when there is none (train, a
	// batch's event for a finished scene).
	Part, Parts int
	// Elapsed is the time since the step started (the scene's
	// classification, the training), ETA the time it has left at the rate
	// so far (0 when unknown or done).
	Elapsed, ETA time.Duration
	// Message is the state in words, one line: "tile 3/64, 12.5M of
	// 100.0M px (12.5%), 48.2k px/s, ETA 30m15s", "epoch 3/40".
	Message string
	// Metrics are the step's figures, in order: a training's "loss" and
	// "train_acc" (0..1).
	Metrics []Metric
}

// Metric is one named figure of an Event.
type Metric struct {
	Name  string
	Value float64
}

// Metric is the value of the figure named name, and whether the event
// carries one.
func (e Event) Metric(name string) (float64, bool) {
	for _, m := range e.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// Func receives events. Each producer says from which goroutine it calls.
type Func func(Event)
