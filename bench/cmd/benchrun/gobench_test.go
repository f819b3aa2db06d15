package main

import (
	"slices"
	"testing"
)

// TestSlowPackagesLast: model's benchmarks run after every other package,
// the others in their order.
func TestSlowPackagesLast(t *testing.T) {
	in := []string{"github.com/pnec/pnec/geo", "github.com/pnec/pnec/model", "github.com/pnec/pnec/processor", "github.com/pnec/pnec/tiling"}
	want := []string{"github.com/pnec/pnec/geo", "github.com/pnec/pnec/processor", "github.com/pnec/pnec/tiling", "github.com/pnec/pnec/model"}
	if got := slowPackagesLast(in); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if in[1] != "github.com/pnec/pnec/model" {
		t.Error("slowPackagesLast changed its input")
	}
}
