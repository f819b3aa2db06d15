package resources

import (
	"runtime/debug"
	"strconv"
	"sync"
)

// minGoLimitBytes is the least Go memory limit a run counts, so that a
// budget its other parts fill leaves the collector running, not stopped.
const minGoLimitBytes = 1 << 20

// Run is one classify run's share of the process's memory settings: its
// budget, what of it lies outside the Go heap, and the GDAL block cache its
// reads need. processor's calibrated memory model gives the figures.
type Run struct {
	// BudgetBytes is the run's memory budget (memory.Budget's rule applied).
	BudgetBytes int64
	// OffHeapBytes is the part of the budget outside the Go heap whatever
	// the backend: the base process, GDAL's block cache and decoding
	// buffers, the product writer's C buffers, an open VRT's sources.
	OffHeapBytes int64
	// NetworkBytes is the network's buffers for the run's tiles, on the Go
	// heap only where NetworkOnGoHeap (backend.Backend.NetworkOnGoHeap).
	NetworkBytes    int64
	NetworkOnGoHeap bool
	// BlockCacheBytes is the GDAL block cache the run's reads need.
	BlockCacheBytes int64
}

// GoLimitBytes is the Go memory limit the run adds to the process's: what
// its budget leaves the Go heap, so that the heap (the network's buffers
// on the Go backend included) stays inside the budget instead of growing
// to twice its live data. Where the network's buffers are outside the Go
// heap (every backend but the Go backend) their share is kept out of the
// limit too. At least minGoLimitBytes.
func (r Run) GoLimitBytes() int64 {
	l := r.BudgetBytes - r.OffHeapBytes
	if !r.NetworkOnGoHeap {
		l -= r.NetworkBytes
	}
	return max(l, minGoLimitBytes)
}

// runs holds the runs in progress' settings: the process's Go memory limit
// and GDAL block cache are their sums (pnec batch runs several classifiers
// at once, each with its share of the budget).
var runs struct {
	sync.Mutex
	goSum      int64
	goOrig     int64 // the limit before the first run (GOMEMLIMIT's, or none)
	goSet      bool
	cacheSum   int64
	cacheOrig  int64 // GDAL's own maximum before the first reservation
	cacheKnown bool
}

// Reserve applies a run's Go memory limit and GDAL block cache (through
// g) and returns the function that gives them back at the run's end. The
// process's limit is the sum of the runs' (at most the limit it had before
// the first, GOMEMLIMIT's say), and goes back to that when the last run
// ends. The block cache's maximum is the sum of the runs' reservations, so
// that the cache is part of their budgets instead of GDAL's default (5% of
// physical memory, whatever the budget), and goes back to GDAL's own when
// none is left. A GDAL_CACHEMAX set by the user (environment or --config)
// is left alone.
func Reserve(g GDAL, r Run) (release func()) {
	goLimit := r.GoLimitBytes()
	cacheApplied := g.ConfigValue("GDAL_CACHEMAX") == ""
	runs.Lock()
	if cacheApplied {
		addBlockCache(g, r.BlockCacheBytes)
	}
	if !runs.goSet {
		runs.goOrig = debug.SetMemoryLimit(-1)
		runs.goSet = true
	}
	runs.goSum += goLimit
	debug.SetMemoryLimit(min(runs.goSum, runs.goOrig))
	runs.Unlock()
	return func() {
		runs.Lock()
		defer runs.Unlock()
		if cacheApplied {
			addBlockCache(g, -r.BlockCacheBytes)
		}
		runs.goSum -= goLimit
		if runs.goSum <= 0 {
			runs.goSum = 0
			debug.SetMemoryLimit(runs.goOrig)
		} else {
			debug.SetMemoryLimit(min(runs.goSum, runs.goOrig))
		}
	}
}

// addBlockCache adds n bytes (negative to give them back) to the block
// cache's reservations and sets GDAL's maximum to their sum (GDAL's own
// with none left); runs is locked.
func addBlockCache(g GDAL, n int64) {
	if !runs.cacheKnown {
		runs.cacheOrig = g.BlockCacheMaxBytes()
		runs.cacheKnown = true
	}
	runs.cacheSum = max(runs.cacheSum+n, 0)
	v := runs.cacheSum
	if v == 0 {
		v = runs.cacheOrig
	}
	g.SetBlockCacheMaxBytes(v)
}

// MemoryWriteCacheMiB is GDAL's block cache, MiB, while pnec writes a cube
// it already holds in memory (pnec import): the cube is in memory once,
// and GDAL's default cache (5% of RAM) would otherwise hold most of the
// output as well.
const MemoryWriteCacheMiB = 32

// LimitCacheForMemoryWrite sets GDAL's block cache option (GDAL_CACHEMAX)
// to MemoryWriteCacheMiB before a cube held in memory is written. Callers
// leave it when the user chose GDAL_CACHEMAX.
func LimitCacheForMemoryWrite(g GDAL) {
	g.SetConfigValue("GDAL_CACHEMAX", strconv.Itoa(MemoryWriteCacheMiB))
}
