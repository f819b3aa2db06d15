package geo

import (
	"os"
	"strings"
	"testing"
)

// TestQuietMessages: a GDAL failure reported outside this package's calls
// reaches stderr as "ERROR 1: ..." through GDAL's default handler, and
// not after QuietMessages (run in child processes: the handler is
// process-wide).
func TestQuietMessages(t *testing.T) {
	if mode := os.Getenv("PNEC_QUIET_CHILD"); mode != "" {
		register()
		if mode == "quiet" {
			QuietMessages()
		}
		emitGDALError("a message from outside pnec's calls")
		return
	}
	for _, tc := range []struct {
		mode string
		want bool
	}{{"default", true}, {"quiet", false}} {
		_, stderr := rerunTest(t, "TestQuietMessages", append(os.Environ(), "PNEC_QUIET_CHILD="+tc.mode))
		if got := strings.Contains(stderr, "ERROR 1: a message from outside"); got != tc.want {
			t.Errorf("%s: stderr shows the message: %v, want %v\n%s", tc.mode, got, tc.want, stderr)
		}
	}
}
