package archtest

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the module path; moduleRoot the repository's root.
const (
	module     = "github.com/pnec/pnec"
	moduleRoot = "../.."
)

// rule is what one package (its path below the module) may import: among
// the module's packages only those in onlyPnec when it is not nil, and
// none of forbidden (a path or a prefix of paths: "github.com/gomlx/").
type rule struct {
	pkg       string
	why       string
	onlyPnec  []string
	forbidden []string
}

// upper are the packages that open scenes, run batches or hold flags: no
// package below them imports one.
var upper = []string{module + "/processor", module + "/pipelines", module + "/evaluation", module + "/cmd/"}

// rules are the dependency rules of docs/architecture.md, one place for
// the whole module.
var rules = []rule{
	{pkg: "tiling", why: "tiling is pure planning on plain types", onlyPnec: []string{"grid"}},
	{pkg: "grid", why: "the shared rectangle imports nothing of pnec", onlyPnec: []string{}},
	{pkg: "spectral", why: "band-set arithmetic imports nothing of pnec", onlyPnec: []string{}},
	{pkg: "progress", why: "the progress event imports nothing of pnec", onlyPnec: []string{}},
	{pkg: "matfile", why: "the MAT reader imports nothing of pnec", onlyPnec: []string{}},
	{pkg: "version", why: "the version is read by every layer and imports nothing of pnec", onlyPnec: []string{}},
	{pkg: "drift", why: "drift is arithmetic on plain data below the model", onlyPnec: []string{"tiling", "internal/quantile"}},
	{pkg: "internal/transpose", why: "the read's transpose takes plain slices, with and without GOEXPERIMENT=simd", onlyPnec: []string{}},
	{pkg: "model/internal/kernels", why: "the kernels take plain slices and build without the network, with and without GOEXPERIMENT=simd", onlyPnec: []string{}},
	{pkg: "model", why: "the network sits below the GDAL layer and everything that runs it", forbidden: append([]string{module + "/geo", module + "/sensors", module + "/stac"}, upper...)},
	{pkg: "model/backend", why: "the backends sit below the network: discovery, the decision rule and the compile cache know no model or scene", forbidden: append([]string{module + "/model", module + "/geo", module + "/sensors", module + "/stac", module + "/drift"}, upper...)},
	{pkg: "geo", why: "dependencies point sensors -> geo, and the GDAL layer sits below the network's users", forbidden: append([]string{module + "/sensors", module + "/model", module + "/stac"}, upper...)},
	{pkg: "sensors", why: "only geo talks to GDAL, and sensors sit below the packages that open scenes", forbidden: append([]string{"C", "github.com/airbusgeo/godal"}, upper...)},
	{pkg: "stac", why: "the STAC documents take plain data, so that pnec train writes a model's Item without the batch", forbidden: upper},
	{pkg: "processor", why: "one scene into one product sits below the batch and the command", forbidden: []string{module + "/pipelines", module + "/evaluation", module + "/stac", module + "/cmd/"}},
}

// everywhere are imports one package alone may make: godal is geo's
// (internal/fixture builds test scenes with it), GoMLX the model's, cgo
// the GDAL layer's and the two process-level helpers'.
var everywhere = []struct {
	prefix, why string
	only        []string
}{
	{"github.com/airbusgeo/godal", "geo alone imports godal", []string{"geo", "internal/fixture"}},
	{"github.com/gomlx/", "the network's packages alone import GoMLX", []string{"model", "model/backend"}},
	{"C", "cgo is the GDAL layer's, the process helpers' and the C-garbage test helper's", []string{"geo", "internal/dlopen", "internal/resources", "internal/cgogarbage"}},
}

// imports are the non-test imports of the package in dir under both
// settings of GOEXPERIMENT=simd on amd64.
func imports(t *testing.T, dir string) ([]string, bool) {
	t.Helper()
	var out []string
	found := false
	for _, tags := range [][]string{{"goexperiment.simd"}, nil} {
		ctx := build.Default
		ctx.GOARCH, ctx.GOOS, ctx.BuildTags, ctx.ToolTags = "amd64", "linux", tags, nil
		pkg, err := ctx.ImportDir(dir, 0)
		if _, none := err.(*build.NoGoError); none {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		found = true
		for _, imp := range pkg.Imports {
			if !slices.Contains(out, imp) {
				out = append(out, imp)
			}
		}
	}
	return out, found
}

// matches reports whether imp is pattern or a package below it (a pattern
// ending in "/" names only the packages below it).
func matches(imp, pattern string) bool {
	return imp == pattern || strings.HasPrefix(imp, strings.TrimSuffix(pattern, "/")+"/")
}

// TestImportsOneWay reads every package of the module (tests left out)
// and checks the rules: each package's own, and the imports one package
// alone may make.
func TestImportsOneWay(t *testing.T) {
	byPkg := map[string][]string{}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		rel = filepath.ToSlash(rel)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if imps, ok := imports(t, path); ok {
			byPkg[rel] = imps
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byPkg) < 20 {
		t.Fatalf("read %d packages under %s: not the module", len(byPkg), moduleRoot)
	}
	for _, r := range rules {
		imps, ok := byPkg[r.pkg]
		if !ok {
			t.Errorf("rule for %s: no such package", r.pkg)
			continue
		}
		for _, imp := range imps {
			if r.onlyPnec != nil && strings.HasPrefix(imp, module+"/") && !slices.Contains(r.onlyPnec, strings.TrimPrefix(imp, module+"/")) {
				t.Errorf("package %s imports %s: %s", r.pkg, imp, r.why)
			}
			if slices.ContainsFunc(r.forbidden, func(no string) bool { return matches(imp, no) }) {
				t.Errorf("package %s imports %s: %s", r.pkg, imp, r.why)
			}
		}
	}
	for pkg, imps := range byPkg {
		for _, e := range everywhere {
			if slices.Contains(e.only, pkg) || strings.HasPrefix(pkg, "bench/") && e.prefix == "C" {
				continue
			}
			for _, imp := range imps {
				if matches(imp, e.prefix) {
					t.Errorf("package %s imports %s: %s", pkg, imp, e.why)
				}
			}
		}
	}
}

// TestRulesCatch: each kind of rule reports an import it forbids (the
// rules above would otherwise pass by matching nothing).
func TestRulesCatch(t *testing.T) {
	for _, tc := range []struct {
		imp, pattern string
		want         bool
	}{
		{"github.com/gomlx/gomlx/core/graph", "github.com/gomlx/", true},
		{"github.com/airbusgeo/godal", "github.com/airbusgeo/godal", true},
		{"github.com/airbusgeo/godalx", "github.com/airbusgeo/godal", false},
		{module + "/cmd/pnec", module + "/cmd/", true},
		{module + "/processor", module + "/processor", true},
		{module + "/processorx", module + "/processor", false},
		{"C", "C", true},
		{"Cx", "C", false},
	} {
		if got := matches(tc.imp, tc.pattern); got != tc.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tc.imp, tc.pattern, got, tc.want)
		}
	}
}
