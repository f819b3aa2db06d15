//go:build cgo

package resources

/*
#define _GNU_SOURCE // pthread_getattr_default_np, pthread_setattr_default_np
#include <pthread.h>
#include <stdlib.h> // defines __GLIBC__ where the C library is glibc
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#include <malloc.h>
#endif

enum { PNEC_MMAP_THRESHOLD, PNEC_ARENA_MAX };

// PNEC_LIMITED_ARENAS is LimitedMallocArenas and PNEC_LIMITED_STACK_BYTES
// LimitedThreadStackBytes (TestEarlyArenaCap checks that they agree).
enum { PNEC_LIMITED_ARENAS = 2, PNEC_LIMITED_STACK_BYTES = 2 << 20 };

// pnec_mallopt sets glibc's mmap threshold (pinning it also turns off its
// dynamic growth) or its arena cap to value; 0 where the C library is not
// glibc or the call fails.
static int pnec_mallopt(int what, int value) {
#ifdef __GLIBC__
	return mallopt(what == PNEC_MMAP_THRESHOLD ? M_MMAP_THRESHOLD : M_ARENA_MAX, value);
#else
	return 0;
#endif
}

// pnec_early_arena_cap is the arena cap pnec_fit_address_space_at_load
// applied (0: none).
static int pnec_early_arena_cap;

// pnec_fit_address_space_at_load applies Decide's rules for a process
// under an address-space limit when the program is loaded, before the Go
// runtime starts its threads: glibc's arena cap (LimitedMallocArenas,
// unless the user set MALLOC_ARENA_MAX or glibc's arena_max tunable) and
// the default stack of new threads (LimitedThreadStackBytes where it is
// larger). Why so early: each thread's first free() sets up its malloc
// cache and with it an arena, and glibc never retires one; and the Go
// runtime's threads take the default stack when they start. Applied from
// main, the arena cap came after the runtime's first threads had made five
// arenas (320 MiB of address space), and a 16-thread classify under
// ulimit -v 2000000 failed to start a thread in 2 of 10 runs here (once in
// a clean-clone CI run).
__attribute__((constructor)) static void pnec_fit_address_space_at_load(void) {
#ifdef __GLIBC__
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
		return;
	}
	const char *tunables = getenv("GLIBC_TUNABLES");
	if (getenv("MALLOC_ARENA_MAX") == NULL && (tunables == NULL || strstr(tunables, "arena_max") == NULL) &&
	    mallopt(M_ARENA_MAX, PNEC_LIMITED_ARENAS) == 1) {
		pnec_early_arena_cap = PNEC_LIMITED_ARENAS;
	}
	pthread_attr_t attr;
	size_t size = 0;
	if (pthread_getattr_default_np(&attr) != 0) {
		return;
	}
	if (pthread_attr_getstacksize(&attr, &size) == 0 && size > PNEC_LIMITED_STACK_BYTES &&
	    pthread_attr_setstacksize(&attr, PNEC_LIMITED_STACK_BYTES) == 0) {
		pthread_setattr_default_np(&attr);
	}
	pthread_attr_destroy(&attr);
#endif
}

static int pnec_early_arena_cap_value(void) { return pnec_early_arena_cap; }

// pnec_hugetlb_tunable says the running C library is glibc 2.35 or later
// (glibc.malloc.hugetlb) and reads tunables: not in a set-user-ID or
// set-group-ID start (AT_SECURE), where it ignores most of them.
static int pnec_hugetlb_tunable(void) {
#ifdef __GLIBC__
	if (getauxval(AT_SECURE) != 0) {
		return 0;
	}
	int major = 0, minor = 0;
	if (sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) != 2) {
		return 0;
	}
	return major > 2 || (major == 2 && minor >= 35);
#else
	return 0;
#endif
}

// pnec_default_stack_bytes is the stack new threads get by default (0
// where it cannot tell).
static long pnec_default_stack_bytes(void) {
#ifdef __GLIBC__
	pthread_attr_t attr;
	size_t size = 0;
	if (pthread_getattr_default_np(&attr) != 0) {
		return 0;
	}
	pthread_attr_getstacksize(&attr, &size);
	pthread_attr_destroy(&attr);
	return (long)size;
#else
	return 0;
#endif
}

// pnec_big_block allocates n bytes with malloc and writes each page, for
// TestExecUnderStartSettings (0 where malloc fails).
static void *pnec_big_block(size_t n) {
	char *p = malloc(n);
	if (p != NULL) {
		for (size_t i = 0; i < n; i += 4096) {
			p[i] = 1;
		}
	}
	return p;
}

// pnec_touch_malloc makes the calling thread use malloc (and so take an
// arena) for TestEarlyArenaCap.
static void pnec_touch_malloc(void) { free(malloc(64)); }

// pnec_malloc_arenas counts glibc's arenas (malloc_info's heaps; -1 where
// it cannot tell).
static int pnec_malloc_arenas(void) {
#ifdef __GLIBC__
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) {
		return -1;
	}
	if (malloc_info(0, f) != 0) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	int n = 0;
	for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) {
		n++;
	}
	free(buf);
	return n;
#else
	return -1;
#endif
}
*/
import "C"

// setMMapThreshold pins glibc's mmap threshold (Policy.MMapThresholdBytes);
// false where the C library is not glibc or refused.
func setMMapThreshold(bytes int) bool {
	return C.pnec_mallopt(C.PNEC_MMAP_THRESHOLD, C.int(bytes)) == 1
}

// capMallocArenas caps glibc's malloc arenas (Policy.MallocArenas); false
// where the C library is not glibc or refused.
func capMallocArenas(n int) bool { return C.pnec_mallopt(C.PNEC_ARENA_MAX, C.int(n)) == 1 }

// mallocHugePagesTunable says glibc's glibc.malloc.hugetlb tunable can
// be used by this process (Facts.MallocHugePagesTunable).
func mallocHugePagesTunable() bool { return C.pnec_hugetlb_tunable() == 1 }

// earlyArenaCap is the arena cap applied when the program was loaded (0:
// none; see pnec_fit_address_space_at_load).
func earlyArenaCap() int { return int(C.pnec_early_arena_cap_value()) }

// bigBlock allocates n bytes with the C library's malloc and touches its
// pages; the block's address and a function that frees it.
func bigBlock(n int) (uintptr, func()) {
	p := C.pnec_big_block(C.size_t(n))
	return uintptr(p), func() { C.free(p) }
}

// touchMalloc makes the calling OS thread use glibc's malloc.
func touchMalloc() { C.pnec_touch_malloc() }

// mallocArenas counts glibc's malloc arenas (-1 where it cannot tell).
func mallocArenas() int { return int(C.pnec_malloc_arenas()) }

// defaultThreadStackBytes is the stack a new thread gets by default (0
// where the C library cannot tell).
func defaultThreadStackBytes() int64 { return int64(C.pnec_default_stack_bytes()) }

// limitedArenasInC and limitedStackBytesInC are what the load-time rules
// apply.
const (
	limitedArenasInC     = int(C.PNEC_LIMITED_ARENAS)
	limitedStackBytesInC = int64(C.PNEC_LIMITED_STACK_BYTES)
)
