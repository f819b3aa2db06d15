package tiling

import (
	"errors"
	"strings"
	"testing"
)

func TestRung(t *testing.T) {
	for _, tc := range []struct{ n, step, want int }{
		{83, 64, 128},
		{128, 64, 128},
		{129, 64, 192},
		{349, 64, 384},
		{610, 64, 640},
		{83, 0, 83}, // no ladder
	} {
		if got := Rung(tc.n, tc.step); got != tc.want {
			t.Errorf("Rung(%d, %d) = %d, want %d", tc.n, tc.step, got, tc.want)
		}
	}
}

// TestLadderSharesShapes: whole scenes of every size up to the tile run on
// at most (tile/step)^2 input shapes, each side within one step of the
// scene's.
func TestLadderSharesShapes(t *testing.T) {
	shapes := map[[2]int]bool{}
	for rows := 1; rows <= 384; rows += 7 {
		for cols := 1; cols <= 384; cols += 5 {
			p, err := New(rows, cols, Options{Stride: 4, TileSize: 384, Ladder: LadderStep, Lazy: true})
			if err != nil {
				t.Fatal(err)
			}
			if !p.Whole || p.TileRows < rows || p.TileCols < cols || p.TileRows-rows >= LadderStep || p.TileCols-cols >= LadderStep {
				t.Fatalf("%dx%d: %v, input %dx%d", cols, rows, p, p.TileCols, p.TileRows)
			}
			shapes[[2]int{p.TileRows, p.TileCols}] = true
		}
	}
	if want := (384 / LadderStep) * (384 / LadderStep); len(shapes) != want {
		t.Errorf("%d input shapes, want %d", len(shapes), want)
	}
}

// TestPlanFlight: the host keeps the most tiles in flight its budget
// holds; a device (injected figures, as a backend reports them) the most
// its free memory holds; one tile that fits neither is refused.
func TestPlanFlight(t *testing.T) {
	const gib = int64(1) << 30
	host := func(n int) int64 { return gib + int64(n)*gib/2 } // 1.5 GiB for one tile, 2 GiB for two
	h100 := func(inUse, tile int64) DeviceMemory {
		return DeviceMemory{Device: "cuda:0 (injected)", LimitBytes: 60 * gib, InUseBytes: inUse, TileBytes: tile}
	}
	for _, tc := range []struct {
		name   string
		budget int64
		dev    DeviceMemory
		want   Flight
		err    error
	}{
		{"host, room for two", 4 * gib, DeviceMemory{}, Flight{Host: 2}, nil},
		{"host, exactly two", 2 * gib, DeviceMemory{}, Flight{Host: 2}, nil},
		{"host, room for one", 2*gib - 1, DeviceMemory{}, Flight{Host: 1}, nil},
		{"host, exactly one", 3 * gib / 2, DeviceMemory{}, Flight{Host: 1}, nil},
		{"host too small", 3*gib/2 - 1, DeviceMemory{}, Flight{}, ErrBudget},
		{"device, room for two", 4 * gib, h100(1*gib, 20*gib), Flight{Host: 2, Device: 2}, nil},
		{"device, room for one", 4 * gib, h100(30*gib, 20*gib), Flight{Host: 2, Device: 1}, nil},
		{"device, exactly one", 4 * gib, h100(40*gib, 20*gib), Flight{Host: 2, Device: 1}, nil},
		{"device too small", 4 * gib, h100(40*gib+1, 20*gib), Flight{Host: 2}, ErrDevice},
		{"device without a tile size", 4 * gib, h100(0, 0), Flight{Host: 2}, ErrDevice},
		{"device busy beyond its limit", 4 * gib, h100(70*gib, 1), Flight{Host: 2}, ErrDevice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanFlight(tc.budget, host, tc.dev)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if tc.err == nil && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if errors.Is(err, ErrDevice) && !strings.Contains(err.Error(), tc.dev.Device) {
				t.Errorf("%q does not name the device", err)
			}
		})
	}
}

func TestDeviceErrorSaysWhy(t *testing.T) {
	d := DeviceMemory{Device: "cuda:0", LimitBytes: 8 << 30, InUseBytes: 6 << 30, TileBytes: 3 << 30}
	_, err := d.Tiles(2)
	want := "one tile needs 3.00 GiB on cuda:0, 2.00 GiB of its 8.00 GiB are free"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want it to say %q", err, want)
	}
}
