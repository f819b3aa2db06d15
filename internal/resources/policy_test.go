package resources

import (
	"os"
	"path/filepath"
	"testing"
)

// env is an environment for Facts.Env.
func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

// TestDecide: what the policy sets for given environments, address-space
// limits and backends, and what it leaves to the user.
func TestDecide(t *testing.T) {
	const gib = 1 << 30
	base := Policy{GDALNumThreads: "ALL_CPUS", MMapThresholdBytes: 128 << 10, HeapGuardBytes: gib}
	for _, tc := range []struct {
		name  string
		facts Facts
		want  Policy
	}{
		{"defaults, no limit, XLA backend", Facts{AddressSpaceLeftBytes: -1}, base},
		{"Go backend lowers GOGC", Facts{AddressSpaceLeftBytes: -1, NetworkOnGoHeap: true},
			Policy{GDALNumThreads: "ALL_CPUS", MMapThresholdBytes: 128 << 10, HeapGuardBytes: gib, GCPercent: 20}},
		{"Go backend, the user's GOGC wins", Facts{Env: env(map[string]string{"GOGC": "70"}), AddressSpaceLeftBytes: -1, NetworkOnGoHeap: true}, base},
		{"the user's GOGC=off wins too", Facts{Env: env(map[string]string{"GOGC": "off"}), AddressSpaceLeftBytes: -1, NetworkOnGoHeap: true}, base},
		{"the user's GDAL_NUM_THREADS wins", Facts{GDALNumThreads: "4", AddressSpaceLeftBytes: -1},
			Policy{MMapThresholdBytes: 128 << 10, HeapGuardBytes: gib}},
		{"the user's mmap threshold wins", Facts{Env: env(map[string]string{"MALLOC_MMAP_THRESHOLD_": "65536"}), AddressSpaceLeftBytes: -1},
			Policy{GDALNumThreads: "ALL_CPUS", HeapGuardBytes: gib}},
		{"address-space limit: 2 arenas, a quarter of what is left", Facts{AddressSpaceLimited: true, AddressSpaceLeftBytes: 800 << 20},
			Policy{GDALNumThreads: "ALL_CPUS", MMapThresholdBytes: 128 << 10, MallocArenas: 2, ThreadStackBytes: 2 << 20, HeapGuardBytes: 200 << 20}},
		{"address-space limit, the user's MALLOC_ARENA_MAX wins", Facts{Env: env(map[string]string{"MALLOC_ARENA_MAX": "8"}), AddressSpaceLimited: true, AddressSpaceLeftBytes: 800 << 20},
			Policy{GDALNumThreads: "ALL_CPUS", MMapThresholdBytes: 128 << 10, ThreadStackBytes: 2 << 20, HeapGuardBytes: 200 << 20}},
		{"address-space limit, the user's glibc tunable wins", Facts{Env: env(map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}), AddressSpaceLimited: true, AddressSpaceLeftBytes: 800 << 20},
			Policy{GDALNumThreads: "ALL_CPUS", MMapThresholdBytes: 128 << 10, ThreadStackBytes: 2 << 20, HeapGuardBytes: 200 << 20}},
		{"limit with nothing left: no guard", Facts{AddressSpaceLimited: true, AddressSpaceLeftBytes: 0},
			Policy{GDALNumThreads: "ALL_CPUS", MMapThresholdBytes: 128 << 10, MallocArenas: 2, ThreadStackBytes: 2 << 20}},
		{"PNEC_HEAP_GUARD_BYTES=0: no guard", Facts{Env: env(map[string]string{HeapGuardEnv: "0"}), AddressSpaceLeftBytes: -1},
			Policy{GDALNumThreads: "ALL_CPUS", MMapThresholdBytes: 128 << 10}},
		{"PNEC_HEAP_GUARD_BYTES sets the size", Facts{Env: env(map[string]string{HeapGuardEnv: "12345"}), AddressSpaceLeftBytes: -1},
			Policy{GDALNumThreads: "ALL_CPUS", MMapThresholdBytes: 128 << 10, HeapGuardBytes: 12345}},
		{"a PNEC_HEAP_GUARD_BYTES that is not a size is ignored", Facts{Env: env(map[string]string{HeapGuardEnv: "-5"}), AddressSpaceLeftBytes: -1}, base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.facts)
			got.GODEBUG = "" // TestGODEBUGToRunUnder's
			if got != tc.want {
				t.Errorf("Decide(%+v)\n got %+v\nwant %+v", tc.facts, got, tc.want)
			}
		})
	}
}

func TestHeapGuardSize(t *testing.T) {
	for _, tc := range []struct {
		left, want int64
	}{
		{-1, heapGuardMaxBytes},            // no limit
		{0, 0},                             // nothing left
		{15 << 20, 0},                      // a quarter is under one step
		{800 << 20, 200 << 20},             // a quarter, whole steps
		{801 << 20, 200 << 20},             // rounded down
		{100 << 30, heapGuardMaxBytes},     // capped
		{4*heapGuardMaxBytes + 1, 1 << 30}, // capped exactly
	} {
		if got := heapGuardSize(tc.left); got != tc.want {
			t.Errorf("heapGuardSize(%d) = %d, want %d", tc.left, got, tc.want)
		}
	}
}

// TestRunGoLimit: the Go memory limit a run adds, for budgets and backends:
// the budget less what lies outside the Go heap, the network's buffers
// counted outside it except on the Go backend, and at least 1 MiB.
func TestRunGoLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name string
		run  Run
		want int64
	}{
		{"Go backend: the network is on the heap", Run{BudgetBytes: 2048 * mib, OffHeapBytes: 600 * mib, NetworkBytes: 500 * mib, NetworkOnGoHeap: true}, 1448 * mib},
		{"XLA backend: the network is not", Run{BudgetBytes: 2048 * mib, OffHeapBytes: 600 * mib, NetworkBytes: 500 * mib}, 948 * mib},
		{"a budget its other parts fill", Run{BudgetBytes: 512 * mib, OffHeapBytes: 600 * mib, NetworkOnGoHeap: true}, mib},
		{"the network alone fills it off the heap", Run{BudgetBytes: 512 * mib, NetworkBytes: 512 * mib}, mib},
		{"nothing but the budget", Run{BudgetBytes: 1 << 30}, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run.GoLimitBytes(); got != tc.want {
				t.Errorf("%+v: Go limit %d MiB, want %d MiB", tc.run, got/mib, tc.want/mib)
			}
		})
	}
}

// TestHugePageTunables: pnec asks glibc for huge pages where the kernel
// gives them on request and glibc has the tunable, adding it to the
// user's tunables; a hugetlb setting of the user's (0 turns it off) wins.
func TestHugePageTunables(t *testing.T) {
	for _, tc := range []struct {
		name               string
		onRequest, tunable bool
		env                map[string]string
		want               string
	}{
		{"madvise mode, glibc 2.35+", true, true, map[string]string{}, "glibc.malloc.hugetlb=1"},
		{"the user's other tunables kept", true, true, map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}, "glibc.malloc.arena_max=4:glibc.malloc.hugetlb=1"},
		{"the user's hugetlb=0 wins", true, true, map[string]string{"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}, ""},
		{"already set: no second exec", true, true, map[string]string{"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, ""},
		{"kernel mode always or never", false, true, map[string]string{}, ""},
		{"older glibc, or a set-user-ID start", true, false, map[string]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Facts{Env: env(tc.env), AddressSpaceLeftBytes: -1, HugePagesOnRequest: tc.onRequest, MallocHugePagesTunable: tc.tunable}
			if got := Decide(f).GlibcTunables; got != tc.want {
				t.Errorf("GlibcTunables = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGODEBUGToRunUnder: a program without GODEBUGDefault compiled in runs
// under it, added to the user's GODEBUG; one with it compiled in, or a
// user who sets invalidptr (either way), runs as it is.
func TestGODEBUGToRunUnder(t *testing.T) {
	for _, tc := range []struct {
		name, builtIn string
		env           map[string]string
		want          string
	}{
		{"plain build", "", map[string]string{}, "invalidptr=0"},
		{"plain build, GODEBUG set empty", "", map[string]string{"GODEBUG": ""}, "invalidptr=0"},
		{"the user's other settings kept", "", map[string]string{"GODEBUG": "gctrace=1,madvdontneed=1"}, "gctrace=1,madvdontneed=1,invalidptr=0"},
		{"the user's invalidptr=1 wins", "", map[string]string{"GODEBUG": "gctrace=1, invalidptr=1"}, ""},
		{"already set: no second exec", "", map[string]string{"GODEBUG": "invalidptr=0"}, ""},
		{"compiled in by make build", "invalidptr=0", map[string]string{}, ""},
		{"compiled in beside the go command's defaults", "panicnil=1,invalidptr=0", map[string]string{"GODEBUG": "gctrace=1"}, ""},
		{"a default without it", "panicnil=1", map[string]string{}, "invalidptr=0"},
		{"a key that only ends like it", "", map[string]string{"GODEBUG": "xinvalidptr=1"}, "xinvalidptr=1,invalidptr=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Facts{Env: env(tc.env), AddressSpaceLeftBytes: -1, BuiltInGODEBUG: tc.builtIn}
			if got := Decide(f).GODEBUG; got != tc.want {
				t.Errorf("GODEBUG = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGODEBUGFromLDFlags reads the value a linker flag list gives
// runtime.godebugDefault, as the go command records the flags.
func TestGODEBUGFromLDFlags(t *testing.T) {
	for _, tc := range []struct{ ldflags, want string }{
		{"-X github.com/pnec/pnec/version.String=v1 -X runtime.godebugDefault=invalidptr=0", "invalidptr=0"},
		{"-X=runtime.godebugDefault=invalidptr=0,panicnil=1 -s -w", "invalidptr=0,panicnil=1"},
		{`-X "runtime.godebugDefault=invalidptr=0"`, "invalidptr=0"},
		{"-s -w -X github.com/pnec/pnec/version.String=v1", ""},
		{"", ""},
	} {
		if got := godebugFromLDFlags(tc.ldflags); got != tc.want {
			t.Errorf("godebugFromLDFlags(%q) = %q, want %q", tc.ldflags, got, tc.want)
		}
	}
}

// TestTransparentHugePagesMode reads the kernel's mode file.
func TestTransparentHugePagesMode(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ content, want string }{
		{"always [madvise] never\n", "madvise"},
		{"[always] madvise never\n", "always"},
		{"always madvise [never]\n", "never"},
		{"garbage\n", ""},
	} {
		p := filepath.Join(dir, "enabled")
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := transparentHugePagesMode(p); got != tc.want {
			t.Errorf("%q: mode %q, want %q", tc.content, got, tc.want)
		}
	}
	if got := transparentHugePagesMode(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing file: mode %q, want none", got)
	}
}
