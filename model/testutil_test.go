package model

import (
	"os"
	"testing"

	"github.com/gomlx/compute"
	"github.com/pnec/pnec/model/backend"
)

// testBackend opens the pure-Go backend for a test.
func testBackend(t testing.TB) compute.Backend {
	t.Helper()
	name := "go"
	if c := os.Getenv("PNEC_TEST_BACKEND"); c != "" { // e.g. "go:parallelism=-1" to compare configurations
		name = c
	}
	b, _, err := backend.OpenName(name)
	if err != nil {
		t.Fatalf("open go backend: %v", err)
	}
	t.Cleanup(b.Finalize)
	return b
}
