package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pnec/pnec/internal/resources"
)

// TestCommandOf: the command main looks at to decide whether to run again
// under glibc's tunables, past the global options.
func TestCommandOf(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pnec", "classify", "--model", "m"}, "classify"},
		{[]string{"pnec", "--verbose", "batch", "x"}, "batch"},
		{[]string{"pnec", "--config", "GDAL_CACHEMAX=512", "train"}, "train"},
		{[]string{"pnec", "--config=GDAL_CACHEMAX=512", "--verbose", "evaluate"}, "evaluate"},
		{[]string{"pnec", "--", "classify"}, "classify"},
		{[]string{"pnec", "--version"}, ""},
		{[]string{"pnec"}, ""},
		{[]string{"pnec", "info", "scene.tif"}, "info"},
	} {
		if got := commandOf(tc.args); got != tc.want {
			t.Errorf("commandOf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestCommandRunsUnderTunables: pnec batch, one of the commands that read
// scenes at scale, runs under the GLIBC_TUNABLES the policy asks for (the
// same process, executed again: its environment shows them), and keeps the
// environment as it is where the policy asks for none. The command is held
// reading its payload from standard input while its environment is read.
func TestCommandRunsUnderTunables(t *testing.T) {
	bin := pnecBinary(t)
	want := resources.WantedTunables()
	if want == "" {
		want = os.Getenv("GLIBC_TUNABLES")
	}
	if got := heldEnvVar(t, bin, "GLIBC_TUNABLES"); got != want {
		t.Errorf("pnec batch runs under GLIBC_TUNABLES=%q, want %q", got, want)
	}
}

// TestCommandRunsUnderGODEBUG: a binary built as make build does has the
// GODEBUG default compiled in and runs as started (GODEBUG as the user set
// it); one built without it (a plain go build, as TestVersionFromBuild
// makes) runs again with resources.GODEBUGDefault added to the user's
// GODEBUG; and a user's own invalidptr wins over both.
func TestCommandRunsUnderGODEBUG(t *testing.T) {
	made := pnecBinary(t)
	plain := filepath.Join(t.TempDir(), "pnec")
	build := exec.Command("go", "build", "-o", plain, ".")
	build.Env = append(os.Environ(), "GOEXPERIMENT=simd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name, bin, user, want string
	}{
		{"make build", made, "gctrace=0", "gctrace=0"},
		{"plain build", plain, "", resources.GODEBUGDefault},
		{"plain build, the user's GODEBUG kept", plain, "gctrace=0", "gctrace=0," + resources.GODEBUGDefault},
		{"plain build, the user's invalidptr wins", plain, "invalidptr=1", "invalidptr=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GODEBUG", tc.user)
			if got := heldEnvVar(t, tc.bin, "GODEBUG"); got != tc.want {
				t.Errorf("pnec batch runs under GODEBUG=%q, want %q", got, tc.want)
			}
		})
	}
}

// heldEnvVar starts bin's batch reading its payload from standard input,
// waits until one of its threads is in that read (past main's running
// again, which happens first thing, in the same process), and returns the
// variable key of the running process's environment (/proc/PID/environ;
// "" where unset).
func heldEnvVar(t *testing.T, bin, key string) string {
	t.Helper()
	cmd := exec.Command(bin, "batch", "--payload", "-", "--out-dir", t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	proc := "/proc/" + strconv.Itoa(cmd.Process.Pid)
	for deadline := time.Now().Add(20 * time.Second); !readingStdin(proc); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pnec batch did not start reading its payload in 20 s (stderr: %s)", stderr.String())
		}
	}
	b, err := os.ReadFile(proc + "/environ")
	if err != nil {
		t.Fatalf("reading the command's environment: %v (stderr: %s)", err, stderr.String())
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// readingStdin reports whether a thread of the process at proc (/proc/PID)
// is in read(2) on file descriptor 0 (its /proc/PID/task/TID/syscall line
// starts with the call's number, 0 on amd64, and the descriptor, 0x0).
func readingStdin(proc string) bool {
	tasks, err := os.ReadDir(proc + "/task")
	if err != nil {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(proc + "/task/" + task.Name() + "/syscall")
		if err == nil && strings.HasPrefix(string(b), "0 0x0 ") {
			return true
		}
	}
	return false
}

// TestMakefileBuildsInGODEBUGDefault: make build, the GPU bundle and the
// guarded build compile in the GODEBUG default the policy names
// (resources.GODEBUGDefault), from the one Makefile variable.
func TestMakefileBuildsInGODEBUGDefault(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mk := read("Makefile")
	if !strings.Contains(mk, "\nGODEBUG_DEFAULT := "+resources.GODEBUGDefault+"\n") {
		t.Errorf("the Makefile does not set GODEBUG_DEFAULT := %s", resources.GODEBUGDefault)
	}
	if !strings.Contains(mk, "-X runtime.godebugDefault=$(GODEBUG_DEFAULT)") {
		t.Error("the Makefile's LDFLAGS do not compile GODEBUG_DEFAULT in (-X runtime.godebugDefault=$(GODEBUG_DEFAULT))")
	}
	for _, script := range []string{"scripts/gpu-bundle.sh", "scripts/guarded-build.sh"} {
		s := read(script)
		if !strings.Contains(s, "s/^GODEBUG_DEFAULT := //p' Makefile") || !strings.Contains(s, "-X runtime.godebugDefault=$godebug") {
			t.Errorf("%s does not build in the Makefile's GODEBUG_DEFAULT", script)
		}
	}
}
