package progress

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	// A character device that is not a terminal (/dev/null) is not one either.
	for name, w := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": f, os.DevNull: devNull} {
		if IsTerminal(w) {
			t.Errorf("IsTerminal(%s) = true", name)
		}
	}
}

func TestNew(t *testing.T) {
	var b bytes.Buffer
	bar := New(&b, 10, Options{Description: "classify x.tif", Units: "px"})
	if err := bar.Set64(5); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "classify x.tif") || !strings.Contains(out, "5/10") || !strings.Contains(out, "px/s") {
		t.Errorf("bar drew %q; want the description, 5/10 and a px/s rate", out)
	}
}
