package dlopen

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildLibrary compiles a one-function shared library with soname soname
// at dir/soname with the system's C compiler (skipping when there is none).
func buildLibrary(t *testing.T, dir, soname string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler: cannot build a shared library to load")
	}
	src := filepath.Join(dir, "lib.c")
	if err := os.WriteFile(src, []byte("int pnec_probe(void) { return 42; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, soname)
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-Wl,-soname,"+soname, "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v: %s", err, b)
	}
	return out
}

// TestGlobalMakesSonameFindable: a library outside every search path is
// not found by its soname until Global loads it by full path; then the
// same lookup finds the loaded copy (what a PJRT plugin's own dlopen of
// "libcublas.so.13" relies on).
func TestGlobalMakesSonameFindable(t *testing.T) {
	dir := t.TempDir()
	const soname = "libpnecdlopentest.so.7"
	path := buildLibrary(t, dir, soname)
	if err := Global(soname); err == nil {
		t.Fatalf("%s found by soname before loading it by path: the test proves nothing", soname)
	}
	if err := Global(path); err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	if err := Global(soname); err != nil {
		t.Errorf("after loading %s by path, its soname is not found: %v", path, err)
	}
	if err := Global(filepath.Join(dir, "missing.so")); err == nil {
		t.Error("a missing library loaded without error")
	}
}
