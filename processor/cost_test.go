package processor

import (
	"runtime/debug"
	"testing"

	"github.com/pnec/pnec/geo"
)

// TestReserveMemory: concurrent runs' Go memory limits add up, and the
// process's limit goes back to what it was when the last run ends.
func TestReserveMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	a := reserveMemory(1<<30, 0)
	if got := debug.SetMemoryLimit(-1); got != min(int64(1<<30), before) {
		t.Errorf("limit %d with one run of 1 GiB", got)
	}
	b := reserveMemory(1<<29, 0)
	if got := debug.SetMemoryLimit(-1); got != min(int64(3<<29), before) {
		t.Errorf("limit %d with runs of 1 GiB and 512 MiB", got)
	}
	a()
	if got := debug.SetMemoryLimit(-1); got != min(int64(1<<29), before) {
		t.Errorf("limit %d after the 1 GiB run ended", got)
	}
	b()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d after both ended, want the original %d", got, before)
	}
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
