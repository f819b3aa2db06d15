package tempfiles

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The package state is process-wide, so one test walks the whole life
// cycle: record, publish, forget, abort, refuse.
func TestLifeCycle(t *testing.T) {
	dir := t.TempDir()
	stage := filepath.Join(dir, ".p.tif.pnec-1.stage.tif")
	cog := filepath.Join(dir, ".p.tif.pnec-2.tmp.tif")
	staging := filepath.Join(dir, "staging")
	product := filepath.Join(dir, "p.tif")
	for _, p := range []string{stage, cog, product} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(staging, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "never-created")
	if err := Add(stage, cog, staging, missing); err != nil {
		t.Fatal(err)
	}
	// A publish (with a nested Forget afterwards, as geo does) works before the stop.
	if err := Publish(func() error { return os.Rename(cog, product) }); err != nil {
		t.Fatal(err)
	}
	Forget(cog)
	if got := Live(); len(got) != 3 {
		t.Fatalf("live %v, want stage, staging and the missing file", got)
	}
	removed, err := Abort()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || removed[0] != stage || removed[1] != staging {
		t.Fatalf("removed %v, want [%s %s]", removed, stage, staging)
	}
	for _, p := range []string{stage, staging} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Abort (%v)", p, err)
		}
	}
	if b, err := os.ReadFile(product); err != nil || string(b) != cog {
		t.Errorf("published product %q, %v; want the renamed file", b, err)
	}
	if err := Add(filepath.Join(dir, "late")); !errors.Is(err, ErrStopping) {
		t.Errorf("Add after Abort: %v, want ErrStopping", err)
	}
	ran := false
	if err := Publish(func() error { ran = true; return nil }); !errors.Is(err, ErrStopping) || ran {
		t.Errorf("Publish after Abort: %v (ran %v), want ErrStopping without running", err, ran)
	}
}

// resume undoes an Abort of the process-wide state (TestLifeCycle's), so
// that a test of the writers starts afresh.
func resume() {
	mu.Lock()
	stopped = false
	mu.Unlock()
}

func TestWriteFile(t *testing.T) {
	resume() // TestLifeCycle may have aborted the process-wide state
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	for _, data := range []string{"first", "second, longer"} {
		if err := WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read back %q, %v; want %q", got, err, data)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", st.Mode().Perm(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the file alone (no temporary left)", len(ents))
	}
	if live := Live(); len(live) != 0 {
		t.Errorf("temporaries still recorded: %v", live)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x"), nil, 0o644); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

// TestWriteFuncFails: a write that fails leaves the old file as it was and
// no temporary beside it.
func TestWriteFuncFails(t *testing.T) {
	resume()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFunc(path, 0o600, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WriteFunc: %v, want the write's error", err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "old" {
		t.Errorf("read back %q, %v; want the old file", got, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the file alone (no temporary left)", len(ents))
	}
	if live := Live(); len(live) != 0 {
		t.Errorf("temporaries still recorded: %v", live)
	}
}
