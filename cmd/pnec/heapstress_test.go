package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// canary is a small heap object full of pointers whose targets are known:
// the shapes the bad pointer came in (a string and a []bool at an
// odd offset into their arrays, a pointer to another object) and a
// checksum of them. A write into a canary from outside Go's type system
// (assembly, cgo, unsafe) changes one of them, or makes the collector
// throw "found bad pointer in Go heap" when it scans the canary.
type canary struct {
	next  *canary
	name  string // odd data pointer: a substring from offset 1
	flags []bool // odd data pointer: a sub-slice from index 1
	id    int
	sum   int
}

func newCanary(id int, next *canary) *canary {
	name := fmt.Sprintf("xcanary-%d", id)[1:]
	flags := make([]bool, 9)[1:]
	flags[id%len(flags)] = true
	c := &canary{next: next, name: name, flags: flags, id: id}
	c.sum = c.checksum()
	return c
}

func (c *canary) checksum() int {
	s := c.id*31 + len(c.name)*7 + len(c.flags)
	for i, f := range c.flags {
		if f {
			s += i + 1
		}
	}
	if c.next != nil {
		s += c.next.id * 131
	}
	return s
}

// check reports a canary whose fields no longer add up.
func (c *canary) check() error {
	if want := fmt.Sprintf("canary-%d", c.id); c.name != want {
		return fmt.Errorf("canary %d: name %q, want %q", c.id, c.name, want)
	}
	if c.sum != c.checksum() {
		return fmt.Errorf("canary %d: checksum %d, want %d", c.id, c.checksum(), c.sum)
	}
	return nil
}

// TestClassifyProbabilitiesNoHeapCorruption is the in-process short version
// of `make stress-classify` (scripts/stress-classify.sh): `pnec classify
// --probabilities network` on the case that corrupted the heap, a
// 43 x 86 half of SalinasA with all 204 bands, run again and again under
// a collector that runs all the time (GOGC 10 and a forced collection
// between runs), while a goroutine keeps allocating, rewriting and
// checking canaries (pointer-holding objects interleaved in the heap with
// the run's own). The crash, "found bad pointer in Go heap" in a
// write barrier during CreateProduct, came from a value written into a
// pointer slot behind the collector's back; here the collector meets
// every pointer slot many times per run, so such a write kills the test
// binary (the collector throws) or shows as a canary that no longer
// checks. It runs for about 20 s (PNEC_HEAP_STRESS_SECONDS sets it).
// The crash's cause was not found (pnec's unsafe, cgo and assembly code
// passed checkptr, the race detector and ASan on this path), so this is a
// guard that has not been seen failing, not the regression test of a fix.
func TestClassifyProbabilitiesNoHeapCorruption(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model on SalinasA and classifies for about 20 s: skipped with -short")
	}
	if _, err := exec.LookPath("gdal_translate"); err != nil {
		t.Skip("gdal_translate absent (Debian package gdal-bin)")
	}
	d := impDataFile(t, "SalinasA")
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	ctx := context.Background()
	// import prints a notice (no georeference) on stderr: kept out of the log.
	impCaptureStderr(t, func() {
		err := run(ctx, []string{"pnec", "import", "mat", "--cube", filepath.Join(d, "SalinasA_corrected.mat"),
			"--labels", filepath.Join(d, "SalinasA_gt.mat"), "--out", p("full.tif"), "--labels-out", p("full_gt.tif")})
		if err != nil {
			t.Fatalf("import: %v", err)
		}
	})
	for _, f := range []string{"full", "full_gt"} {
		half := strings.Replace(f, "full", "half", 1)
		cmd := exec.Command("gdal_translate", "-q", "-srcwin", "0", "0", "86", "43", p(f+".tif"), p(half+".tif"))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gdal_translate %s: %v\n%s", f, err, b)
		}
	}
	// A short training: the model's shapes (204 bands, 128 channels) are
	// those of the 200-epoch models; only its weights differ.
	if err := run(ctx, []string{"pnec", "train", "--quiet", "--scene", p("half.tif"), "--labels", p("half_gt.tif"),
		"--out", p("half.pnec"), "--epochs", "2", "--backend", "go"}); err != nil {
		t.Fatalf("train: %v", err)
	}

	seconds := 20
	if s := os.Getenv("PNEC_HEAP_STRESS_SECONDS"); s != "" {
		if _, err := fmt.Sscan(s, &seconds); err != nil {
			t.Fatalf("PNEC_HEAP_STRESS_SECONDS=%q: %v", s, err)
		}
	}
	// GOGC 10: the collector runs several times in each run (at 1 a run
	// took five times as long, for fewer collections in the time).
	defer debug.SetGCPercent(debug.SetGCPercent(10))

	var stop atomic.Bool
	var wg sync.WaitGroup
	canaryErr := make(chan error, 1)
	wg.Go(func() {
		ring := make([]*canary, 4096)
		for i := 0; !stop.Load(); i++ {
			j := i % len(ring)
			if c := ring[j]; c != nil {
				if err := c.check(); err != nil {
					canaryErr <- err
					return
				}
			}
			ring[j] = newCanary(i, ring[(j+len(ring)-1)%len(ring)])
			if i%1024 == 0 {
				// A ring's worth of canaries a few times per millisecond:
				// enough churn to interleave them with the run's objects
				// without taking a core from the run.
				time.Sleep(200 * time.Microsecond)
			}
		}
		for _, c := range ring {
			if c != nil {
				if err := c.check(); err != nil {
					canaryErr <- err
					return
				}
			}
		}
	})

	// At least minRuns whatever the time: on a loaded machine (CI beside
	// benchmarks) 20 s held only two runs, too few to interleave anything.
	const minRuns = 3
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	runs := 0
	for runs < minRuns || time.Now().Before(deadline) {
		for _, f := range []string{"out.tif", "out.probabilities.tif", "out.qml", "out.thumbnail.png", "out.tif.aux.xml"} {
			os.Remove(p(f))
		}
		if err := run(ctx, []string{"pnec", "classify", "--quiet", "--model", p("half.pnec"), "--scene", p("half.tif"),
			"--out", p("out.tif"), "--probabilities", "network", "--backend", "go"}); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("run %d: %v", runs+1, err)
		}
		runs++
		runtime.GC()
		select {
		case err := <-canaryErr:
			stop.Store(true)
			wg.Wait()
			t.Fatalf("after %d runs: %v", runs, err)
		default:
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-canaryErr:
		t.Fatalf("after %d runs: %v", runs, err)
	default:
	}
	t.Logf("%d classify runs with probabilities in %d s (at least %d runs) under GOGC 10, no corruption", runs, seconds, minRuns)
}
