package main

import (
	"bytes"
	"os"
	"os/exec"
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
	environ := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ"
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(environ)
		if err != nil {
			t.Fatalf("reading the command's environment: %v (stderr: %s)", err, stderr.String())
		}
		got = ""
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GLIBC_TUNABLES="); ok {
				got = v
			}
		}
		if got == want {
			return
		}
	}
	t.Errorf("pnec batch runs under GLIBC_TUNABLES=%q, want %q", got, want)
}
