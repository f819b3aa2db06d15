package backend_test

import (
	"fmt"

	"github.com/pnec/pnec/model/backend"
)

// ExampleProbe shows how a program checks a backend before use.
func ExampleProbe() {
	info, err := backend.Probe("go")
	if err != nil {
		fmt.Println("go backend failed:", err)
		return
	}
	fmt.Println(info.Label, info.SmokeOK)
	// Output: go true
}
