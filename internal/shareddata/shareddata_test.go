package shareddata

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "shared", "data")
	deep := filepath.Join(root, "main", "pkg", "sub")
	for _, d := range []string{data, deep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "README.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("walks up", func(t *testing.T) {
		t.Setenv("PNEC_DATA", "")
		got, err := Find(deep)
		if err != nil || got != data {
			t.Fatalf("got %q, %v; want %q", got, err, data)
		}
	})
	t.Run("PNEC_DATA wins", func(t *testing.T) {
		t.Setenv("PNEC_DATA", deep)
		if got, err := Find(root); err != nil || got != deep {
			t.Fatalf("got %q, %v; want %q", got, err, deep)
		}
	})
	t.Run("PNEC_DATA missing", func(t *testing.T) {
		t.Setenv("PNEC_DATA", filepath.Join(root, "nope"))
		if _, err := Find(root); !errors.Is(err, ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	})
	t.Run("none above", func(t *testing.T) {
		t.Setenv("PNEC_DATA", "")
		// A fresh temporary directory has no shared/data above it, unless
		// another process made one in the temporary directory's parents.
		dir := t.TempDir()
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "shared", "data")); err == nil {
				t.Skipf("%s has a shared/data folder (another process's): nothing to test here", d)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		if _, err := Find(dir); !errors.Is(err, ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	})
}
