// Package tempfiles keeps the process-wide list of temporary files that
// pnec's atomic writers create beside their targets, so that a process told
// to stop (SIGINT/SIGTERM) can remove them even while a goroutine is still
// inside a GDAL call that cannot be interrupted, and so that no rename
// publishes a product once the stop has begun.
package tempfiles

import (
	"errors"
	"os"
	"sort"
	"sync"
)

// ErrStopping is returned by Add and Publish once Abort has run.
var ErrStopping = errors.New("stopping: no new output is published")

var (
	mu      sync.Mutex
	live    = map[string]struct{}{}
	stopped bool
)

// Add records paths (files or directories) as temporaries of a write in
// progress. It fails once Abort has run, so a writer never starts a file
// that nobody would remove.
func Add(paths ...string) error {
	mu.Lock()
	defer mu.Unlock()
	if stopped {
		return ErrStopping
	}
	for _, p := range paths {
		if p != "" {
			live[p] = struct{}{}
		}
	}
	return nil
}

// Forget drops paths from the list: they were removed or published.
func Forget(paths ...string) {
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		delete(live, p)
	}
}

// Publish runs fn (the renames that make a product visible) unless Abort
// has run; Abort waits for a Publish in progress, so a product is either
// published whole before the stop or not at all.
func Publish(fn func() error) error {
	mu.Lock()
	defer mu.Unlock()
	if stopped {
		return ErrStopping
	}
	return fn()
}

// Abort removes every recorded temporary and refuses any later Add or
// Publish. It returns the paths it removed (those that existed). A process
// calls it just before it exits on a signal; no rename of Publish can
// follow it.
func Abort() ([]string, error) {
	mu.Lock()
	stopped = true
	var removed []string
	var errs []error
	for p := range live {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	clear(live)
	mu.Unlock()
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// Live returns the recorded temporaries, sorted (for tests and logs).
func Live() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(live))
	for p := range live {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
