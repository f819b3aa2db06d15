//go:build !cgo

package resources

// Without cgo there is no C library's malloc to set (pnec's GDAL layer
// needs cgo; a pure-Go build of this package only reads the policy).

func setMMapThreshold(int) bool { return false }

func capMallocArenas(int) bool { return false }

func earlyArenaCap() int { return 0 }

func mallocHugePagesTunable() bool { return false }

func defaultThreadStackBytes() int64 { return 0 }

const (
	limitedArenasInC     = LimitedMallocArenas
	limitedStackBytesInC = LimitedThreadStackBytes
)

func touchMalloc() {}

func mallocArenas() int { return -1 }

func bigBlock(int) (uintptr, func()) { return 0, func() {} }
