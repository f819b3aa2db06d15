package geo_test

import (
	"strings"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/fixture"
	_ "github.com/pnec/pnec/sensors" // AVIRIS-3's reader, through geo.Open
)

// TestCubeChunkBound: a cube array whose chunks decode
// to more than the bound is refused at open, naming it and the chunk's
// shape: a NetCDF declaring one 1 GiB chunk a band held pnec info for
// over a minute at 2.1 GB and passed --max-memory. The bound is lowered
// under the fixture's (nb x 16 x 16 Float32) chunks here; at the default
// the fixture reads.
func TestCubeChunkBound(t *testing.T) {
	d, err := fixture.WriteAVIRIS3NC(t.TempDir(), fixture.AVIRIS3Options{Seed: 1})
	fixture.SkipWithoutPython(t, err)
	s, err := geo.Open(d.Path)
	if err != nil {
		t.Fatalf("at the default bound: %v", err)
	}
	s.Close()
	restore := geo.SetMaxChunkBytes(64 << 10)
	defer restore()
	s, err = geo.Open(d.Path)
	if err == nil {
		s.Close()
		t.Fatal("a chunk above the bound was opened")
	}
	if msg := err.Error(); !strings.Contains(msg, "/reflectance/reflectance is stored in chunks of") || !strings.Contains(msg, "x 16 x 16 values") {
		t.Errorf("got %q, want the array and its chunk's shape named", msg)
	}
}
