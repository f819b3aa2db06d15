package processor

import (
	"fmt"
	"path/filepath"
	"testing"
)

func TestDiagAgreement(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	classify(t, f, Options{}, filepath.Join(dir, "w.tif"))
	whole := readProduct(t, filepath.Join(dir, "w.tif"))
	for _, tc := range []struct{ tile, overlap int }{{96, 0}, {128, 0}, {128, 48}, {176, 0}, {200, 64}} {
		out := filepath.Join(dir, fmt.Sprintf("t%d_%d.tif", tc.tile, tc.overlap))
		res := classify(t, f, Options{TileSize: tc.tile, Overlap: tc.overlap}, out)
		got := readProduct(t, out)
		var n, agree int
		hist := map[int][2]int{}
		for i := range got.class {
			if !f.valid[i] {
				continue
			}
			n++
			b := int(whole.rel[i]) / 10
			h := hist[b]
			h[0]++
			if got.class[i] == whole.class[i] {
				agree++
			} else {
				h[1]++
			}
			hist[b] = h
		}
		t.Logf("%s: agreement %.4f; by whole-run reliability decile (n, disagree): %v", res.Plan, float64(agree)/float64(n), hist)
	}
}
