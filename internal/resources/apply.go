package resources

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/pnec/pnec/internal/resources/memory"
)

// GDAL is the door to GDAL's own process-wide knobs. geo implements it
// (geo.Knobs), the one package that links GDAL; only this package turns them.
type GDAL interface {
	// ConfigValue is a configuration option's value ("" when unset).
	ConfigValue(key string) string
	// SetConfigValue sets a configuration option process-wide.
	SetConfigValue(key, value string)
	// BlockCacheMaxBytes is the block cache's maximum now.
	BlockCacheMaxBytes() int64
	// SetBlockCacheMaxBytes sets the block cache's maximum.
	SetBlockCacheMaxBytes(n int64)
}

// readFacts reads the policy's facts from this process; g nil leaves
// GDALNumThreads unknown ("").
func readFacts(g GDAL) Facts {
	f := Facts{Env: lookupEnv, AddressSpaceLeftBytes: addressSpaceLeft()}
	var rl syscall.Rlimit
	f.AddressSpaceLimited = syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != ^uint64(0)
	f.HugePagesOnRequest = transparentHugePagesMode(thpModeFile) == "madvise"
	f.MallocHugePagesTunable = mallocHugePagesTunable()
	f.BuiltInGODEBUG = builtInGODEBUG()
	if g != nil {
		f.GDALNumThreads = g.ConfigValue("GDAL_NUM_THREADS")
	}
	return f
}

// thpModeFile is where Linux says when it backs memory with transparent
// huge pages.
const thpModeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// transparentHugePagesMode is the mode the kernel's file at path selects
// (the bracketed word of "always [madvise] never"; "" where it cannot
// tell).
func transparentHugePagesMode(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(b)
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

// WantedTunables is the GLIBC_TUNABLES the policy asks this process to
// run under ("": as it is; Policy.GlibcTunables).
func WantedTunables() string { return Decide(readFacts(nil)).GlibcTunables }

// ExecUnderStartSettings executes the running program again, with the
// same arguments and environment plus the settings read only when a
// program starts that the policy asks for: GODEBUG (Policy.GODEBUG) for
// every command, and GLIBC_TUNABLES (Policy.GlibcTunables) where
// withTunables. It does not return where it did. Where the policy asks for
// none it returns nil at once; where the exec fails it returns why, and
// the command runs as it is. The command calls it first thing in main;
// the program it starts finds the settings made and goes on. The process
// keeps its PID, so a scheduler or a shell sees one process throughout.
func ExecUnderStartSettings(withTunables bool) error {
	p := Decide(readFacts(nil))
	set := map[string]string{}
	if withTunables && p.GlibcTunables != "" {
		set["GLIBC_TUNABLES"] = p.GlibcTunables
	}
	if p.GODEBUG != "" {
		set["GODEBUG"] = p.GODEBUG
	}
	if len(set) == 0 {
		return nil
	}
	environ := os.Environ()
	env := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); set[k] == "" {
			env = append(env, kv)
		}
	}
	var made []string
	for _, k := range []string{"GODEBUG", "GLIBC_TUNABLES"} {
		if v := set[k]; v != "" {
			env = append(env, k+"="+v)
			made = append(made, k+"="+v)
		}
	}
	// /proc/self/exe rather than os.Args[0] or a path: the same file even
	// where it was started through a relative path or has been replaced.
	if err := syscall.Exec("/proc/self/exe", os.Args, env); err != nil {
		return fmt.Errorf("executing pnec again under %s: %w", strings.Join(made, " "), err)
	}
	return nil
}

// builtInGODEBUG is the GODEBUG default compiled into this program as its
// build recorded it: the go command's DefaultGODEBUG and the value of a
// linker -X runtime.godebugDefault= (the Makefile's), joined by a comma.
func builtInGODEBUG() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var parts []string
	for _, s := range bi.Settings {
		switch s.Key {
		case "DefaultGODEBUG":
			parts = append(parts, s.Value)
		case "-ldflags":
			if v := godebugFromLDFlags(s.Value); v != "" {
				parts = append(parts, v)
			}
		}
	}
	return strings.Join(parts, ",")
}

// godebugFromLDFlags is the value a linker flag list gives
// runtime.godebugDefault (-X runtime.godebugDefault=V or
// -X=runtime.godebugDefault=V, V up to the next space, quotes taken off),
// "" where it gives none.
func godebugFromLDFlags(ldflags string) string {
	const sym = "runtime.godebugDefault="
	i := strings.LastIndex(ldflags, sym)
	if i < 0 {
		return ""
	}
	v := ldflags[i+len(sym):]
	if j := strings.IndexAny(v, " \t"); j >= 0 {
		v = v[:j]
	}
	return strings.Trim(v, `"'`)
}

var startOnce sync.Once

// Start applies the process-wide part of the policy once per process:
// GDAL's decoding threads and glibc's malloc settings. It must run before
// GDAL reads anything (the mmap threshold before the large blocks it is
// meant to keep in mmap, the arena cap before GDAL's and GoMLX's threads
// contend for malloc) and after GDAL's drivers are registered (which
// loads GDAL's configuration file, whose GDAL_NUM_THREADS wins): the
// command calls it first thing in main, on the main thread before any
// goroutine calls C (applied later, from the command's goroutine, the
// arena cap came too late: see docs/architecture.md, "Resources"), and geo
// before it opens or creates its first dataset. A --config given on the
// command line is applied after it, and wins. A nil g leaves GDAL alone.
func Start(g GDAL) {
	startOnce.Do(func() {
		p := Decide(readFacts(g))
		if p.GDALNumThreads != "" && g != nil {
			g.SetConfigValue("GDAL_NUM_THREADS", p.GDALNumThreads)
		}
		if p.MMapThresholdBytes > 0 {
			setMMapThreshold(p.MMapThresholdBytes)
		}
		if p.MallocArenas > 0 {
			capMallocArenas(p.MallocArenas)
		}
	})
}

var (
	heapGuardOnce  sync.Once
	heapGuardBytes int64
	heapGuardSink  []byte
)

// GuardHeap maps address space for the Go heap to grow into before the Go
// backend first runs, so that GoMLX's kernels cannot read past the end of
// the mapped heap. It is idempotent; opening the Go backend calls it too
// (BackendOpening), but a command should call it before it reads large
// data (see below). Its size is the policy's (Policy.HeapGuardBytes).
//
// Why: the Go 1.27 simd experiment's partial vector loads
// (archsimd.LoadFloat32x16Part, simd.LoadFloat32sPart) compile to a full
// 64-byte load followed by a masked move, not to a masked load, so GoMLX's
// Go-backend kernels read up to 60 bytes past the end of a buffer's last
// row. Inside the heap that is harmless; but GoMLX allocates every buffer
// with a size rounded to a power of two or 1.5 times one, so large buffers
// end on a page boundary, and one that ends where the mapped heap ends (a
// 4 MiB buffer the heap grew one 4 MiB step for, say) faults (SIGSEGV,
// "unexpected fault address": seen in two of three stopped runs of
// TestSignalStops). The over-read cannot be padded from outside GoMLX (its
// buffers are allocated inside the backend), so the heap's mapped end is
// moved out of reach: a block is allocated once and dropped, and the
// runtime keeps its address space mapped read-write (it only advises the
// kernel to drop the pages), so buffers no longer end at an unmapped page
// until the live heap outgrows the guard. model's
// TestHeapGuardKeepsBufferEndsReadable checks that the 64 bytes past
// page-exact buffers are mapped.
//
// When: made while the heap is still fresh from the OS (before a model or
// scene is read), the block needs no zeroing and never becomes resident;
// made later it reused freed pages that the runtime had to zero, and peak
// RSS jumped by up to 1 GiB at random, which broke --max-memory.
// FreeOSMemory hands its pages back so it does not count against a Go
// memory limit.
func GuardHeap() {
	heapGuardOnce.Do(func() {
		heapGuardBytes = Decide(readFacts(nil)).HeapGuardBytes
		if heapGuardBytes == 0 {
			return
		}
		heapGuardSink = make([]byte, heapGuardBytes)
		heapGuardSink = nil
		runtime.GC()
		debug.FreeOSMemory()
	})
}

// HeapGuardBytes is the size of the guard GuardHeap made (0 before it ran,
// or when the address-space limit left no room for one).
func HeapGuardBytes() int64 { return heapGuardBytes }

var gcOnce sync.Once

// BackendOpening applies what the policy sets when a backend opens:
// where the network's buffers live on the Go heap (networkOnGoHeap, the Go
// backend), the heap guard (GuardHeap) and, the first time, the
// collector's GOGC (Policy.GCPercent). Other backends change nothing.
func BackendOpening(networkOnGoHeap bool) {
	if !networkOnGoHeap {
		return
	}
	GuardHeap()
	gcOnce.Do(func() {
		f := readFacts(nil)
		f.NetworkOnGoHeap = true
		if pct := Decide(f).GCPercent; pct > 0 {
			// A program that chose its own GOGC keeps it.
			if prev := debug.SetGCPercent(pct); prev != 100 {
				debug.SetGCPercent(prev)
			}
		}
	})
}

// addressSpaceLeft is how much address space the process may still map
// under RLIMIT_AS (memory.AddressSpaceLeft, the one reader of the limit
// and of VmSize), or -1 without a limit.
func addressSpaceLeft() int64 {
	if left := memory.AddressSpaceLeft("/"); left > 0 {
		return left
	}
	return -1
}
