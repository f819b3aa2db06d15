package processor

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// DefaultMemoryFraction is the share of physical memory (or of the cgroup
// limit, when lower) the planner may use when Options.MaxMemoryBytes is 0.
const DefaultMemoryFraction = 0.5

// PhysicalMemoryBytes returns the memory this process may use: the
// machine's RAM, or the cgroup v2/v1 limit when that is lower; 0 when
// unknown.
func PhysicalMemoryBytes() int64 {
	var total int64
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err == nil {
		total = int64(si.Totalram) * int64(si.Unit)
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && v > 0 && (total == 0 || v < total) {
			total = v
		}
	}
	return total
}

// DefaultMaxMemoryBytes is the budget used when Options.MaxMemoryBytes is 0.
func DefaultMaxMemoryBytes() int64 {
	return int64(float64(PhysicalMemoryBytes()) * DefaultMemoryFraction)
}

// ParseBytes reads a memory size: a plain number of bytes or one with a
// suffix K, M, G, T (powers of 1024; KiB/MiB/GiB/TiB and KB/MB/GB/TB are
// read the same way), e.g. "512M", "4GiB", "1.5G".
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1<<62 {
		return 0, &strconv.NumError{Func: "ParseBytes", Num: s, Err: strconv.ErrSyntax}
	}
	return int64(v * mult), nil
}
