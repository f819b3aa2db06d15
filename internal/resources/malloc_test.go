package resources

import (
	"os/exec"
	"strings"
	"testing"
)

// TestMallocSettingsTakeEffect: on glibc both malloc settings are applied
// (mallopt accepts them). Without the C library's header seen before the
// check for glibc, the calls compile to nothing: that passed the build,
// and pnec classify with 16 threads then failed to start threads under
// ulimit -v 2000000 (TestRunsUnderAddressSpaceLimit).
func TestMallocSettingsTakeEffect(t *testing.T) {
	out, err := exec.Command("getconf", "GNU_LIBC_VERSION").Output()
	if err != nil || !strings.HasPrefix(string(out), "glibc") {
		t.Skipf("not glibc (getconf GNU_LIBC_VERSION: %q, %v): no malloc settings to apply", out, err)
	}
	if !setMMapThreshold(MMapThresholdBytes) {
		t.Errorf("mallopt(M_MMAP_THRESHOLD, %d) not applied", MMapThresholdBytes)
	}
	// A cap of 0 is accepted and leaves glibc's own limit (8 arenas per core),
	// so this test process is not limited by it.
	if !capMallocArenas(0) {
		t.Error("mallopt(M_ARENA_MAX) not applied")
	}
}
