package pipelines

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pnec/pnec/drift"
	"github.com/pnec/pnec/internal/resources/memory"
	"github.com/pnec/pnec/progress"
)

// Scene statuses in a SceneReport.
const (
	StatusDone    = "done"
	StatusSkipped = "skipped" // product up to date
	StatusFailed  = "failed"
	StatusBusy    = "busy" // another process holds the scene's lock
	// StatusStopped: the run was stopped (a signal) while or before the
	// scene was done; nothing of it was published and a rerun does it.
	StatusStopped = "stopped"
	// StatusRefused: the scene's drift verdict was fail under OnDriftSkip;
	// nothing of it was published and every run tries it again.
	StatusRefused = "refused"
)

// StageSeconds is a scene's time per stage, in seconds.
type StageSeconds struct {
	Read    float64 `json:"read_s"`
	Network float64 `json:"network_s"`
	Stitch  float64 `json:"stitch_s"`
	Write   float64 `json:"write_s"`
	STAC    float64 `json:"stac_s"`
	Total   float64 `json:"total_s"`
}

// SceneReport is one line of the run report.
type SceneReport struct {
	Input       string        `json:"input"`
	Output      string        `json:"output,omitempty"`
	Item        string        `json:"item,omitempty"`
	Status      string        `json:"status"`
	Reason      string        `json:"reason,omitempty"`
	Times       *StageSeconds `json:"times,omitempty"`
	Pixels      int64         `json:"pixels,omitempty"`
	ValidPixels int64         `json:"valid_pixels,omitempty"`
	Tiles       int           `json:"tiles,omitempty"`
	Backend     string        `json:"backend,omitempty"`
	Shard       string        `json:"shard,omitempty"`  // "i/n" when the run is one shard
	Engine      string        `json:"engine,omitempty"` // slurm, kubernetes, aws-batch
	JobID       string        `json:"job_id,omitempty"` // the engine's id of this task
	// Bands says how the model's bands were made from the scene's
	// (processor.DescribeBandPlan); Warnings what classifying it assumed or
	// converted.
	Bands    string   `json:"bands,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	err      error    // why it failed (not in the report: Reason says it)
	// notStarted: stopped before a job took it (Summary.NotStarted).
	notStarted bool
	// Drift is the scene's drift verdict (ok, warn, fail; absent for a
	// model without drift statistics) and DriftReasons why it is not ok.
	Drift        string   `json:"drift,omitempty"`
	DriftReasons []string `json:"drift_reasons,omitempty"`
	// DriftRefused is true when the product was withheld for its verdict
	// (OnDriftSkip, OnDriftFail).
	DriftRefused bool `json:"drift_refused,omitempty"`
}

// Summary totals a run.
type Summary struct {
	Scenes, Done, Skipped, Failed, Busy, Stopped int
	// NotStarted counts the Stopped scenes a stop kept from starting.
	NotStarted int
	// Refused counts scenes withheld for their drift (OnDriftSkip;
	// under OnDriftFail they count as Failed and in DriftRefused).
	Refused int
	// DriftWarn and DriftFail count the scenes classified with each
	// verdict, published or not; DriftRefused those withheld.
	DriftWarn, DriftFail, DriftRefused int
	Pixels                             int64 // pixels classified (done scenes)
	Elapsed                            time.Duration
	Jobs                               int
	Backend                            string
	TempFilesRemoved                   int
	MaxMemoryBytesPerJob               int64 // each job's share of the memory budget
}

// String is the one-paragraph summary printed at the end of a run.
func (s Summary) String() string {
	backend := s.Backend
	if backend == "" {
		backend = "default"
	}
	out := fmt.Sprintf("%d scenes: %d done, %d skipped (up to date), %d failed, %d busy; %d pixels in %s with %d jobs on backend %s",
		s.Scenes, s.Done, s.Skipped, s.Failed, s.Busy, s.Pixels, s.Elapsed.Round(time.Millisecond), s.Jobs, backend)
	if s.MaxMemoryBytesPerJob > 0 {
		out += fmt.Sprintf(", memory budget %s per job", memory.FormatBytes(s.MaxMemoryBytesPerJob))
	}
	if s.Stopped > 0 {
		out += fmt.Sprintf("; %d stopped before they finished", s.Stopped)
		if s.NotStarted > 0 {
			out += fmt.Sprintf(" (%d not started)", s.NotStarted)
		}
	}
	if s.DriftWarn+s.DriftFail > 0 {
		out += fmt.Sprintf("; drift: %d warn, %d fail", s.DriftWarn, s.DriftFail)
		if s.DriftRefused > 0 {
			out += fmt.Sprintf(" (%d withheld)", s.DriftRefused)
		}
	}
	return out
}

// ErrScenesFailed is wrapped by Run's error when at least one scene failed.
var ErrScenesFailed = errors.New("scenes failed")

// FailedError is Run's error when scenes failed; it wraps ErrScenesFailed
// and quotes the first failure, so that a one-line message names an input
// and its problem.
type FailedError struct {
	Failed, Scenes int
	First          string
	// FirstErr is the first failure's error (an *InputError for an input
	// that could not be expanded, the scene's error otherwise), so that
	// callers and errors.Is see its cause.
	FirstErr error
	// Drift counts the failed scenes refused for their drift (OnDriftFail).
	Drift int
}

func (e *FailedError) Error() string {
	if e.Failed == 1 {
		return fmt.Sprintf("1 of %d scenes failed: %s", e.Scenes, e.First)
	}
	return fmt.Sprintf("%d of %d scenes failed (see the report); first: %s", e.Failed, e.Scenes, e.First)
}

func (e *FailedError) Unwrap() []error {
	if e.FirstErr == nil {
		return []error{ErrScenesFailed}
	}
	return []error{ErrScenesFailed, e.FirstErr}
}

// tally counts the scenes' outcomes into the Summary, from several jobs.
type tally struct {
	mu           sync.Mutex
	sum          Summary
	firstFailure string
	firstErr     error
	driftFailed  int // failed scenes refused for their drift (OnDriftFail)
}

func (t *tally) add(r SceneReport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch r.Drift {
	case string(drift.Warn):
		t.sum.DriftWarn++
	case string(drift.Fail):
		t.sum.DriftFail++
	}
	if r.DriftRefused {
		t.sum.DriftRefused++
	}
	switch r.Status {
	case StatusDone:
		t.sum.Done++
		t.sum.Pixels += r.Pixels
		if r.Backend != "" {
			t.sum.Backend = r.Backend
		}
	case StatusSkipped:
		t.sum.Skipped++
	case StatusBusy:
		t.sum.Busy++
	case StatusStopped:
		t.sum.Stopped++
		if r.notStarted {
			t.sum.NotStarted++
		}
	case StatusRefused:
		t.sum.Refused++
	default:
		t.sum.Failed++
		if r.DriftRefused {
			t.driftFailed++
		}
		if t.firstFailure == "" {
			t.firstFailure, t.firstErr = r.Reason, r.err
		}
	}
	t.sum.Scenes++
}

// reporter serialises report lines and events.
type reporter struct {
	mu      sync.Mutex
	w       io.Writer
	onEvent progress.Func
	onScene func(SceneReport)
	total   int
	done    int
	all     []SceneReport // every line, for the HTML report
}

func (r *reporter) scene(s *SceneReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	r.all = append(r.all, *s)
	if r.w != nil {
		b, _ := json.Marshal(s)
		r.w.Write(append(b, '\n'))
	}
	if r.onScene != nil {
		r.onScene(*s)
	}
	if r.onEvent != nil {
		r.onEvent(progress.Event{Stage: "batch", Subject: s.Input, Done: int64(r.done), Total: int64(r.total), Unit: "scenes",
			Message: string(s.Status)})
	}
}

// tiles reports the progress ev of the scene being classified as the
// batch's.
func (r *reporter) tiles(ev progress.Event) {
	if r.onEvent == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onEvent(progress.Event{Stage: "batch", Subject: ev.Subject, Done: int64(r.done), Total: int64(r.total), Unit: "scenes",
		Part: ev.Part, Parts: ev.Parts, Elapsed: ev.Elapsed, ETA: ev.ETA, Message: ev.Message})
}
