package regular

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRegular: a FIFO is refused at once by Open, ReadFile and Check with
// ErrNotRegular naming it; a regular file is read; a directory passes
// Check and Open (its read reports it); a missing file is the os error.
func TestRegular(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if _, err := ReadFile(pipe); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(FIFO): %v, want ErrNotRegular", err)
	}
	if err := Check(pipe); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Check(FIFO): %v, want ErrNotRegular", err)
	}
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("abc"), 0o644)
	if b, err := ReadFile(f); err != nil || string(b) != "abc" {
		t.Errorf("ReadFile(regular): %q, %v", b, err)
	}
	if err := Check(dir); err != nil {
		t.Errorf("Check(dir): %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing): %v", err)
	}
}
