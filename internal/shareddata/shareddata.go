// Package shareddata finds the folder of real benchmark data that sits
// beside the repository (../shared/data), for synth's named sources and
// for the tests and benchmarks that read real scenes. It has no
// dependencies, so any package's tests can use it.
package shareddata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNotFound says the data folder is neither named by $PNEC_DATA nor found
// above the starting directory.
var ErrNotFound = errors.New("shared data folder not found")

// Find returns the shared data folder: $PNEC_DATA when set, else the first
// <ancestor>/shared/data holding README.md, walking up from start (the
// repository's ../shared/data is found from anywhere inside it).
func Find(start string) (string, error) {
	if d := os.Getenv("PNEC_DATA"); d != "" {
		if _, err := os.Stat(d); err != nil {
			return "", fmt.Errorf("%w: PNEC_DATA=%s: %w", ErrNotFound, d, err)
		}
		return d, nil
	}
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for {
		cand := filepath.Join(dir, "shared", "data")
		if _, err := os.Stat(filepath.Join(cand, "README.md")); err == nil {
			return cand, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: no shared/data above %s (set PNEC_DATA)", ErrNotFound, start)
		}
		dir = parent
	}
}
