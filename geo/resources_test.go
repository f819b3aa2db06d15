package geo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResourcePolicyAtFirstUse runs a fresh process as a library program
// would (no command): loading geo sets none of pnec's process settings (no
// init() does), and the resource policy's GDAL_NUM_THREADS is in place
// once geo is first used, before it opens anything; one the user set is
// left as it is.
func TestResourcePolicyAtFirstUse(t *testing.T) {
	if os.Getenv("PNEC_POLICY_CHILD") != "" {
		fmt.Printf("loaded %q\n", ConfigValue("GDAL_NUM_THREADS"))
		if s, err := Open(filepath.Join(t.TempDir(), "absent.tif")); err == nil {
			s.Close()
		}
		fmt.Printf("used %q\n", ConfigValue("GDAL_NUM_THREADS"))
		return
	}
	for _, tc := range []struct {
		env          string
		loaded, used string
	}{
		{"", "", "ALL_CPUS"},
		{"GDAL_NUM_THREADS=3", "3", "3"},
	} {
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GDAL_NUM_THREADS=") {
				env = append(env, kv)
			}
		}
		env = append(env, "PNEC_POLICY_CHILD=1")
		if tc.env != "" {
			env = append(env, tc.env)
		}
		out, _ := rerunTest(t, "TestResourcePolicyAtFirstUse", env)
		for _, want := range []string{fmt.Sprintf("loaded %q\n", tc.loaded), fmt.Sprintf("used %q\n", tc.used)} {
			if !strings.Contains(out, want) {
				t.Errorf("environment %q: want a line %q in\n%s", tc.env, want, out)
			}
		}
	}
}
