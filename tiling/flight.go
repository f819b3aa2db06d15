package tiling

import (
	"errors"
	"fmt"
)

// ErrDevice means one tile of a plan does not fit in the accelerator's
// memory: the planner refuses the run rather than let the device fail
// with an out-of-memory error in the middle of it.
var ErrDevice = errors.New("device memory too small for one tile")

// MaxInFlight is the most tiles a run holds at once, on the host and on a
// device: two let the next tile be read (and uploaded) while the network
// runs the current one; a third would only wait.
const MaxInFlight = 2

// DeviceMemory is what the planner knows of the accelerator the network
// runs on, for one network input shape: plain figures the backend fills
// (the XLA predictor from PJRT's device memory statistics and its compiled
// executable's memory statistics). The zero value means no accelerator:
// the network runs in host memory, under the host budget alone.
type DeviceMemory struct {
	// Device names the device for messages, e.g. "cuda:0 (NVIDIA H100 80GB HBM3)".
	Device string
	// LimitBytes is the memory this process may use on the device: the
	// allocator's limit (PJRT's bytes_limit, go-xla's memory fraction of
	// the card), else the card's memory. 0 = no accelerator.
	LimitBytes int64
	// InUseBytes is what is already in use there (PJRT's bytes_in_use),
	// the model's weights and the compiled code included once resident.
	InUseBytes int64
	// TileBytes is what one network call on one input of the shape needs
	// on the device beyond InUseBytes: its arguments, outputs and
	// temporaries (PJRT's executable memory statistics: argument + output
	// + temporary - alias bytes).
	TileBytes int64
}

// Present reports whether d describes an accelerator.
func (d DeviceMemory) Present() bool { return d.LimitBytes > 0 }

// Tiles is how many tiles of d's shape the device holds at once, at most
// want: its free memory (LimitBytes - InUseBytes) over TileBytes. It is
// 0 for no accelerator, and an ErrDevice error when not even one tile
// fits (or the backend could not size one).
func (d DeviceMemory) Tiles(want int) (int, error) {
	if !d.Present() {
		return 0, nil
	}
	free := d.LimitBytes - d.InUseBytes
	if d.TileBytes <= 0 || free < d.TileBytes {
		return 0, &DeviceError{Memory: d}
	}
	return int(min(int64(want), free/d.TileBytes)), nil
}

// DeviceError is a tile that does not fit the device (errors.Is(err,
// ErrDevice) holds).
type DeviceError struct{ Memory DeviceMemory }

func (e *DeviceError) Error() string {
	d := e.Memory
	if d.TileBytes <= 0 {
		return fmt.Sprintf("%v: %s did not say what one tile needs", ErrDevice, d.Device)
	}
	return fmt.Sprintf("%v: one tile needs %s on %s, %s of its %s are free",
		ErrDevice, gib(d.TileBytes), d.Device, gib(max(d.LimitBytes-d.InUseBytes, 0)), gib(d.LimitBytes))
}

func (e *DeviceError) Unwrap() error { return ErrDevice }

// Flight is how many tiles a run holds at once.
type Flight struct {
	// Host is the tiles held in host memory: 2 reads the next tile while
	// the network runs one, 1 reads it only once the network is done.
	Host int
	// Device is the tiles the accelerator holds at once: 2 uploads the
	// next while one runs, 1 frees a tile's buffers before the next; 0
	// without an accelerator.
	Device int
}

// PlanFlight decides how many tiles are in flight (at most MaxInFlight):
// on the host the most whose peak hostBytes(n) fits in budget, on the
// device what dev holds. It never changes the plan itself, so the map is
// the same whatever it decides. With not even one tile within the budget
// it fails with ErrBudget (the caller names the smallest budget that works,
// hostBytes(1)); with not even one on the device, with ErrDevice.
func PlanFlight(budget int64, hostBytes func(n int) int64, dev DeviceMemory) (Flight, error) {
	var f Flight
	for n := MaxInFlight; n >= 1; n-- {
		if hostBytes(n) <= budget {
			f.Host = n
			break
		}
	}
	if f.Host == 0 {
		return f, fmt.Errorf("%w: one tile in flight needs %s, the budget is %s", ErrBudget, gib(hostBytes(1)), gib(budget))
	}
	var err error
	f.Device, err = dev.Tiles(MaxInFlight)
	return f, err
}

// gib writes n bytes in GiB for messages.
func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }
