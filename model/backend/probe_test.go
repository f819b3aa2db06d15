package backend

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPJRTHeaderVersion checks PJRTHeaderVersion against the pjrt_c_api.h
// of the go-xla module this build uses, so that an upgrade of go-xla cannot
// leave the reported version stale.
func TestPJRTHeaderVersion(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-json", "github.com/gomlx/go-xla").Output()
	if err != nil {
		t.Skipf("go list not available here (%v): cannot locate go-xla's header", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Skipf("go-xla module source not in the module cache (%v)", err)
	}
	h, err := os.ReadFile(filepath.Join(mod.Dir, "pjrt", "pjrt_c_api.h"))
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"PJRT_API_MAJOR", "PJRT_API_MINOR"} {
		m := regexp.MustCompile(`#define ` + name + ` (\d+)`).FindSubmatch(h)
		if m == nil {
			t.Fatalf("%s not found in go-xla's pjrt_c_api.h", name)
		}
		v, _ := strconv.Atoi(string(m[1]))
		if v != PJRTHeaderVersion[i] {
			t.Errorf("%s = %d in go-xla's header, PJRTHeaderVersion says %d", name, v, PJRTHeaderVersion[i])
		}
	}
}

// TestProbeGoBackend runs the probe's smoke product on the pure-Go backend,
// and checks that a missing plugin is reported as such, naming it.
func TestProbeGoBackend(t *testing.T) {
	info, err := Probe("go")
	if err != nil {
		t.Fatal(err)
	}
	if !info.SmokeOK || info.Label != "go" || len(info.Devices) == 0 {
		t.Errorf("probe of go: %+v", info)
	}
	_, err = Probe("xla:/nonexistent/xla_cuda_plugin.so")
	if err == nil || !regexp.MustCompile(`/nonexistent/xla_cuda_plugin.so`).MatchString(err.Error()) {
		t.Errorf("probe of a missing plugin: error %v, want one naming the path", err)
	}
}

// TestProbeOtherBackend reports what PNEC_XLA_BACKEND is (plugin, PJRT
// versions, devices) and fails when it cannot run the smoke product; it is
// the first step of scripts/gpu-check.sh.
func TestProbeOtherBackend(t *testing.T) {
	b := os.Getenv("PNEC_XLA_BACKEND")
	if b == "" {
		t.Skip("PNEC_XLA_BACKEND is not set: nothing to probe")
	}
	info, err := Probe(b)
	t.Logf("backend %s: plugin %s, plugin PJRT C API %d.%d, go-xla's %d.%d", info.Label, info.PluginPath,
		info.PluginPJRT[0], info.PluginPJRT[1], info.HeaderPJRT[0], info.HeaderPJRT[1])
	t.Logf("description: %s; devices: %q; smoke product %.3f s", info.Description, info.Devices, info.SmokeSec)
	if err != nil {
		t.Fatal(err)
	}
}

// TestResolveBackendFullFloat32: XLA backends get full-precision float32
// matrix products unless the name asks for TF32.
func TestResolveBackendFullFloat32(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"xla:cuda", "xla:cuda,notf32"},
		{"xla:/opt/p/xla_cuda_plugin.so", "xla:/opt/p/xla_cuda_plugin.so,notf32"},
		{"xla:cuda,tf32", "xla:cuda,tf32"},
		{"xla:cuda,tf32=false", "xla:cuda,tf32=false"},
		{"xla:cuda,notf32", "xla:cuda,notf32"},
		{"xla:cuda,preallocate=false", "xla:cuda,preallocate=false,notf32"},
		{"go", goBackendConfig},
		{"go:parallelism=2", "go:parallelism=2"},
	} {
		if got := Resolve(tc.in); got != tc.want {
			t.Errorf("Resolve(%q) = %q, want %q", tc.in, got, tc.want)
		}
		b, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Label(); strings.Contains(got, "notf32") && !strings.Contains(tc.in, "notf32") {
			t.Errorf("Parse(%q).Label() = %q: the default option should not show", tc.in, got)
		}
	}
}
