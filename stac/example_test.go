package stac_test

import (
	"fmt"

	"github.com/pnec/pnec/stac"
)

// A model's STAC Item lies beside the model file, and its mlm:name is made
// from the file name so that it always passes MLM's pattern.
func ExampleModelName() {
	for _, p := range []string{"/models/salinas.pnec", "/models/2024_model.pnec", "m.pnec"} {
		fmt.Println(stac.ModelItemPath(p), stac.ModelName(p))
	}
	// Output:
	// /models/salinas.pnec.json salinas
	// /models/2024_model.pnec.json pnec-2024_model
	// m.pnec.json pnec-m
}

// Items name local files relative to themselves when the files lie under
// the catalog's root, so that the tree can be moved or served as it is;
// elsewhere by their absolute path, and URLs as they are.
func ExamplePortableHref() {
	root, itemDir := "/catalog", "/catalog/2024"
	for _, target := range []string{"/catalog/2024/a.tif", "/catalog/collection.json", "/elsewhere/b.tif", "https://example.com/c.tif"} {
		fmt.Println(stac.PortableHref(target, root, itemDir))
	}
	// Output:
	// a.tif
	// ../collection.json
	// /elsewhere/b.tif
	// https://example.com/c.tif
}
