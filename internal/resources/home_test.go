package resources

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the repository's root, two folders up.
const moduleRoot = "../.."

// home is this package's folder, relative to the module's root.
const home = "internal/resources"

// gdalKnobsFile is geo's file of plain setters for GDAL's knobs (geo.Knobs):
// the one place, besides this package, that may call GDAL's setters.
const gdalKnobsFile = "geo/resources.go"

// knobEnv are the environment variables and GDAL options that are the
// process settings' own: a call that sets one (os.Setenv, geo.SetConfig,
// SetConfigValue, ...) outside this package turns a knob behind the policy.
var knobEnv = []string{"GOGC", "GOMEMLIMIT", "GDAL_NUM_THREADS", "GDAL_CACHEMAX", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", HeapGuardEnv}

// TestOneHome scans the module's Go source (tests left out) and checks
// that the process settings are turned here and nowhere else: the Go
// runtime's (debug.SetGCPercent, debug.SetMemoryLimit) and glibc's
// (mallopt) only in this package, GDAL's (CPLSetConfigOption,
// GDALSetCacheMax) only in geo's setters, which only this package calls;
// no knob's variable set outside this package; and no init() that turns a
// knob or applies the policy (the settings are applied at the command's
// start, or at a library's first use, not when a package is loaded).
func TestOneHome(t *testing.T) {
	files := 0
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" || d.Name() == "shared") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		files++
		for _, problem := range knobsTurned(t, path, rel) {
			t.Errorf("%s: %s", rel, problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("scanned %d Go files under %s: not the module", files, moduleRoot)
	}
}

// knobsTurned lists what the file at path (rel from the module's root)
// does to the process settings that it should leave to the policy.
func knobsTurned(t *testing.T, path, rel string) []string {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inHome := filepath.Dir(rel) == home
	var out []string
	if !inHome && strings.Contains(string(src), "mallopt(") {
		out = append(out, "calls mallopt: glibc's settings are the resource policy's (internal/resources)")
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	debugName := importName(f, "runtime/debug")
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		pkg, name := callee(call)
		switch {
		case debugName != "" && pkg == debugName && (name == "SetGCPercent" || name == "SetMemoryLimit") && !inHome:
			out = append(out, "calls debug."+name+": the Go runtime's settings are the resource policy's")
		case pkg == "C" && (strings.HasPrefix(name, "GDALSetCacheMax") || name == "CPLSetConfigOption") && rel != gdalKnobsFile:
			out = append(out, "calls C."+name+": GDAL's process settings are set by geo.Knobs ("+gdalKnobsFile+") for the policy")
		case (name == "SetConfigValue" || name == "SetBlockCacheMaxBytes") && !inHome:
			out = append(out, "calls "+name+": geo.Knobs' setters are for the resource policy only")
		case strings.HasPrefix(name, "Set") && !inHome:
			if k := knobArgument(call); k != "" {
				out = append(out, "sets "+k+" with "+name+": that knob is the resource policy's")
			}
		}
		return true
	})
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "init" || fn.Recv != nil || strings.HasPrefix(rel, "cmd/") {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				pkg, name := callee(call)
				if pkg == "C" || pkg == "resources" || slices.Contains([]string{"register", "Start", "GuardHeap", "BackendOpening", "Reserve", "Setenv", "SetConfig", "setConfigValue", "SetGCPercent", "SetMemoryLimit"}, name) {
					out = append(out, "init() calls "+strings.TrimPrefix(pkg+"."+name, ".")+": process settings are applied by the resource policy at the command's start, not when a package loads")
				}
			}
			return true
		})
	}
	return out
}

// importName is the name the file uses for the package imported as path
// ("" when it does not import it).
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}

// callee is the package (or receiver expression's name) and the name of
// the function call calls: ("debug", "SetGCPercent"), ("", "register").
func callee(call *ast.CallExpr) (pkg, name string) {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return "", fn.Name
	case *ast.SelectorExpr:
		if x, ok := fn.X.(*ast.Ident); ok {
			return x.Name, fn.Sel.Name
		}
		return "", fn.Sel.Name
	}
	return "", ""
}

// knobArgument is the knob a call's arguments name as a string ("GOGC",
// "GDAL_NUM_THREADS=16" inside a []string{...}), "" when none.
func knobArgument(call *ast.CallExpr) string {
	found := ""
	for _, a := range call.Args {
		ast.Inspect(a, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || found != "" {
				return found == ""
			}
			s, _ := strconv.Unquote(lit.Value)
			for _, k := range knobEnv {
				if s == k || strings.HasPrefix(s, k+"=") {
					found = k
				}
			}
			return found == ""
		})
	}
	return found
}
