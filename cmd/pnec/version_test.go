package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/pnec/pnec/internal/fixture"
	"github.com/pnec/pnec/model"
)

func TestResolveVersion(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	for _, tc := range []struct {
		name, set string
		bi        *debug.BuildInfo
		want      string
	}{
		{"make", "v1.2.0-3-gabc", vcs("0123456789abcdef", "false"), "v1.2.0-3-gabc"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.3.0"}}, "v1.3.0"},
		{"go build in a checkout", "dev", vcs("0123456789abcdef", "false"), "dev+0123456789ab"},
		{"uncommitted changes", "dev", vcs("0123456789abcdef", "true"), "dev+0123456789ab-dirty"},
		{"nothing known", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build info", "dev", nil, "dev"},
	} {
		if got := resolveVersion(tc.set, tc.bi); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if model.Version != version {
		t.Errorf("model.Version %q, want the command's %q: products and model files would record another", model.Version, version)
	}
}

// TestVersionReachesProducts: a binary built as make builds it (-ldflags
// -X main.version=...) records that version in its products, not "dev"
// (issue 24: processing:software said dev because model.Version, which the
// products take, was never set).
func TestVersionReachesProducts(t *testing.T) {
	pnecBinary(t) // skips with -short
	modelPath, err := fixture.ModelPath()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pnec")
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version=v9.9.9-test", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOEXPERIMENT=simd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(out), "v9.9.9-test") {
		t.Fatalf("pnec --version: %v %q", err, out)
	}
	scene, product := goodScene(t, dir), filepath.Join(dir, "p.tif")
	if out, err := exec.Command(bin, "classify", "-q", "--model", modelPath, scene, product).CombinedOutput(); err != nil {
		t.Fatalf("classify: %v\n%s", err, out)
	}
	info, err := exec.Command("gdalinfo", product).Output()
	if err != nil {
		t.Skipf("gdalinfo: %v", err)
	}
	if !strings.Contains(string(info), "PNEC_SOFTWARE_VERSION=v9.9.9-test") {
		t.Errorf("product metadata lacks PNEC_SOFTWARE_VERSION=v9.9.9-test:\n%s", info)
	}
}
