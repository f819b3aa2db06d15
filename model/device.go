package model

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomlx/gomlx/core/tensors"
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
	if b.Kind != BackendXLACUDA {
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

// DeviceNeedBytes estimates the device memory one prediction call of a
// rows x cols tile takes on an XLA device: the weights, the uploaded scene
// (at most 4 bytes a sample) and masks, the outputs, and the network's
// largest live maps. The paper encoder works at full resolution, where
// pnec's 3x3 convolution gathers its nine taps of D channels per pixel
// (conv3x3Taps): about 20 D-wide maps a pixel are counted there; at stride
// 4 about 60 (as EstimatePredictBytes). It is an upper estimate, not a
// measurement: on an H100 a 2524 x 2524 x 200 tile of the paper encoder
// failed asking XLA for 30.4 GiB in one buffer, under the 70 GB this
// counts for it. scripts/gpu-check.sh runs the large scene at three
// budgets to check that no planned tile runs out of device memory.
func (m *Model) DeviceNeedBytes(rows, cols int) int64 {
	cfg := m.meta.Config
	full := int64(rows) * int64(cols)
	cells := int64(padTo(rows)/Stride) * int64(padTo(cols)/Stride)
	d, ch, k := int64(cfg.Hidden), int64(inputChannels(cfg.Input, m.meta.Bands)), int64(len(m.meta.Classes))
	need := m.DeviceResidentBytes() +
		full*(4*int64(m.meta.Bands)+1) + // the scene as uploaded, and its valid mask
		4*full*(3*k+2) + // upsampled logits, probabilities, recovery and uncertainty
		4*cells*d*60 // the stride-4 maps
	if cfg.Encoder == EncoderPaper {
		need += 4 * full * (ch + 20*d)
	}
	return need
}

// DeviceResidentBytes is the part of DeviceNeedBytes that does not depend
// on the input: the weights, and the allocator's and cuDNN's workspaces
// (64 MiB), held on the device once whatever the calls in flight.
func (m *Model) DeviceResidentBytes() int64 {
	weights := int64(64 << 20)
	for _, p := range m.params {
		weights += 4 * int64(len(p.Data))
	}
	return weights
}

// liveCallTensors counts the input tensors that prediction calls made and
// have not released yet (callTensors); tests check it returns to zero.
var liveCallTensors atomic.Int64

// callTensors are the input tensors one call makes for itself (the scene,
// masks, interpolation matrices): released as soon as the call is done,
// so that their device buffers are freed then, not when Go's collector
// gets to them (device memory pressure does not trigger a collection).
type callTensors []*tensors.Tensor

// add keeps t for release and returns it.
func (c *callTensors) add(t *tensors.Tensor) *tensors.Tensor {
	*c = append(*c, t)
	liveCallTensors.Add(1)
	return t
}

// release frees every kept tensor, on the host and on the device.
func (c *callTensors) release() {
	for _, t := range *c {
		t.FinalizeAll()
		liveCallTensors.Add(-1)
	}
	*c = nil
}

// ErrDeviceMemory says a tile needs more device memory than the device's
// allocator may take.
var ErrDeviceMemory = errors.New("tile does not fit the device's memory")
