package resources

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// arenaHelperEnv makes the test binary run as TestEarlyArenaCap's child.
const arenaHelperEnv = "PNEC_TEST_ARENA_HELPER"

// TestEarlyArenaCap runs this test binary again under an address-space
// limit, makes 16 threads use malloc at once and counts glibc's arenas:
// the cap applied when the program is loaded keeps them at
// LimitedMallocArenas (applied from main, after the Go runtime's first
// threads, there were six), and new threads' default stack is at most
// LimitedThreadStackBytes. Without the limit, or with the user's
// MALLOC_ARENA_MAX, no cap is applied at load; without the limit the
// stack is glibc's own.
func TestEarlyArenaCap(t *testing.T) {
	if os.Getenv(arenaHelperEnv) == "1" {
		arenaHelper()
		return
	}
	if limitedArenasInC != LimitedMallocArenas || limitedStackBytesInC != LimitedThreadStackBytes {
		t.Fatalf("the C rules cap at %d arenas and %d-byte stacks, the policy at %d and %d",
			limitedArenasInC, limitedStackBytesInC, LimitedMallocArenas, LimitedThreadStackBytes)
	}
	// Without a limit of its own this process keeps glibc's default stack,
	// which the limited child must not keep where it is larger.
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err != nil || rl.Cur != ^uint64(0) {
		t.Skipf("this test process already runs under an address-space limit (%d bytes, %v): its children cannot run without one", rl.Cur, err)
	}
	unlimitedStack := defaultThreadStackBytes()
	out, err := exec.Command("getconf", "GNU_LIBC_VERSION").Output()
	if err != nil || !strings.HasPrefix(string(out), "glibc") {
		t.Skipf("not glibc (getconf GNU_LIBC_VERSION: %q, %v): no arenas to cap", out, err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for ulimit -v")
	}
	for _, tc := range []struct {
		name      string
		limitKB   int
		env       []string
		wantCap   int
		maxArenas int
	}{
		{"under a limit", 4000000, nil, LimitedMallocArenas, LimitedMallocArenas},
		{"the user's MALLOC_ARENA_MAX wins", 4000000, []string{"MALLOC_ARENA_MAX=3"}, 0, 3},
		{"the user's glibc tunable wins", 4000000, []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=3"}, 0, 3},
		{"no limit", 0, nil, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := "unlimited"
			if tc.limitKB > 0 {
				limit = strconv.Itoa(tc.limitKB)
			}
			cmd := exec.Command("bash", "-c", `ulimit -v "$1" && shift && exec "$@"`, "bash", limit,
				os.Args[0], "-test.run=^TestEarlyArenaCap$", "-test.count=1")
			cmd.Env = append(append(os.Environ(), arenaHelperEnv+"=1"), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			var gotCap, arenas int
			var stack int64
			if _, err := fmt.Sscanf(lastLine(string(out), "arenas:"), "arenas: cap %d count %d stack %d", &gotCap, &arenas, &stack); err != nil {
				t.Fatalf("helper printed no arena line (%v):\n%s", err, out)
			}
			wantStack := unlimitedStack
			if tc.limitKB > 0 {
				wantStack = min(unlimitedStack, LimitedThreadStackBytes)
			}
			if stack != wantStack {
				t.Errorf("default thread stack %d bytes, want %d (without a limit: %d)", stack, wantStack, unlimitedStack)
			}
			if gotCap != tc.wantCap {
				t.Errorf("cap applied at load = %d, want %d", gotCap, tc.wantCap)
			}
			if tc.maxArenas > 0 && (arenas < 1 || arenas > tc.maxArenas) {
				t.Errorf("%d arenas after 16 threads used malloc, want 1..%d", arenas, tc.maxArenas)
			}
		})
	}
}

// arenaHelper is TestEarlyArenaCap's child: 16 OS threads use malloc at
// once, then it prints the cap applied at load and the arenas counted.
func arenaHelper() {
	const threads = 16
	var ready, done sync.WaitGroup
	ready.Add(threads)
	done.Add(threads)
	release := make(chan struct{})
	for range threads {
		go func() {
			defer done.Done()
			// Locked, each goroutine holds its own thread until all
			// have used malloc.
			runtime.LockOSThread()
			touchMalloc()
			ready.Done()
			<-release
		}()
	}
	ready.Wait()
	close(release)
	done.Wait()
	fmt.Printf("arenas: cap %d count %d stack %d\n", earlyArenaCap(), mallocArenas(), defaultThreadStackBytes())
}

func lastLine(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], prefix) {
			return lines[i]
		}
	}
	return ""
}
