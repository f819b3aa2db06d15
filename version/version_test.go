package version

import (
	"runtime/debug"
	"testing"
)

// TestResolve: the version a build set wins; without one (a plain go
// build), the module version or the commit Go stamped into the binary; in
// a program that embeds pnec, the version of pnec it required.
func TestResolve(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: module, Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	embedding := func(dep string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/tool", Version: "v9.9.9"},
			Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.1.0"}, {Path: module, Version: dep}}}
	}
	for _, tc := range []struct {
		name, set string
		bi        *debug.BuildInfo
		want      string
	}{
		{"make", "v1.2.0-3-gabc", vcs("0123456789abcdef", "false"), "v1.2.0-3-gabc"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Path: module, Version: "v1.3.0"}}, "v1.3.0"},
		{"go build in a checkout", "dev", vcs("0123456789abcdef", "false"), "dev+0123456789ab"},
		{"uncommitted changes", "dev", vcs("0123456789abcdef", "true"), "dev+0123456789ab-dirty"},
		{"nothing known", "dev", &debug.BuildInfo{Main: debug.Module{Path: module, Version: "(devel)"}}, "dev"},
		{"no build info", "dev", nil, "dev"},
		{"embedded at a version", "dev", embedding("v1.4.0"), "v1.4.0"},
		{"embedded from a replace", "dev", embedding("(devel)"), "dev"},
	} {
		if got := resolve(tc.set, tc.bi); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
