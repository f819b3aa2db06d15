package main

import (
	"runtime/debug"

	"github.com/pnec/pnec/model"
)

// resolveVersion is the version this binary reports and records in model
// files, products and STAC Items (processing:software): the one the build
// set (make: git describe, through -ldflags -X main.version), else the
// module version of a 'go install ...@vX' build, else "dev" with the
// commit Go stamps into a build from a git checkout ("dev+0123456789ab",
// "-dirty" for uncommitted changes).
func resolveVersion(set string, bi *debug.BuildInfo) string {
	if set != "" && set != "dev" {
		return set
	}
	if bi == nil {
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

func init() {
	bi, _ := debug.ReadBuildInfo()
	version = resolveVersion(version, bi)
	// Model files and products record the software version through
	// package model (model.Version), which nothing else sets.
	model.Version = version
}
