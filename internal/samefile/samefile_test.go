package samefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
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

// TestKeyerSameAsResolve: the keyer a Set uses for many names, which
// resolves each folder once, gives each name the key Key gave it name by
// name (its inode when it exists, else Resolve's path): through a linked
// folder, a missing folder, a dangling link, relative names.
func TestKeyerSameAsResolve(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"ln": "real", "dl": "nowhere", filepath.Join("real", "up"): ".."} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	names := []string{
		filepath.Join(dir, "ln", "new"), filepath.Join(dir, "ln", "a"), filepath.Join(dir, "ln", "new2"),
		filepath.Join(dir, "real", "new"), filepath.Join(dir, "ln", "sub", "new"), filepath.Join(dir, "dl"),
		filepath.Join(dir, "dl", "x"), filepath.Join(dir, "real", "up", "ln", "z"), "ln/new", "./real/new", "real/../ln/q", "dl",
	}
	ref := func(name string) string {
		if st, err := os.Stat(name); err == nil {
			s := st.Sys().(*syscall.Stat_t)
			return fmt.Sprintf("inode %d:%d", s.Dev, s.Ino)
		}
		return "path " + Resolve(name)
	}
	var k keyer
	for _, n := range names {
		if got, want := k.key(n), ref(n); got != want {
			t.Errorf("%s: keyer %q, name by name %q", n, got, want)
		}
	}
}

// BenchmarkSetCheckNewOutputs: a Set checked against 80,000 outputs still
// to be written in one folder (a 10,000-scene batch's products and their
// companions), the check before a batch's work.
func BenchmarkSetCheckNewOutputs(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "a", "b", "c", "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	outs := make([]Named, 80000)
	for i := range outs {
		outs[i] = Named{Path: filepath.Join(dir, fmt.Sprintf("scene-%05d.x%d.tif", i/8, i%8)), Role: "the product"}
	}
	var s Set
	s.Add(Named{Path: filepath.Join(dir, "..", "in.tif"), Role: "the scene"})
	for b.Loop() {
		if err := s.Check(outs...); err != nil {
			b.Fatal(err)
		}
	}
}
