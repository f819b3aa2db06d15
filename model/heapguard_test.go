package model

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/pnec/pnec/internal/resources"
)

// mapping is one line of /proc/self/maps: [start, end) and whether it is readable.
type mapping struct {
	start, end uintptr
	readable   bool
}

func readMaps(t *testing.T) []mapping {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		lo, hi, _ := strings.Cut(fields[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad maps line %q", sc.Text())
		}
		out = append(out, mapping{uintptr(a), uintptr(b), fields[1][0] == 'r'})
	}
	return out
}

// readableThrough reports whether every byte of [p, p+n) lies in a readable
// mapping, and the end of the readable run that holds p.
func readableThrough(maps []mapping, p, n uintptr) (bool, uintptr) {
	end := uintptr(0)
	for _, m := range maps {
		if m.readable && m.start <= p && p < m.end {
			end = m.end
		}
	}
	for _, m := range maps { // adjacent readable mappings extend the run
		if m.readable && m.start == end {
			end = m.end
		}
	}
	return end != 0 && p+n <= end, end
}

// heapStepBytes is the Go runtime's heap growth step (one palloc chunk,
// 4 MiB), as the heap guard counts it.
const heapStepBytes = 4 << 20

// overReadBytes is how far a partial SIMD load reads past a slice's end at
// most: a 64-byte vector loaded at the slice's last element.
const overReadBytes = 64

// heapEdgeChild allocates page-exact buffers as GoMLX's Go backend does
// (make([]byte, n) with n a multiple of 4 MiB) and steers them to the edge
// of the mapped heap: after each buffer it fills the gap between the
// buffer's end and the mapped end, so that the next buffer makes the heap
// grow by exactly its own size. Each buffer's tail is loaded as GoMLX's
// kernels load it (overRead). It returns the first buffer whose next
// overReadBytes are not readable (where overRead cannot fault), or "" when
// none of rounds buffers was.
func heapEdgeChild(t *testing.T, rounds int) string {
	var keep [][]byte
	for i := range rounds {
		size := (1 + i%3) * heapStepBytes
		b := make([]byte, size)
		keep = append(keep, b)
		end := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b))
		ok, mappedEnd := readableThrough(readMaps(t), end-1, 1+overReadBytes)
		overRead(b) // faults here when !ok (with the simd experiment on amd64)
		if !ok {
			return fmt.Sprintf("buffer %d (%d MiB) ends at %#x, the mapped heap at %#x: a %d-byte load at its last element faults",
				i, size>>20, end, mappedEnd, overReadBytes)
		}
		// Fill what is left above it (while that is small: a guard leaves
		// hundreds of MiB), so that the next buffer lands on the edge.
		if gap := mappedEnd - end; gap > 0 && gap < 64<<20 {
			keep = append(keep, make([]byte, gap))
		}
	}
	return ""
}

// TestHeapGuardKeepsBufferEndsReadable runs heapEdgeChild in a fresh
// process (the heap's layout depends on everything allocated before)
// without and with the guard: without it a page-exact buffer ends where the
// mapped heap ends and the over-reading SIMD load at its tail kills the
// process (SIGSEGV, as in GoMLX's kernels, on CPUs where Go lowers the
// partial load to a full vector load, such as the AMD EPYC this was written
// on), so the check can fail; with it
// every load succeeds and every buffer's next 64 bytes are mapped.
func TestHeapGuardKeepsBufferEndsReadable(t *testing.T) {
	if mode := os.Getenv("PNEC_HEAPGUARD_CHILD"); mode != "" {
		if mode == "guard" {
			resources.GuardHeap()
		}
		fmt.Printf("guard %d bytes\n", resources.HeapGuardBytes())
		if msg := heapEdgeChild(t, 40); msg != "" {
			fmt.Println("EDGE:", msg)
		} else {
			fmt.Println("NO EDGE")
		}
		return
	}
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	for _, tc := range []struct {
		mode     string
		wantEdge bool
	}{{"noguard", true}, {"guard", false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHeapGuardKeepsBufferEndsReadable$", "-test.count=1")
		cmd.Env = append(os.Environ(), "PNEC_HEAPGUARD_CHILD="+tc.mode)
		out, err := cmd.CombinedOutput()
		got := string(out)
		faulted := strings.Contains(got, "unexpected fault address")
		if err != nil && !faulted {
			t.Fatalf("%s child: %v\n%s", tc.mode, err, out)
		}
		t.Logf("%s: %s", tc.mode, strings.TrimSpace(strings.SplitN(got, "\ngoroutine", 2)[0]))
		edge := faulted || strings.Contains(got, "EDGE:")
		if edge != tc.wantEdge {
			t.Errorf("%s: a buffer at the mapped heap's edge: %v, want %v\n%s", tc.mode, edge, tc.wantEdge, got)
		}
		if tc.wantEdge && canOverRead && !faulted {
			// Whether a partial load reads past the slice depends on the
			// CPU and on how Go lowers it there: with fault-suppressing
			// masked loads the over-read never happens and the guard is
			// merely unused. The edge itself (above) is still checked.
			t.Logf("%s: the partial load at the mapped heap's end did not fault on this CPU (masked loads suppress the fault); the guard is not needed here", tc.mode)
		}
	}
}
