package pipelines

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")

// TestItemGolden: the STAC Item of a fixed scene and product is exactly
// testdata/item.golden.json, so that any change to what users' catalogues
// receive shows in review. Regenerate with `go test ./pipelines -run
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
	golden := filepath.Join("testdata", "item.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the Item differs from %s (rerun with -update if the change is meant):\n%s", golden, got)
	}
}
