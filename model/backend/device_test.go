package backend

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestDeviceMemory: the device's memory from nvidia-smi's answer, the
// allocator's share by default and with memory_fraction, and the host for
// backends without a device of their own.
func TestDeviceMemory(t *testing.T) {
	saved := nvidiaSMI
	defer func() { nvidiaSMI = saved }()
	var asked []string
	nvidiaSMI = func(_ context.Context, args ...string) ([]byte, error) {
		asked = args
		return []byte("NVIDIA H100 80GB HBM3, 81559\n"), nil
	}
	b, _ := Parse("xla:cuda")
	m, err := b.DeviceMemory()
	if err != nil {
		t.Fatal(err)
	}
	if m.Device != "NVIDIA H100 80GB HBM3" || m.TotalBytes != 81559<<20 || m.LimitBytes != int64(float64(81559<<20)*0.75) || m.OnHost {
		t.Errorf("memory %+v", m)
	}
	if !strings.Contains(strings.Join(asked, " "), "-i 0") {
		t.Errorf("asked nvidia-smi %v, not for device 0", asked)
	}
	b, _ = Parse("xla:cuda,memory_fraction=0.5")
	if m, _ = b.DeviceMemory(); m.LimitBytes != 81559<<19 {
		t.Errorf("memory_fraction=0.5: limit %d", m.LimitBytes)
	}
	b, _ = Parse("xla:cuda,memory_fraction=2")
	if _, err := b.DeviceMemory(); err == nil {
		t.Error("memory_fraction=2 accepted")
	}
	for _, name := range []string{"go", "xla:cpu"} {
		b, _ = Parse(name)
		if m, err := b.DeviceMemory(); err != nil || !m.OnHost {
			t.Errorf("%s: %+v %v, want host memory", name, m, err)
		}
	}
	nvidiaSMI = func(context.Context, ...string) ([]byte, error) { return nil, errors.New("not found") }
	b, _ = Parse("xla:cuda")
	if _, err := b.DeviceMemory(); err == nil || !strings.Contains(err.Error(), "nvidia-smi") {
		t.Errorf("no nvidia-smi: %v, want an error naming it", err)
	}
	if _, err := parseSMIMemory("[N/A]", 0.75); err == nil {
		t.Error("a line without memory parsed")
	}
}
