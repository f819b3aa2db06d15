package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot writes files (path relative to the root -> content) under a temp dir.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const meminfo = "MemTotal:       16777216 kB\nMemFree:         1000000 kB\nMemAvailable:   12582912 kB\n" // 16 GiB, 12 GiB available

const (
	mountV2 = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	mountV1 = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n" +
		"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"36 31 0:33 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
)

// limitsHead is the start of a /proc/self/limits.
const limitsHead = "Limit                     Soft Limit           Hard Limit           Units     \n" +
	"Max cpu time              unlimited            unlimited            seconds   \n" +
	"Max stack size            8388608              unlimited            bytes     \n"

func TestReadMemoryLimits(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name      string
		files     map[string]string
		cgroup    int64
		at        string
		budget    int64
		budgetWhy string
	}{
		{"no cgroup limit (v2 max)", map[string]string{
			"proc/meminfo": meminfo, "proc/self/mountinfo": mountV2, "proc/self/cgroup": "0::/user.slice\n",
			"sys/fs/cgroup/memory.max": "max\n", "sys/fs/cgroup/user.slice/memory.max": "max\n",
		}, 0, "", 8 * gib, "physical memory"},
		{"Kubernetes pod, v2 with cgroup namespace", map[string]string{
			"proc/meminfo": meminfo, "proc/self/mountinfo": mountV2, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "4294967296\n", "sys/fs/cgroup/memory.high": "max\n",
		}, 4 * gib, "/sys/fs/cgroup/memory.max", 2 * gib, "cgroup limit"},
		{"Slurm job, v2 nested, the parent is tighter", map[string]string{
			"proc/meminfo": meminfo, "proc/self/mountinfo": mountV2,
			"proc/self/cgroup": "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_42/memory.max":                    "3221225472\n",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_42/step_0/user/task_0/memory.max": "max\n",
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_42/step_0/memory.high":            "6442450944\n",
		}, 3 * gib, "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_42/memory.max", 3 * gib / 2, "cgroup limit"},
		{"v1 container path", map[string]string{
			"proc/meminfo": meminfo, "proc/self/mountinfo": mountV1,
			"proc/self/cgroup":                                           "4:memory:/process_api/abc\n3:cpu:/\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                 "9223372036854771712\n",
			"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "2147483648\n",
		}, 2 * gib, "/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", 1 * gib, "cgroup limit"},
		{"v1 mount showing the container's own cgroup", map[string]string{
			"proc/meminfo":        meminfo,
			"proc/self/mountinfo": "35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
			"proc/self/cgroup":    "4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n",
		}, 1 * gib, "/sys/fs/cgroup/memory/memory.limit_in_bytes", gib / 2, "cgroup limit"},
		{"limit above physical memory is ignored", map[string]string{
			"proc/meminfo": meminfo, "proc/self/mountinfo": mountV2, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "68719476736\n",
		}, 64 * gib, "/sys/fs/cgroup/memory.max", 8 * gib, "physical memory"},
		{"address-space limit (ulimit -v): half of what is left", map[string]string{
			"proc/meminfo": meminfo, "proc/self/mountinfo": mountV2, "proc/self/cgroup": "0::/\n",
			"proc/self/limits": limitsHead + "Max address space         6442450944           unlimited            bytes     \n",
			"proc/self/status": "Name:\tpnec\nVmPeak:\t 2097152 kB\nVmSize:\t 2097152 kB\n",
		}, 0, "", 2 * gib, "address space left"},
		{"address-space limit above the memory: no change", map[string]string{
			"proc/meminfo": meminfo, "proc/self/mountinfo": mountV2, "proc/self/cgroup": "0::/\n",
			"proc/self/limits": limitsHead + "Max address space         68719476736          68719476736          bytes     \n",
			"proc/self/status": "VmSize:\t 2097152 kB\n",
		}, 0, "", 8 * gib, "physical memory"},
		{"no address-space limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/mountinfo": mountV2, "proc/self/cgroup": "0::/\n",
			"proc/self/limits": limitsHead + "Max address space         unlimited            unlimited            bytes     \n",
			"proc/self/status": "VmSize:\t 2097152 kB\n",
		}, 0, "", 8 * gib, "physical memory"},
		{"busy machine: capped by what is available", map[string]string{
			"proc/meminfo": "MemTotal: 16777216 kB\nMemAvailable: 2097152 kB\n", "proc/self/mountinfo": mountV2, "proc/self/cgroup": "0::/\n",
		}, 0, "", 2 * gib * 8 / 10, "available now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := ReadMemoryLimits(fakeRoot(t, tc.files))
			if l.Physical != 16*gib {
				t.Errorf("physical %d, want 16 GiB", l.Physical)
			}
			if l.Cgroup != tc.cgroup || l.CgroupAt != tc.at {
				t.Errorf("cgroup limit %d from %q, want %d from %q", l.Cgroup, l.CgroupAt, tc.cgroup, tc.at)
			}
			b, why := l.DefaultBudget()
			if d := b - tc.budget; d > 1<<20 || d < -(1<<20) {
				t.Errorf("default budget %s, want %s", FormatBytes(b), FormatBytes(tc.budget))
			}
			if !strings.Contains(why, tc.budgetWhy) {
				t.Errorf("reason %q does not say %q", why, tc.budgetWhy)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true}, {"512M", 512 << 20, true}, {"4GiB", 4 << 30, true}, {"1.5g", 3 << 29, true},
		{"2 KB", 2048, true}, {"", 0, false}, {"lots", 0, false}, {"-1G", 0, false}, {"G", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
