//go:build cgo

package resources

/*
#include <stdlib.h> // defines __GLIBC__ where the C library is glibc
#ifdef __GLIBC__
#include <malloc.h>
#endif

// pnec_set_mmap_threshold pins glibc's mmap threshold at n bytes, which
// also turns off its dynamic growth; 0 where the C library is not glibc or
// the call fails.
static int pnec_set_mmap_threshold(int n) {
#ifdef __GLIBC__
	return mallopt(M_MMAP_THRESHOLD, n);
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

// setMMapThreshold pins glibc's mmap threshold (Policy.MMapThresholdBytes);
// false where the C library is not glibc or refused.
func setMMapThreshold(bytes int) bool { return C.pnec_set_mmap_threshold(C.int(bytes)) == 1 }

// capMallocArenas caps glibc's malloc arenas (Policy.MallocArenas); false
// where the C library is not glibc or refused.
func capMallocArenas(n int) bool { return C.pnec_cap_arenas(C.int(n)) == 1 }
