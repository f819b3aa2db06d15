// Package cgogarbage leaves chosen values in memory that C's malloc is
// about to hand out again, for tests of Go code that stores pointer values
// into memory it got from C.malloc.
//
// Why: Go's write barrier records the value a pointer store overwrites,
// wherever the slot is, and the collector checks that value as a pointer
// (golang.org/issue/19928, the cgo documentation's note on uninitialized C
// memory). godal does such stores into fresh C.malloc blocks on every call;
// whatever the block held before (glibc's own free-list words, or an
// address a C library left there) is then checked as if Go had stored it,
// and a value that falls in the Go heap's unused memory stops the process
// with "found bad pointer in Go heap". geo's TestGodalStoresIntoCGarbage
// uses Leave to make that happen on purpose.
package cgogarbage

/*
#include <stdint.h>
#include <stdlib.h>

// leave mallocs n blocks of size bytes, fills every word of each with v
// through volatile stores (a compiler may drop plain stores to memory that
// is freed next), and frees them, the first allocated last.
static void leave(uintptr_t v, size_t size, int n) {
	void *blocks[64];
	if (n > 64) {
		n = 64;
	}
	for (int i = 0; i < n; i++) {
		blocks[i] = malloc(size);
		volatile uintptr_t *w = blocks[i];
		for (size_t j = 0; blocks[i] != NULL && j < size / sizeof(uintptr_t); j++) {
			w[j] = v;
		}
	}
	for (int i = n - 1; i >= 0; i--) {
		free(blocks[i]);
	}
}
*/
import "C"

// MaxBlocks is the most blocks Leave frees in one call.
const MaxBlocks = 64

// Leave frees n blocks (at most MaxBlocks) of sizeBytes each, every word of
// which held v. glibc hands freed blocks of one size back to the next
// mallocs of that size on the same thread, the last freed first, with
// every word but the first two (its free-list link and a key) as they
// were; so the caller locks its goroutine to its thread
// (runtime.LockOSThread) and then runs the code under test.
func Leave(v uintptr, sizeBytes, n int) {
	C.leave(C.uintptr_t(v), C.size_t(sizeBytes), C.int(n))
}
