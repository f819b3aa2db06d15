package geo

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

// pnec_fix_mmap_threshold pins glibc's mmap threshold at its default
// (128 KiB), which also turns off its dynamic growth; 0 where the C
// library is not glibc or the call fails.
static int pnec_fix_mmap_threshold(void) {
#ifdef __GLIBC__
	return mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#else
	return 0;
#endif
}

// pnec_cap_arenas limits glibc to n malloc arenas; 0 where the C library
// is not glibc or the call fails.
static int pnec_cap_arenas(int n) {
#ifdef __GLIBC__
	return mallopt(M_ARENA_MAX, n);
#else
	return 0;
#endif
}
*/
import "C"

import (
	"os"
	"syscall"
)

// limitedArenas is how many malloc arenas a process under an address-space
// limit keeps (see init).
const limitedArenas = 2

// GDAL allocates its raster blocks, swath buffers and compression buffers
// (256 KiB and more for a 512x512 product tile) with malloc. glibc serves
// such sizes with mmap, but after the first of them is freed it raises its
// mmap threshold to that size, and from then on they come from the heap,
// whose freed pages are kept (and fragmented) rather than returned. The
// product writer's Commit (stage flush, overviews, COG copy) then leaves a
// process's peak RSS growing with the scene's height: measured with
// processor.BenchmarkClassifyHeightScaling (128 columns, 1k to 8k rows),
// peak RSS grew 27% without this and 7% with it. A fixed threshold keeps
// large blocks in mmap, returned to the OS on free. A user's own
// MALLOC_MMAP_THRESHOLD_ (glibc's tunable) is left as it is.
//
// Under an address-space limit (ulimit -v, RLIMIT_AS) the number of malloc
// arenas is capped too: glibc reserves 64 MiB of address space for each,
// up to 8 per core, as threads contend (GDAL's decoding threads, GoMLX's
// workers); with 16 threads a small classify failed under ulimit -v
// 2000000 (a failed malloc in GDAL, a failed thread start) and ran with 2
// arenas. A user's MALLOC_ARENA_MAX is left as it is.
func init() {
	if _, ok := os.LookupEnv("MALLOC_MMAP_THRESHOLD_"); !ok {
		C.pnec_fix_mmap_threshold()
	}
	var rl syscall.Rlimit
	if _, ok := os.LookupEnv("MALLOC_ARENA_MAX"); !ok && syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != ^uint64(0) {
		C.pnec_cap_arenas(limitedArenas)
	}
}
