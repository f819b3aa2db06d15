package resources

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// execHelperEnv makes the test binary run as TestExecUnderStartSettings' child.
const execHelperEnv = "PNEC_TEST_EXEC_HELPER"

// TestExecUnderStartSettings runs this test binary as a network command's
// main does: ExecUnderStartSettings(true) first. Where the policy asks for
// glibc's huge-page tunable (the kernel's madvise mode, glibc 2.35+), the
// program that goes on runs under it (GLIBC_TUNABLES has it, the user's
// other tunables kept) and a large block from malloc is marked for huge
// pages (VmFlags hg in /proc/self/smaps: glibc applied it). Where the
// policy asks for none, the block is not marked. Either way it runs under
// GODEBUGDefault, added to the user's GODEBUG: a test binary is built
// without it.
func TestExecUnderStartSettings(t *testing.T) {
	if os.Getenv(execHelperEnv) == "1" {
		execHelper()
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestExecUnderStartSettings$", "-test.v")
	cmd.Env = append(os.Environ(), execHelperEnv+"=1", "GLIBC_TUNABLES=glibc.malloc.tcache_count=7", "GODEBUG=gctrace=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "helper.") {
			got[strings.TrimPrefix(k, "helper.")] = v
		}
	}
	// This process's facts, with the child's environment.
	f := readFacts(nil)
	f.Env = env(map[string]string{"GLIBC_TUNABLES": "glibc.malloc.tcache_count=7"})
	want := Decide(f).GlibcTunables
	if g := "gctrace=0," + GODEBUGDefault; got["godebug"] != g {
		t.Errorf("child ran under GODEBUG=%q, want %q", got["godebug"], g)
	}
	t.Logf("huge pages on request %v, glibc tunable usable %v: the policy asks for %q; child: %v",
		f.HugePagesOnRequest, f.MallocHugePagesTunable, want, got)
	if want == "" {
		if got["tunables"] != "glibc.malloc.tcache_count=7" || got["hugepages"] != "false" {
			t.Errorf("nothing asked for, yet the child ran under %q with huge pages %s", got["tunables"], got["hugepages"])
		}
		return
	}
	if got["tunables"] != want {
		t.Errorf("child ran under GLIBC_TUNABLES=%q, want %q", got["tunables"], want)
	}
	if got["hugepages"] != "true" {
		t.Errorf("a 64 MiB block from malloc is not marked for huge pages (VmFlags %q)", got["vmflags"])
	}
}

// execHelper is the child: it calls ExecUnderStartSettings as a network
// command's main does, then reports the tunables and GODEBUG it runs under
// and whether glibc marked a large block for huge pages.
func execHelper() {
	if err := ExecUnderStartSettings(true); err != nil {
		fmt.Println("helper.error=" + err.Error())
	}
	addr, free := bigBlock(64 << 20)
	defer free()
	flags := vmFlagsAt(addr)
	fmt.Printf("helper.godebug=%s\nhelper.tunables=%s\nhelper.vmflags=%s\nhelper.hugepages=%v\n", os.Getenv("GODEBUG"), os.Getenv("GLIBC_TUNABLES"), flags,
		strings.Contains(" "+flags+" ", " hg "))
}

// vmFlagsAt is the VmFlags line of the mapping holding addr in
// /proc/self/smaps ("" where none).
func vmFlagsAt(addr uintptr) string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := mappingRange(line); ok {
			in = addr >= lo && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	return ""
}

// mappingRange parses a smaps mapping header ("7f..-7f.. rw-p ...").
func mappingRange(line string) (lo, hi uintptr, ok bool) {
	field, _, _ := strings.Cut(line, " ")
	a, b, found := strings.Cut(field, "-")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(x), uintptr(y), true
}
