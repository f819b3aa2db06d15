package samefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSame: the ways two names reach one file, and names that only look alike.
func TestSame(t *testing.T) {
	dir := t.TempDir()
	scene := filepath.Join(dir, "s.tif")
	if err := os.WriteFile(scene, []byte("scene"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.tif")
	os.WriteFile(other, []byte("scene"), 0o644)
	sym := filepath.Join(dir, "link.tif")
	os.Symlink(scene, sym)
	hard := filepath.Join(dir, "hard.tif")
	if err := os.Link(scene, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	dirLink := filepath.Join(dir, "sublink")
	os.Symlink(sub, dirLink)
	os.Symlink("sub/new.tif", filepath.Join(dir, "dangling.tif"))
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(dir)
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{scene, scene, true},
		{scene, "s.tif", true}, // relative
		{scene, filepath.Join(dir, "sub", "..", "s.tif"), true}, // not clean
		{scene, sym, true},    // symbolic link
		{scene, hard, true},   // hard link
		{scene, other, false}, // same content, another file
		{filepath.Join(sub, "new.tif"), filepath.Join(dirLink, "new.tif"), true}, // not yet written, through a linked directory
		{filepath.Join(sub, "new.tif"), filepath.Join(sub, "new2.tif"), false},
		{filepath.Join(sub, "new.tif"), filepath.Join(dir, "dangling.tif"), true}, // a link to a file still to be written
		{"/vsimem/s.tif", "/vsimem/s.tif", false},                                 // not local: GDAL's business
		{"https://example.com/s.tif", "https://example.com/s.tif", false},
		{`HDF5:"s.h5"://cube`, `HDF5:"s.h5"://cube`, false},
	} {
		if got := Same(tc.a, tc.b); got != tc.want {
			t.Errorf("Same(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestCheck: the conflict names both paths and their roles, and is ErrOutputIsInput.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	scene := filepath.Join(dir, "s.tif")
	os.WriteFile(scene, nil, 0o644)
	link := filepath.Join(dir, "l.tif")
	os.Symlink(scene, link)
	err := Check([]Named{{filepath.Join(dir, "p.tif"), "--out"}, {link, "--out"}},
		[]Named{{filepath.Join(dir, "m.pnec"), "--model"}, {scene, "--scene"}})
	var c *Conflict
	if !errors.As(err, &c) || !errors.Is(err, ErrOutputIsInput) {
		t.Fatalf("got %v, want a *Conflict", err)
	}
	want := "--out " + link + " is --scene " + scene + " (the same file): writing it would destroy that input"
	if err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if err := Check([]Named{{filepath.Join(dir, "p.tif"), "--out"}}, []Named{{scene, "--scene"}}); err != nil {
		t.Errorf("distinct files: %v", err)
	}
}
