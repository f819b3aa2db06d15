// Package golden compares a test's output with a golden file under the
// package's testdata/ folder, and rewrites the file when the test binary
// runs with -update (after a deliberate change: `go test ./PKG -run TEST
// -update`). Tests of geo, tiling and pipelines use it.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag, defined here once for every package whose
// tests import golden (a package that defines its own -update, as
// cmd/pnec's docs tests do, keeps it: flag.Lookup finds it first).
var update = func() *bool {
	if f := flag.Lookup("update"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if b, ok := g.Get().(bool); ok {
				v := b
				return &v
			}
		}
	}
	return flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")
}()

// Update reports whether the test binary runs with -update.
func Update() bool { return *update }

// Check compares got with testdata/name byte for byte, or writes it there
// with -update.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (rerun with -update if the change is meant):\n%s", path, got)
	}
}
