package backend

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostilePlugin builds, in dir, a shared library named base whose
// constructor writes the file $PNEC_TEST_MARKER and whose GetPjrtApi
// returns NULL: what a library dropped into a folder on the library path
// could be.
func hostilePlugin(t *testing.T, dir, base string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build a stand-in plugin")
	}
	src := filepath.Join(t.TempDir(), "p.c")
	os.WriteFile(src, []byte(`#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void mark(void) {
	const char *m = getenv("PNEC_TEST_MARKER");
	if (m) { FILE *f = fopen(m, "w"); if (f) { fputs("loaded", f); fclose(f); } }
}
const void *GetPjrtApi(void) { return NULL; }
`), 0o644)
	p := filepath.Join(dir, base)
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-o", p, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v: %s", err, b)
	}
	return p
}

// TestDiscoveryLoadsAndRunsNothing: finding plugins
// neither loads a library from a folder on the library path (a
// pjrt_plugin_*.so there runs no constructor) nor runs the python3 found
// on PATH, and still finds what those places hold: the library by its
// name and exported symbol, the pip plugin in the site-packages beside
// python3. It runs discovery in a child process, since go-xla reads the
// library path when the process starts.
func TestDiscoveryLoadsAndRunsNothing(t *testing.T) {
	if os.Getenv("PNEC_TEST_DISCOVER_CHILD") == "1" {
		b, _ := json.Marshal(FindPlugins())
		fmt.Printf("PLUGINS %s\n", b)
		return
	}
	if os.Getenv("PNEC_TEST_DISCOVER_CHILD") == "probe" {
		_, err := Probe("xla:evil")
		fmt.Printf("PROBE %v\n", err)
		return
	}
	libDir, work := t.TempDir(), t.TempDir()
	hostilePlugin(t, libDir, "pjrt_plugin_evil.so")
	os.WriteFile(filepath.Join(libDir, "pjrt_c_api_fake_plugin.so"), []byte("not a library"), 0o755)
	prefix := filepath.Join(work, "py")
	os.MkdirAll(filepath.Join(prefix, "bin"), 0o755)
	pyMarker := filepath.Join(work, "python-ran")
	os.WriteFile(filepath.Join(prefix, "bin", "python3"), []byte("#!/bin/sh\necho ran > "+pyMarker+"\n"), 0o755)
	pip := filepath.Join(prefix, "lib", "python3.12", "site-packages", "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	os.MkdirAll(filepath.Dir(pip), 0o755)
	os.WriteFile(pip, nil, 0o755)
	libMarker := filepath.Join(work, "library-loaded")

	cmd := exec.Command(os.Args[0], "-test.run", "^TestDiscoveryLoadsAndRunsNothing$")
	cmd.Env = append(os.Environ(), "PNEC_TEST_DISCOVER_CHILD=1", "PNEC_TEST_MARKER="+libMarker,
		"LD_LIBRARY_PATH="+libDir, "PATH="+filepath.Join(prefix, "bin")+":"+os.Getenv("PATH"),
		"PJRT_PLUGIN_LIBRARY_PATH=", "PNEC_SITE_PACKAGES=", "VIRTUAL_ENV=", "CONDA_PREFIX=")
	cmd.Env = slices.DeleteFunc(cmd.Env, func(e string) bool { return e == "PJRT_PLUGIN_LIBRARY_PATH=" })
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, m := range []string{libMarker, pyMarker} {
		if _, err := os.Stat(m); err == nil {
			t.Errorf("discovery ran foreign code: %s was written", m)
		}
	}
	var found []Plugin
	for _, line := range strings.Split(string(out), "\n") {
		if js, ok := strings.CutPrefix(line, "PLUGINS "); ok {
			json.Unmarshal([]byte(js), &found)
		}
	}
	var paths []string
	for _, p := range found {
		paths = append(paths, p.Path)
	}
	if !slices.Contains(paths, "evil") || !slices.Contains(paths, pip) {
		t.Errorf("found %v, want the library's plugin (evil) and the pip plugin %s", paths, pip)
	}
	if slices.Contains(paths, "fake") {
		t.Errorf("a file that is not a shared library exporting GetPjrtApi was listed: %v", paths)
	}
	// pnec backends probes what it lists, loading it: the NULL API is
	// reported naming the file (go-xla's own search calls it "not found").
	probe := exec.Command(os.Args[0], "-test.run", "^TestDiscoveryLoadsAndRunsNothing$")
	probe.Env = append(slices.DeleteFunc(cmd.Env, func(e string) bool { return e == "PNEC_TEST_DISCOVER_CHILD=1" }),
		"PNEC_TEST_DISCOVER_CHILD=probe", CacheDirEnv+"="+t.TempDir())
	out, err = probe.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "GetPjrtApi returned NULL") || !strings.Contains(string(out), "pjrt_plugin_evil.so") {
		t.Errorf("probing the plugin: %v\n%s", err, out)
	}
}

// TestNullPJRTPlugin: a plugin named by path whose
// GetPjrtApi returns NULL is an error naming it, from Probe and
// from opening the backend, not a nil-pointer panic.
func TestNullPJRTPlugin(t *testing.T) {
	p := hostilePlugin(t, t.TempDir(), "pjrt_plugin_null.so")
	t.Setenv("PNEC_TEST_MARKER", filepath.Join(t.TempDir(), "m"))
	t.Setenv(CacheDirEnv, t.TempDir()) // opening it makes a compile cache folder
	resetCompileCache(t)
	if _, err := Probe("xla:" + p); err == nil || !strings.Contains(err.Error(), "NULL") || !strings.Contains(err.Error(), p) {
		t.Errorf("Probe: %v, want an error naming %s and its NULL API", err, p)
	}
	b, err := Parse("xla:" + p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(); err == nil || !strings.Contains(err.Error(), "NULL") {
		t.Errorf("Open: %v, want an error naming the NULL API", err)
	}
}
