package backend

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// DeviceMemory is the memory of the device the network runs on, as plain
// data for the planner: a tile whose DeviceNeedBytes exceed LimitBytes
// must not run there.
type DeviceMemory struct {
	// Device is the device's name ("NVIDIA H100 80GB HBM3"), "host" when
	// the network's buffers are in host memory (then OnHost is true and
	// the host budget covers them: TotalBytes and LimitBytes are 0).
	Device string `json:"device"`
	OnHost bool   `json:"on_host"`
	// TotalBytes is the device's memory; LimitBytes what XLA's allocator
	// may take of it: TotalBytes x MemoryFraction (XLA's BFC allocator is
	// sized from the card's memory and the client's memory_fraction,
	// 0.75 unless the backend's options set memory_fraction=F).
	TotalBytes     int64   `json:"total_bytes"`
	LimitBytes     int64   `json:"limit_bytes"`
	MemoryFraction float64 `json:"memory_fraction"`
	// Source says where TotalBytes comes from.
	Source string `json:"source"`
}

// defaultMemoryFraction is XLA's GPU allocator's default share of the card
// (go-xla documents it; pnec sets no other).
const defaultMemoryFraction = 0.75

// nvidiaSMI runs nvidia-smi (tests substitute it).
var nvidiaSMI = func(ctx context.Context, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, "nvidia-smi", args...).Output()
}

// DeviceMemory is the memory b's device offers. For a CUDA backend the
// card's total comes from nvidia-smi (the device b.Device of those the
// process sees); an error says why it is unknown, and the planner must
// then not assume a size.
func (b Backend) DeviceMemory() (DeviceMemory, error) {
	if !b.OnDevice() {
		return DeviceMemory{Device: "host", OnHost: true}, nil
	}
	frac := defaultMemoryFraction
	for _, o := range b.Options {
		if v, ok := strings.CutPrefix(o, "memory_fraction="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return DeviceMemory{}, fmt.Errorf("backend %s: memory_fraction %q: must be in (0, 1]", b.Label(), v)
			}
			frac = f
		}
	}
	if b.Kind != XLACUDA {
		return DeviceMemory{}, fmt.Errorf("backend %s: the device's memory is unknown (only NVIDIA cards are queried)", b.Label())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := nvidiaSMI(ctx, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits", "-i", strconv.Itoa(b.Device))
	if err != nil {
		return DeviceMemory{}, fmt.Errorf("backend %s: device memory: nvidia-smi: %w", b.Label(), err)
	}
	return parseSMIMemory(string(out), frac)
}

// parseSMIMemory reads nvidia-smi's "NAME, MiB" line.
func parseSMIMemory(out string, frac float64) (DeviceMemory, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	i := strings.LastIndex(line, ",")
	if i < 0 {
		return DeviceMemory{}, fmt.Errorf("device memory: nvidia-smi said %q, want NAME, MiB", line)
	}
	mib, err := strconv.ParseInt(strings.TrimSpace(line[i+1:]), 10, 64)
	if err != nil || mib <= 0 {
		return DeviceMemory{}, fmt.Errorf("device memory: nvidia-smi said %q, want NAME, MiB", line)
	}
	total := mib << 20
	return DeviceMemory{Device: strings.TrimSpace(line[:i]), TotalBytes: total, LimitBytes: int64(float64(total) * frac),
		MemoryFraction: frac, Source: "nvidia-smi"}, nil
}
