package processor

import (
	"runtime/debug"
	"testing"

	"github.com/pnec/pnec/geo"
	"github.com/pnec/pnec/internal/resources"
)

// TestReserveMemory: concurrent runs' Go memory limits and GDAL block
// caches add up (in real GDAL), and both go back to what they were when the
// last run ends.
func TestReserveMemory(t *testing.T) {
	g := geo.Knobs{}
	cacheSet := g.ConfigValue("GDAL_CACHEMAX") != "" // the user's wins: left alone
	before, cacheBefore := debug.SetMemoryLimit(-1), g.BlockCacheMaxBytes()
	check := func(when string, limit, cache int64) {
		t.Helper()
		if got := debug.SetMemoryLimit(-1); got != limit {
			t.Errorf("Go memory limit %d %s, want %d", got, when, limit)
		}
		if cacheSet {
			cache = cacheBefore
		}
		if got := g.BlockCacheMaxBytes(); got != cache {
			t.Errorf("block cache %d %s, want %d", got, when, cache)
		}
	}
	a := resources.Reserve(g, resources.Run{BudgetBytes: 1 << 30, BlockCacheBytes: 64 << 20})
	check("with one run of 1 GiB", min(int64(1<<30), before), 64<<20)
	b := resources.Reserve(g, resources.Run{BudgetBytes: 1 << 29, BlockCacheBytes: 32 << 20})
	check("with runs of 1 GiB and 512 MiB", min(int64(3<<29), before), 96<<20)
	a()
	check("after the 1 GiB run ended", min(int64(1<<29), before), 32<<20)
	b()
	check("after both ended", before, cacheBefore)
}

// TestPlannedBytesGrowsWithWidthNotHeight: the canvas stripe spans the
// width; the height only adds tile rows.
func TestPlannedBytesGrowsWithWidthNotHeight(t *testing.T) {
	plan := func(rows, cols int) int64 {
		info := geo.Info{Rows: rows, Cols: cols, Bands: 200, SampleBytes: 2, BlockCols: 256, BlockRows: 256}
		p, _, err := PlanSceneInfo(info, nil, Options{TileSize: 512, MaxMemoryBytes: 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		return PlannedBytes(p, info, nil, Options{TileSize: 512})
	}
	if a, b := plan(2048, 1024), plan(20480, 1024); a != b {
		t.Errorf("planned %d for 2048 rows, %d for 20480 rows: want the same", a, b)
	}
	if a, b := plan(2048, 1024), plan(2048, 8192); b <= a {
		t.Errorf("planned %d for 1024 columns, %d for 8192: want more for the wider scene", a, b)
	}
}

// TestWaitingOutputsCounted: the finished tiles that may wait for the
// stitcher (StitchAhead) count at their exact size when a scene has
// several tiles, and a one-tile plan counts none.
func TestWaitingOutputsCounted(t *testing.T) {
	perTile := func(tr, tc int) float64 { return 4 * float64(tr*tc) * (genericClasses + 2) }
	for _, tc := range []struct {
		name       string
		rows, cols int
		tr, tc     int
		want       float64
	}{
		{"one tile", 300, 300, 300, 300, 0},
		{"one padded tile", 300, 300, 320, 320, 0},
		{"tiles", 2000, 2000, 384, 384, StitchAhead * perTile(384, 384)},
		{"a row of tiles", 300, 2000, 300, 384, StitchAhead * perTile(300, 384)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := geo.Info{Rows: tc.rows, Cols: tc.cols, Bands: 50, SampleBytes: 2, BlockCols: 256, BlockRows: 256}
			c := newSceneCost(info, nil, Options{})
			if got := c.waitingBytes(tc.tr, tc.tc); got != tc.want {
				t.Errorf("waiting outputs of %dx%d tiles on %dx%d: %.0f bytes, want %.0f", tc.tr, tc.tc, tc.rows, tc.cols, got, tc.want)
			}
		})
	}
}
