// Package memory is where pnec's memory budget is decided: the limits on
// this process's memory (physical memory, cgroups, what is available), the
// default budget taken from them once per process, and the one rule for a
// budget of 0 (Budget). It imports nothing of pnec, so every package that
// takes a budget, the network's included, reads the rule from here.
package memory

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// DefaultMemoryFraction is the share of the memory this process may use
// (MemoryLimits.Usable) that the default budget takes, leaving the rest to
// the rest of the machine (or of the container, Slurm job or Kubernetes pod).
const DefaultMemoryFraction = 0.5

// availableFraction caps the default budget at this share of the memory
// the kernel reports available now (MemAvailable), so that a machine
// already busy is not pushed into swap or the OOM killer.
const availableFraction = 0.8

// MemoryLimits are the limits on this process's memory, bytes (0 = unknown
// or unlimited).
type MemoryLimits struct {
	Physical  int64  // MemTotal of /proc/meminfo
	Available int64  // MemAvailable of /proc/meminfo
	Cgroup    int64  // lowest cgroup limit (v2 memory.max/memory.high, v1 memory.limit_in_bytes) on this process's cgroup path
	CgroupAt  string // the file that set Cgroup
	// AddressSpaceLeft is the address space the process may still map
	// under its address-space limit (ulimit -v, RLIMIT_AS: "Max address
	// space" of /proc/self/limits less VmSize of /proc/self/status); 0
	// without a limit, 1 where the limit is already reached.
	AddressSpaceLeft int64
}

// Usable is the memory the process may use at most: the cgroup limit when
// one is set and below physical memory, else physical memory; and under an
// address-space limit at most the address space left, which every byte
// the process uses needs (a run that outgrew it would fail to allocate).
func (l MemoryLimits) Usable() int64 {
	u := l.Physical
	if l.Cgroup > 0 && (l.Physical == 0 || l.Cgroup < l.Physical) {
		u = l.Cgroup
	}
	if l.AddressSpaceLeft > 0 && (u == 0 || l.AddressSpaceLeft < u) {
		u = l.AddressSpaceLeft
	}
	return u
}

// DefaultBudget is the budget used when none is given: DefaultMemoryFraction
// of Usable, and at most availableFraction of the memory available now. It
// returns the budget and the reason, in words, for logs.
func (l MemoryLimits) DefaultBudget() (int64, string) {
	u := l.Usable()
	b := int64(float64(u) * DefaultMemoryFraction)
	why := fmt.Sprintf("%.0f%% of physical memory %s", 100*DefaultMemoryFraction, FormatBytes(u))
	switch {
	case u == l.AddressSpaceLeft && l.AddressSpaceLeft > 0:
		why = fmt.Sprintf("%.0f%% of the address space left under the limit (ulimit -v), %s", 100*DefaultMemoryFraction, FormatBytes(u))
	case u == l.Cgroup && l.Cgroup > 0:
		why = fmt.Sprintf("%.0f%% of the cgroup limit %s (%s)", 100*DefaultMemoryFraction, FormatBytes(u), l.CgroupAt)
	}
	if a := int64(float64(l.Available) * availableFraction); l.Available > 0 && a < b {
		b = a
		why = fmt.Sprintf("%.0f%% of the memory available now, %s", 100*availableFraction, FormatBytes(l.Available))
	}
	return b, why
}

// ReadMemoryLimits reads the limits from the files under root ("/" for
// this machine; tests pass a directory of fake files): /proc/meminfo,
// /proc/self/cgroup and /proc/self/mountinfo, and the cgroup files they
// point to; /proc/self/limits and /proc/self/status for the address space.
func ReadMemoryLimits(root string) MemoryLimits {
	var l MemoryLimits
	if b, err := os.ReadFile(filepath.Join(root, "proc/meminfo")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			var kb int64
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
				l.Physical = kb << 10
			}
			if _, err := fmt.Sscanf(line, "MemAvailable: %d kB", &kb); err == nil {
				l.Available = kb << 10
			}
		}
	}
	l.Cgroup, l.CgroupAt = cgroupLimit(root)
	l.AddressSpaceLeft = AddressSpaceLeft(root)
	return l
}

// AddressSpaceLeft is the address space the process may still map under
// its soft address-space limit (ulimit -v, RLIMIT_AS), bytes, read from the
// files under root ("/" for this process): the limit in /proc/self/limits
// less VmSize in /proc/self/status. 0 without a limit or where the files do
// not say; at least 1 under a limit.
func AddressSpaceLeft(root string) int64 {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/limits"))
	if err != nil {
		return 0
	}
	var limit int64
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Max address space")
		if !ok {
			continue
		}
		f := strings.Fields(rest) // soft hard units
		if len(f) < 1 || f[0] == "unlimited" {
			return 0
		}
		if limit, err = strconv.ParseInt(f[0], 10, 64); err != nil || limit <= 0 {
			return 0
		}
	}
	if limit == 0 {
		return 0
	}
	used, _ := StatusBytes(root, "VmSize")
	return max(limit-used, 1)
}

// StatusBytes reads a size field of /proc/self/status under root ("/" for
// this process; "VmSize", "VmHWM", in kB there), bytes; false where it
// cannot (not Linux).
func StatusBytes(root, field string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/status"))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// cgroupMount is a cgroup file system mount: its mount point, the cgroup
// path it shows at that point (not "/" in some containers) and version.
type cgroupMount struct {
	point, root string
	v2          bool
}

// cgroupLimit returns the lowest memory limit set on the process's cgroup
// or any ancestor visible to it, and the file that set it; 0 when none.
func cgroupLimit(root string) (int64, string) {
	mounts := cgroupMounts(root)
	paths := map[bool]string{} // v2 -> the process's cgroup path
	if f, err := os.Open(filepath.Join(root, "proc/self/cgroup")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// hierarchy-ID:controller-list:cgroup-path
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				paths[true] = parts[2]
			case hasController(parts[1], "memory"):
				paths[false] = parts[2]
			}
		}
		f.Close()
	}
	var best int64
	var at string
	consider := func(file string) {
		v, ok := readLimit(file)
		if ok && (best == 0 || v < best) {
			best, at = v, strings.TrimPrefix(file, strings.TrimSuffix(root, "/"))
		}
	}
	for _, m := range mounts {
		p, ok := paths[m.v2]
		if !ok {
			p = "/"
		}
		// The path is relative to the hierarchy's root; the mount shows
		// m.root of it (a container's own cgroup, say).
		rel := "/"
		if r, ok := strings.CutPrefix(p, m.root); ok {
			rel = "/" + strings.TrimPrefix(r, "/")
		}
		names := []string{"memory.limit_in_bytes"}
		if m.v2 {
			names = []string{"memory.max", "memory.high"}
		}
		// Every level from the process's cgroup up to the mount point
		// limits it; the tightest wins.
		dir := filepath.Join(root, m.point, rel)
		top := filepath.Join(root, m.point)
		for {
			for _, n := range names {
				consider(filepath.Join(dir, n))
			}
			if dir == top || !strings.HasPrefix(dir, top) {
				break
			}
			dir = filepath.Dir(dir)
		}
	}
	return best, at
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// cgroupMounts lists the cgroup v2 mounts and the v1 memory controller
// mounts of /proc/self/mountinfo; with no mountinfo, the usual places.
func cgroupMounts(root string) []cgroupMount {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return []cgroupMount{{point: "/sys/fs/cgroup", root: "/", v2: true}, {point: "/sys/fs/cgroup/memory", root: "/"}}
	}
	var out []cgroupMount
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		switch {
		case g[0] == "cgroup2":
			out = append(out, cgroupMount{point: f[4], root: f[3], v2: true})
		case g[0] == "cgroup" && len(g) >= 3 && hasController(g[2], "memory"):
			out = append(out, cgroupMount{point: f[4], root: f[3]})
		}
	}
	return out
}

// readLimit reads a cgroup limit file: a number of bytes, or "max" (v2) or
// a value near 2^63 (v1) for none.
func readLimit(file string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0, false
	}
	return v, true
}

// DefaultBudget is the budget of a run that names none (see
// MemoryLimits.DefaultBudget), bytes. It is read once per process, so that
// every plan and every batch job shares the same figure (MemAvailable
// moves all the time).
func DefaultBudget() int64 { return defaultBudget() }

var defaultBudget = sync.OnceValue(func() int64 {
	b, _ := ReadMemoryLimits("/").DefaultBudget()
	return b
})

// Budget is the one rule for a memory budget given as bytes, for every
// package that takes one (processor.Options, pipelines.Config through it,
// model.TrainOptions with TrainBudget): a positive figure is the budget,
// 0 means the default, resolved here and nowhere else. A negative
// figure is returned as it is, for the caller to refuse.
func Budget(bytes int64) int64 {
	if bytes == 0 {
		return DefaultBudget()
	}
	return bytes
}

// TrainBudget is Budget for training, whose default is all the memory the
// process may use (MemoryLimits.Usable): a training run holds one scene and
// the network's activations and is refused before it starts only when its
// estimate is above that (0 when the limits cannot be read: unchecked).
func TrainBudget(bytes int64) int64 {
	if bytes == 0 {
		return usable()
	}
	return bytes
}

var usable = sync.OnceValue(func() int64 { return ReadMemoryLimits("/").Usable() })

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

// FormatBytes writes n bytes with a binary unit: "512 B", "1.5 KiB", "1.8 TiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
