//go:build cgo

package resources

/*
#include <stdlib.h> // defines __GLIBC__ where the C library is glibc
#ifdef __GLIBC__
#include <malloc.h>
#endif

enum { PNEC_MMAP_THRESHOLD, PNEC_ARENA_MAX };

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
