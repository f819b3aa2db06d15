package model

import (
	"errors"
	"sync/atomic"

	"github.com/gomlx/gomlx/core/tensors"
)

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
