// Package resources is the one home of the settings pnec makes on its
// process for the machine's resources: GDAL's decoding threads
// (GDAL_NUM_THREADS), glibc's malloc (mmap threshold and arenas), the Go
// heap guard, the Go collector's GOGC, and per run the Go memory limit and
// GDAL's block cache. Policy (Decide) says what each is, from the
// environment and the run's backend; Start, GuardHeap, BackendOpening and
// Reserve apply it at the moments each setting needs; nothing else in pnec
// turns these knobs (TestOneHome). GDAL's two knobs are turned through the
// GDAL interface, which geo implements (geo stays the one package that
// links GDAL); the rest are the Go runtime's and the C library's, set here.
//
// The moments, and who calls them:
//
//   - Start: once per process, before GDAL reads anything. The command
//     calls it first thing in main, on the main thread (the arena cap must
//     come before other threads call C), and geo calls it before it opens
//     or creates its first dataset, so a library program gets it too (one
//     run under an address-space limit sets MALLOC_ARENA_MAX=2 itself,
//     which glibc reads at start).
//   - GuardHeap: once, before a command that runs the network reads
//     anything (cmd/pnec), and when the Go backend first opens.
//   - BackendOpening: when a backend opens (backend.Backend.Open), with
//     whether the network's buffers live on the Go heap.
//   - Reserve: at the start of each classify run (processor), given back
//     at its end.
//
// It imports nothing of pnec but its memory budget (resources/memory), so
// geo and model import it without cycles.
package resources

import (
	"os"
	"strconv"
	"strings"
)

// GoBackendGCPercent is the Go collector's GOGC the policy sets when the
// network's buffers live on the Go heap (the Go backend), unless GOGC is
// set in the environment or the program already chose a value other than
// Go's default of 100.
//
// Why: the Go backend's values are large buffers of numbers (no pointers),
// which a collection marks quickly, and the backend keeps freed buffers in
// pools (sync.Pool) that the collector counts as live. With GOGC=100 the
// heap may grow to twice that before the next collection. Lower settings
// bound the growth, but each collection also empties the pools a little
// (a pooled buffer survives one collection), so below about 20 a short
// inference starts to allocate its buffers anew and slows down. Measured
// with bench/cmd/netbench, cell encoder, GOGC 100 -> 20: Houston's size
// (349x1905x144) inference peak RSS 1.64 -> 1.37 GB (the branches in
// sequence, see model's encode) and training step 4.29 -> 3.46 GB, times
// within the runs' spread; at Pavia's size (610x340x103) inference 0.28 s
// at 20 and 100 alike, 0.38 s at 15 and 0.39 s at 10 (see docs/model.md,
// "Where the memory goes").
const GoBackendGCPercent = 20

// DecodeThreadsDefault is the GDAL_NUM_THREADS the policy sets when none
// is set: compressed blocks (DEFLATE, ZSTD, LZW ...) of GTiff sources are
// then decoded on every core (GDAL 3.6's GTiff driver does that for reads
// of several blocks). Measured on a 2048 x 2048 x 200 Int16 DEFLATE VRT on
// 2 shared cores: reading 4 tiles of 640 x 640 in Python's GDAL went from
// 40 to 53 M samples/s, and pnec classify --max-memory 2G from 69 s to 60
// s wall. A value the user set (environment, GDAL's configuration file or
// --config) wins.
const DecodeThreadsDefault = "ALL_CPUS"

// MMapThresholdBytes is glibc's mmap threshold the policy pins (its
// default, 128 KiB; pinning it also turns its dynamic growth off).
//
// Why: GDAL allocates its raster blocks, swath buffers and compression
// buffers (256 KiB and more for a 512x512 product tile) with malloc. glibc
// serves such sizes with mmap, but after the first of them is freed it
// raises its mmap threshold to that size, and from then on they come from
// the heap, whose freed pages are kept (and fragmented) rather than
// returned. The product writer's Commit (stage flush, overviews, COG copy)
// then leaves a process's peak RSS growing with the scene's height:
// measured with processor.BenchmarkClassifyHeightScaling (128 columns, 1k
// to 8k rows), peak RSS grew 27% without this and 7% with it. A fixed
// threshold keeps large blocks in mmap, returned to the OS on free. A
// user's own MALLOC_MMAP_THRESHOLD_ (glibc's tunable) is left as it is.
const MMapThresholdBytes = 128 << 10

// LimitedMallocArenas is how many malloc arenas a process under an
// address-space limit keeps.
//
// Why: under an address-space limit (ulimit -v, RLIMIT_AS) glibc reserves
// 64 MiB of address space for each arena, up to 8 per core, as threads
// contend (GDAL's decoding threads, GoMLX's workers); with 16 threads a
// small classify failed under ulimit -v 2000000 (a failed malloc in GDAL,
// a failed thread start) and ran with 2 arenas. A user's MALLOC_ARENA_MAX
// (or glibc.malloc.arena_max in GLIBC_TUNABLES) is left as it is. The cap
// is applied when the program is loaded (malloc.go's
// pnec_fit_address_space_at_load, the same rule in C), before the Go
// runtime's threads take arenas of their own; Start applies it again.
const LimitedMallocArenas = 2

// LimitedThreadStackBytes is the stack a thread started under an
// address-space limit reserves by default (where glibc's default, the
// stack limit, usually 8 MiB, is larger).
//
// Why: every thread's stack is reserved address space whether it is used
// or not, and pnec runs a thread for each of GDAL's decoding threads and
// each of the Go runtime's (GOMAXPROCS and more): 36 threads reserved 288
// MiB. With 2 MiB stacks a 16-thread classify ran under ulimit -v 1700000
// in 10 of 10 runs, 5 of 10 with 8 MiB. GDAL and its libraries run with
// less on other systems (512 KiB on macOS's secondary threads). Applied
// when the program is loaded (malloc.go), before the Go runtime starts its
// threads; a process without the limit keeps glibc's default.
const LimitedThreadStackBytes = 2 << 20

// heapGuardMaxBytes is the largest heap guard (see GuardHeap): the address
// space mapped past the Go heap's start when no address-space limit is set.
const heapGuardMaxBytes = 1 << 30

// heapGuardStepBytes is the Go runtime's heap growth step (one palloc chunk,
// 4 MiB): a guard is a whole number of steps.
const heapGuardStepBytes = 4 << 20

// HeapGuardEnv names the environment variable that sets the heap guard's
// size in bytes instead (0: none), for a site whose address-space limit
// leaves no room for one; without a guard the Go backend may fault as
// GuardHeap describes.
const HeapGuardEnv = "PNEC_HEAP_GUARD_BYTES"

// Facts are what the policy is decided from. readFacts reads them from this
// process; tests give them by hand.
type Facts struct {
	// Env looks an environment variable up (os.LookupEnv).
	Env func(key string) (string, bool)
	// GDALNumThreads is GDAL's GDAL_NUM_THREADS now ("" when unset):
	// from the environment, GDAL's configuration file or --config.
	GDALNumThreads string
	// AddressSpaceLimited says a soft RLIMIT_AS is set (not RLIM_INFINITY).
	AddressSpaceLimited bool
	// AddressSpaceLeftBytes is the address space the process may still
	// map under RLIMIT_AS, bytes; -1 without a limit.
	AddressSpaceLeftBytes int64
	// NetworkOnGoHeap says the network's buffers live on the Go heap
	// (backend.Backend.NetworkOnGoHeap: the Go backend).
	NetworkOnGoHeap bool
	// HugePagesOnRequest says the kernel backs memory with transparent
	// huge pages only where a program asks (madvise), the mode in
	// /sys/kernel/mm/transparent_hugepage/enabled.
	HugePagesOnRequest bool
	// MallocHugePagesTunable says the C library is glibc 2.35 or later
	// (which has the glibc.malloc.hugetlb tunable) and the process may
	// use tunables (not a set-user-ID start, where glibc ignores them).
	MallocHugePagesTunable bool
	// BuiltInGODEBUG is the GODEBUG default compiled into the program
	// (builtInGODEBUG: the go command's DefaultGODEBUG and a linker
	// -X runtime.godebugDefault=, as the build recorded them).
	BuiltInGODEBUG string
}

// Policy is every process setting pnec makes, as decided for Facts. A zero
// field leaves that setting as it is (the user's, or the library's own).
type Policy struct {
	// GDALNumThreads is the GDAL_NUM_THREADS to set.
	GDALNumThreads string
	// MMapThresholdBytes is glibc's mmap threshold to pin.
	MMapThresholdBytes int
	// MallocArenas caps glibc's malloc arenas.
	MallocArenas int
	// ThreadStackBytes is the largest default stack of new threads
	// (applied when the program is loaded: see LimitedThreadStackBytes).
	ThreadStackBytes int64
	// HeapGuardBytes is the Go heap guard to map (see GuardHeap).
	HeapGuardBytes int64
	// GCPercent is the Go collector's GOGC to set when the program has
	// not chosen one of its own (GOGC is still Go's default, 100).
	GCPercent int
	// GlibcTunables is the GLIBC_TUNABLES the command should run under
	// ("": as it is); glibc reads it only when a program starts, so the
	// command re-executes itself with it (ExecUnderStartSettings).
	GlibcTunables string
	// GODEBUG is the GODEBUG the command should run under ("": as it
	// is): GODEBUGDefault added to the user's, where neither the program's
	// built-in default nor the user sets its key. The runtime reads this
	// setting only when a program starts, so the command re-executes
	// itself with it (ExecUnderStartSettings).
	GODEBUG string
}

// Decide is the one place that decides pnec's process settings.
func Decide(f Facts) Policy {
	set := func(key string) bool {
		if f.Env == nil {
			return false
		}
		_, ok := f.Env(key)
		return ok
	}
	var p Policy
	if f.GDALNumThreads == "" {
		p.GDALNumThreads = DecodeThreadsDefault
	}
	if !set("MALLOC_MMAP_THRESHOLD_") {
		p.MMapThresholdBytes = MMapThresholdBytes
	}
	if !set("MALLOC_ARENA_MAX") && !tunableSet(f, "arena_max") && f.AddressSpaceLimited {
		p.MallocArenas = LimitedMallocArenas
	}
	if f.AddressSpaceLimited {
		p.ThreadStackBytes = LimitedThreadStackBytes
	}
	p.HeapGuardBytes = heapGuardSize(f.AddressSpaceLeftBytes)
	if f.Env != nil {
		if v, ok := f.Env(HeapGuardEnv); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				p.HeapGuardBytes = n
			}
		}
	}
	if f.NetworkOnGoHeap && !set("GOGC") {
		p.GCPercent = GoBackendGCPercent
	}
	p.GlibcTunables = hugePageTunables(f)
	p.GODEBUG = godebugToRunUnder(f)
	return p
}

// GODEBUGDefault is the runtime setting pnec runs under: the collector
// does not stop the program when a pointer-typed slot holds a value that
// points into the Go heap's unused memory (invalidptr=0). `make build`
// compiles it in (the Makefile's GODEBUG_DEFAULT, through
// -X runtime.godebugDefault); a binary built otherwise runs again with it
// (ExecUnderStartSettings). A GODEBUG of the user's that names invalidptr
// wins: GODEBUG=invalidptr=1 brings the check back to hunt a bug.
//
// Why (issue 46 item 17): godal stores pointer-typed fields into memory
// fresh from C.malloc on every call (its call context: the error message
// and the configuration options). Go's write barrier records the value
// each such store overwrites, wherever the slot is, and the collector
// checks it as a pointer (golang.org/issue/19928, open; the cgo
// documentation warns of it). glibc leaves a freed block's first word
// holding its free-list link, stored as the block's address shifted right
// by 12 bits (its "safe-linking"): the crash reported such a value
// (0x7fb438001, a block at 0x7fb438001xxx in a thread's malloc heap), "to
// unused region of span", from a write barrier under setMetadata. Since Go
// 1.26 the Go heap starts at a random address across 2^46 bytes, so such
// a value can fall inside it; in earlier releases the heap started at
// 0xc000000000, above every such value. Where the value lands in unused
// heap memory the default invalidptr=1 throws "found bad pointer in Go
// heap" and the run is lost; the value is overwritten by godal's store
// and never used, so with invalidptr=0 the collector only passes over it.
// TestGodalStoresIntoCGarbage (geo) reproduces the crash at will and
// shows this setting stops it.
const GODEBUGDefault = "invalidptr=0"

// godebugToRunUnder is the GODEBUG to run under for f ("": as it is).
func godebugToRunUnder(f Facts) string {
	key, _, _ := strings.Cut(GODEBUGDefault, "=")
	if f.Env == nil || godebugSets(f.BuiltInGODEBUG, key) {
		return ""
	}
	v, _ := f.Env("GODEBUG")
	if godebugSets(v, key) {
		return ""
	}
	if v == "" {
		return GODEBUGDefault
	}
	return v + "," + GODEBUGDefault
}

// godebugSets reports whether the GODEBUG list (key=value,...) sets key.
func godebugSets(list, key string) bool {
	for _, kv := range strings.Split(list, ",") {
		if k, _, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == key {
			return true
		}
	}
	return false
}

// MallocHugePagesTunable is the glibc tunable that makes malloc ask the
// kernel for transparent huge pages (madvise MADV_HUGEPAGE) for the large
// blocks it maps, and for its heaps.
//
// Why: GDAL decodes each compressed block of a GeoTIFF into a buffer of
// its own (std::vector, zeroed), freed after the block: 26 MB for a 256 x
// 256 pixel-interleaved tile of 200 Int16 bands, above the pinned mmap
// threshold (MMapThresholdBytes), so each is a fresh mapping whose pages
// fault in one 4 KiB page at a time. Profiled on a 1536 x 1536 crop of
// bench-big's scene (perf, 2 cores): the zeroing and its page faults were
// about 10% of the run's CPU, the faults in the kernel more than the
// zeroing. With huge pages, a fault maps 2 MiB. The same crop, the
// command with the defaults, 3 pairs alternated: 0.88x the wall time
// (28.5 s against 31.7 s) and 0.87x the CPU time, peak RSS the same
// (1398 MiB); BenchmarkClassifyHeightScaling's peak RSS grows with the
// scene's height as without it (8% from 1k to 8k rows, against 9%).
// Keeping the blocks instead (a larger mmap threshold, one arena, a high
// trim threshold) saved as much but let that growth reach 24%.
const MallocHugePagesTunable = "glibc.malloc.hugetlb=1"

// hugePageTunables is the GLIBC_TUNABLES to run under for f ("": none):
// the user's tunables with MallocHugePagesTunable added, where the kernel
// gives huge pages on request (with "always" it gives them anyway, with
// "never" not at all), glibc has the tunable, and the user has not set
// glibc.malloc.hugetlb (any value wins, 0 turns it off).
func hugePageTunables(f Facts) string {
	if !f.HugePagesOnRequest || !f.MallocHugePagesTunable || f.Env == nil || tunableSet(f, "glibc.malloc.hugetlb") {
		return ""
	}
	v, _ := f.Env("GLIBC_TUNABLES")
	if v == "" {
		return MallocHugePagesTunable
	}
	return v + ":" + MallocHugePagesTunable
}

// tunableSet reports whether the user's GLIBC_TUNABLES names the tunable
// name (glibc.malloc.arena_max caps arenas as MALLOC_ARENA_MAX does;
// glibc.malloc.hugetlb chooses huge pages): a setting of theirs wins.
func tunableSet(f Facts, name string) bool {
	if f.Env == nil {
		return false
	}
	v, ok := f.Env("GLIBC_TUNABLES")
	return ok && strings.Contains(v, name)
}

// heapGuardSize is the guard for leftBytes of address space still free
// under the limit (< 0: no limit): 1 GiB without a limit, which costs
// address space only; under one, a quarter of the address space the
// process has not used yet, so that threads, GDAL's and glibc's arenas
// still find room. A heap that could outgrow it would not fit under the
// limit anyway in most runs (a 2 GB limit leaves a few hundred MB for the
// heap).
func heapGuardSize(leftBytes int64) int64 {
	if leftBytes < 0 {
		return heapGuardMaxBytes
	}
	g := leftBytes / 4
	g -= g % heapGuardStepBytes
	return min(max(g, 0), heapGuardMaxBytes)
}

// lookupEnv is os.LookupEnv, the environment the policy reads.
var lookupEnv = os.LookupEnv
