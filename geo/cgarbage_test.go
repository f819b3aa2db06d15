package geo

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/airbusgeo/godal"

	"github.com/pnec/pnec/internal/cgogarbage"
	"github.com/pnec/pnec/internal/resources"
)

// cGarbageChildEnv makes the test binary run as TestGodalStoresIntoCGarbage's
// child.
const cGarbageChildEnv = "PNEC_TEST_C_GARBAGE_CHILD"

// godalCallContextBytes is the size of the block godal mallocs for every
// call's context (its C struct cctx: a pointer, two ints, a pointer).
const godalCallContextBytes = 24

// TestGodalStoresIntoCGarbage reproduces issue 46 item 17's crash at will
// and shows that the setting pnec runs under (resources.GODEBUGDefault)
// stops it. godal stores pointer-typed fields into a block fresh from
// C.malloc on every call, and Go's write barrier hands the value each
// store overwrites to the collector as a pointer. The child leaves, in the
// freed blocks its thread's next mallocs of that size get, an address in
// the Go heap's unused memory (past a live large object, inside its span),
// keeps the collector marking, and calls SetMetadata in a loop for 2 s.
// Under GODEBUG=invalidptr=1, the runtime's default, it must stop with
// the "found bad pointer in Go heap" (if it does not, the test no
// longer reaches the hazard and says so); under GODEBUGDefault it must run
// to the end.
func TestGodalStoresIntoCGarbage(t *testing.T) {
	if os.Getenv(cGarbageChildEnv) == "1" {
		cGarbageChild()
		return
	}
	if testing.Short() {
		t.Skip("runs two children of up to 2 s: skipped with -short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(godebug string) (string, error) {
		cmd := exec.Command(exe, "-test.run", "^TestGodalStoresIntoCGarbage$")
		cmd.Env = append(os.Environ(), cGarbageChildEnv+"=1", "GODEBUG="+godebug, "GOTRACEBACK=single")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("invalidptr=1")
	if err == nil || !strings.Contains(out, "found bad pointer in Go heap") {
		t.Fatalf("with the collector's check on (invalidptr=1) the child did not stop with \"found bad pointer in Go heap\": "+
			"the garbage no longer reaches godal's stores, so this test shows nothing (err %v)\n%s", err, out)
	}
	first, _, _ := strings.Cut(out, "\n")
	t.Logf("invalidptr=1: %s", first)
	out, err = run(resources.GODEBUGDefault)
	if err != nil || !strings.Contains(out, "child: survived") {
		t.Fatalf("under GODEBUG=%s the child did not run to the end: %v\n%s", resources.GODEBUGDefault, err, out)
	}
	first, _, _ = strings.Cut(out, "\n")
	t.Logf("%s: %s", resources.GODEBUGDefault, first)
}

// gcNode is one node of the pointer graph that keeps the collector's
// marking busy.
type gcNode struct {
	next *gcNode
	_    [4]*int
}

// cGarbageChild is the child: the loop the test describes.
func cGarbageChild() {
	// glibc's freed blocks go back to the same thread's next mallocs.
	runtime.LockOSThread()
	// A large object's span ends past the object (1 MiB less 4 KiB takes
	// 128 pages of 8 KiB): an address in between is in no object.
	live := make([]byte, 1<<20-4096)
	bad := uintptr(unsafe.Pointer(unsafe.SliceData(live))) + uintptr(len(live)) + 64
	var head *gcNode
	for range 1 << 20 {
		head = &gcNode{next: head}
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	ds, err := godal.Create(godal.Memory, "", 1, godal.Byte, 1, 1)
	if err != nil {
		fmt.Println("child:", err)
		os.Exit(1)
	}
	calls := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		for range 1000 {
			cgogarbage.Leave(bad, godalCallContextBytes, 16)
			if err := ds.SetMetadata("k", "v"); err != nil {
				fmt.Println("child:", err)
				os.Exit(1)
			}
		}
		calls += 1000
	}
	close(stop)
	_ = ds.Close()
	runtime.KeepAlive(live)
	runtime.KeepAlive(head)
	fmt.Printf("child: survived %d SetMetadata calls\n", calls)
}
