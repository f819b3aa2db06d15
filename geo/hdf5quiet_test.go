package geo_test

import (
	"context"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
)

// TestHDF5QuietOnEveryThread: opening and reading a NetCDF/HDF5 delivery
// prints nothing on stderr, whichever OS thread the calls run on. A
// thread-safe HDF5 keeps its error printing per thread and turns it on for
// every new one, and the netCDF library probes attributes that are absent
// (the quantization attributes) on every open: a call that lands on a
// thread where nothing turned printing off wrote HDF5-DIAG stacks into
// pnec's stderr. The child process opens the file on goroutines pinned to
// distinct, fresh threads, then on many goroutines that the scheduler
// moves between threads while they call GDAL.
func TestHDF5QuietOnEveryThread(t *testing.T) {
	if path := os.Getenv("PNEC_HDF5_THREADS_CHILD"); path != "" {
		hdf5OnThreads(t, path, 8, 1, true)    // each on a fresh thread of its own
		hdf5OnThreads(t, path, 16, 10, false) // moved between threads by the scheduler
		return
	}
	d, err := fixture.WriteAVIRIS3NC(t.TempDir(), fixture.AVIRIS3Options{Seed: 1})
	fixture.SkipWithoutPython(t, err)
	_, s := geo.RerunTest(t, "TestHDF5QuietOnEveryThread", append(os.Environ(), "PNEC_HDF5_THREADS_CHILD="+d.Path))
	if strings.Contains(s, "HDF5-DIAG") || strings.Contains(s, "ERROR") {
		t.Errorf("opening %s on fresh threads printed on stderr:\n%.2000s", d.Path, s)
	}
}

// hdf5OnThreads runs n goroutines that each list, open, read and close
// path rounds times; locked ones hold an OS thread of their own (taken
// before any of them touches GDAL).
func hdf5OnThreads(t *testing.T, path string, n, rounds int, locked bool) {
	var started, done sync.WaitGroup
	started.Add(n)
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			if locked {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			started.Done()
			<-start // locked goroutines each hold a thread now
			for k := 0; k < rounds; k++ {
				if len(geo.DatasetFiles(path)) == 0 {
					errs <- os.ErrNotExist
					return
				}
				s, err := geo.Open(path)
				if err != nil {
					errs <- err
					return
				}
				if _, err := s.ReadWindow(context.Background(), geo.Window{Rows: 4, Cols: 4}); err != nil {
					errs <- err
				}
				s.Close()
			}
		}()
	}
	started.Wait()
	close(start)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
