// Package version is pnec's version, the one that pnec --version prints
// and that model files, products (SOFTWARE_VERSION) and STAC Items
// (processing:software) record.
package version

import "runtime/debug"

// module is pnec's module path: a program that embeds pnec as a library
// records the version of this module it was built with, not its own.
const module = "github.com/pnec/pnec"

// String is pnec's version. The build sets it: make build and
// scripts/gpu-bundle.sh pass -ldflags "-X
// github.com/pnec/pnec/version.String=$(git describe --tags --always
// --dirty)". Without that, it is the module version of a 'go install
// ...@vX' build (or of pnec in a program that embeds it), else "dev" with
// the commit Go stamps into a build from a git checkout
// ("dev+0123456789ab", "-dirty" for uncommitted changes), else "dev" (go
// test, go run).
var String = "dev"

func init() {
	bi, _ := debug.ReadBuildInfo()
	String = resolve(String, bi)
}

// resolve is the version given what the build set and what Go recorded.
func resolve(set string, bi *debug.BuildInfo) string {
	if set != "" && set != "dev" {
		return set
	}
	if bi == nil {
		return "dev"
	}
	if bi.Main.Path != "" && bi.Main.Path != module {
		for _, d := range bi.Deps {
			if d.Path == module && d.Version != "" && d.Version != "(devel)" {
				return d.Version
			}
		}
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "dev"
	}
	return "dev+" + rev + dirty
}
