package model

import (
	"testing"

	"github.com/gomlx/compute"
)

// testBackend opens the pure-Go backend for a test.
func testBackend(t testing.TB) compute.Backend {
	t.Helper()
	b, _, err := openBackend("go")
	if err != nil {
		t.Fatalf("open go backend: %v", err)
	}
	t.Cleanup(b.Finalize)
	return b
}
