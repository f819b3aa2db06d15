package stac

import (
	"encoding/json"
	"testing"

	"github.com/pnec/pnec/internal/golden"
)

// TestItemGolden: the STAC Item of a fixed scene and product is exactly
// testdata/item.golden.json, so that any change to what users' catalogues
// receive shows in review. Regenerate with `go test ./stac -run
// TestItemGolden -update` after a deliberate change.
func TestItemGolden(t *testing.T) {
	item, err := BuildItem(sampleParams("/products"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(item, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden.Check(t, "item.golden.json", got)
}
