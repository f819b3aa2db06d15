package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionFromBuild builds pnec as make build does (-ldflags -X
// github.com/pnec/pnec/version.String=...) and checks that --version and
// the product's SOFTWARE_VERSION carry that version: products said
// SOFTWARE_VERSION=dev whatever the build, as only main's copy was set.
func TestVersionFromBuild(t *testing.T) {
	pnecBinary(t) // skips with -short
	const v = "v0.0.0-versiontest"
	bin := filepath.Join(t.TempDir(), "pnec")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/pnec/pnec/version.String="+v, "-o", bin, ".")
	build.Env = append(os.Environ(), "GOEXPERIMENT=simd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "pnec version "+v {
		t.Errorf("--version: %q, %v; want %q", out, err, "pnec version "+v)
	}
	modelPath, scene, dir := classifyFixture(t)
	product := filepath.Join(dir, "p.tif")
	if out, err := exec.Command(bin, "classify", "--backend", "go", "--model", modelPath, "--scene", scene, "--out", product, "-q").CombinedOutput(); err != nil {
		t.Fatalf("classify: %v\n%s", err, out)
	}
	md := gdalinfoMap(t, product)["metadata"]
	if !strings.Contains(mustJSON(md), `"PNEC_SOFTWARE_VERSION":"`+v+`"`) {
		t.Errorf("product metadata lacks PNEC_SOFTWARE_VERSION=%s: %s", v, mustJSON(md))
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
