// Package progress draws pnec's progress bars, for the events of package
// github.com/pnec/pnec/progress that cmd/pnec renders: one place that
// decides whether a writer is an interactive terminal and builds the bar
// with the options every command shares (count, elapsed time, time left,
// cleared when done). Commands log a line per step instead where
// IsTerminal is false, so that redirected output stays readable in logs.
package progress

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// IsTerminal reports whether w is an interactive terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Options are what differs between the bars.
type Options struct {
	Description string        // text before the bar
	Units       string        // per-second rate unit ("px"); "" shows no rate
	Width       int           // bar width in characters; 0 = the library's default
	Throttle    time.Duration // minimum time between redraws; 0 = every update
}

// New returns a bar counting to total, drawn on w.
func New(w io.Writer, total int64, o Options) *progressbar.ProgressBar {
	opts := []progressbar.Option{progressbar.OptionSetWriter(w)}
	if o.Description != "" {
		opts = append(opts, progressbar.OptionSetDescription(o.Description))
	}
	opts = append(opts, progressbar.OptionShowCount())
	if o.Units != "" {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(o.Units))
	}
	if o.Width > 0 {
		opts = append(opts, progressbar.OptionSetWidth(o.Width))
	}
	opts = append(opts, progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(true))
	if o.Throttle > 0 {
		opts = append(opts, progressbar.OptionThrottle(o.Throttle))
	}
	return progressbar.NewOptions64(total, append(opts, progressbar.OptionClearOnFinish())...)
}
