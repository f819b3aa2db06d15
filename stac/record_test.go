package stac

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.json")
	for _, content := range []string{"one", "two"} {
		if err := writeFileAtomic(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("got %q, want %q", b, content)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("got %d files, want only x.json", len(ents))
	}
	if err := writeFileAtomic(filepath.Join(dir, "missing", "x.json"), []byte("a")); err == nil {
		t.Error("write into a missing directory: got no error")
	}
}
