package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSlurm runs scripts/check-slurm.sh (make check-slurm): pnec batch
// as a job array on a real single-node Slurm started for the test (slurm-wlm
// and munge are installed with apt-get when missing). It installs system
// packages, so it runs only when asked: PNEC_CHECK_SLURM=1 (make test sets
// it, and so CI runs it), as root, without -short.
func TestCheckSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("check-slurm installs Slurm and starts a cluster (minutes): skipped with -short")
	}
	if os.Getenv("PNEC_CHECK_SLURM") != "1" {
		t.Skip("check-slurm installs Slurm with apt-get and starts a cluster: set PNEC_CHECK_SLURM=1 (make test does) or run make check-slurm")
	}
	if os.Geteuid() != 0 {
		t.Skip("check-slurm needs root (slurmd and munged run as root): run make check-slurm as root")
	}
	bin := pnecBinary(t)
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "check-slurm.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script, bin).CombinedOutput()
	text := string(out)
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 77 {
		t.Skipf("check-slurm cannot run here: %s", strings.TrimSpace(text))
	}
	if err != nil {
		t.Fatalf("check-slurm: %v\n%s", err, text)
	}
	t.Logf("%s", text)
	if !strings.Contains(text, "all checks passed") {
		t.Fatalf("check-slurm did not report success:\n%s", text)
	}
}
