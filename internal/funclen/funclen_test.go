// Package funclen holds the regression guard for "no non-kernel function over 100 lines": it
// parses every non-test Go file of the module and fails naming each function or method longer
// than MaxLines, except in the compute kernels kernelFile names.
package funclen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// MaxLines is the longest a function may be, counted from the func keyword to its closing
// brace, both lines included.
const MaxLines = 100

// kernelFile reports whether path (slash-separated, relative to the module root) is one of the
// compute kernels the limit exempts: the files of the model's kernel package,
// model/internal/kernels (the SIMD full-resolution, gemm and spectral kernels, with their
// portable twins). Their loops are unrolled by hand for the vector units, and cutting them into
// calls would cost the speed they exist for. Nothing outside that package is exempt, files
// named like a kernel included.
func kernelFile(path string) bool {
	return strings.HasPrefix(path, "model/internal/kernels/")
}

// longFunc is one function over the limit.
type longFunc struct {
	Pos   string // file:line of the func keyword, relative to the module root
	Name  string // Recv.Name for methods
	Lines int
}

// moduleRoot is the module's root: go test runs in the package's folder,
// internal/funclen.
func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the module root %s: %v", root, err)
	}
	return root
}

// skipDir reports whether a folder holds no module code: hidden folders, testdata and vendor
// (as the go tool skips them), and nested modules.
func skipDir(root, path string, d fs.DirEntry) bool {
	name := d.Name()
	if path == root {
		return false
	}
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// funcName is Name, or Recv.Name for a method (pointer receivers without the star).
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok { // generic receiver T[K]
		typ = idx.X
	}
	if idx, ok := typ.(*ast.IndexListExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// longFuncs lists the functions over MaxLines in the module's non-test, non-kernel files,
// longest first.
func longFuncs(t *testing.T, root string) []longFunc {
	var long []longFunc
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(root, path, d) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if kernelFile(rel) {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Pos()).Line
			lines := fset.Position(fn.End()).Line - start + 1
			if lines > MaxLines {
				long = append(long, longFunc{Pos: rel + ":" + strconv.Itoa(start), Name: funcName(fn), Lines: lines})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(long, func(i, j int) bool {
		if long[i].Lines != long[j].Lines {
			return long[i].Lines > long[j].Lines
		}
		return long[i].Pos < long[j].Pos
	})
	return long
}

// TestNoLongFunctions holds every non-kernel function to MaxLines: short functions that each
// say one thing. Split a function it names rather than raising MaxLines.
func TestNoLongFunctions(t *testing.T) {
	for _, f := range longFuncs(t, moduleRoot(t)) {
		t.Errorf("%s: %s is %d lines (limit %d): split it into functions that each say one thing", f.Pos, f.Name, f.Lines, MaxLines)
	}
}

// TestKernelExemption keeps the exemption to the kernels' package: a file of model, or a file
// named like a kernel elsewhere, is not exempt.
func TestKernelExemption(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"model/internal/kernels/fullres_simd_amd64.go", true},
		{"model/internal/kernels/gemm.go", true},
		{"model/internal/kernels/gemm_amd64.go", true},
		{"model/internal/kernels/fullres.go", true},
		{"model/internal/kernels/spectral_simd_amd64.go", true},
		{"model/fullres_select.go", false},
		{"model/fullres_simd_amd64.go", false}, // the kernels left model: a file named so there is not one
		{"model/gemm.go", false},
		{"model/train.go", false},
		{"model/spectral.go", false},
		{"spectral/resample.go", false},
		{"geo/gemm.go", false},
	} {
		if got := kernelFile(tc.path); got != tc.want {
			t.Errorf("kernelFile(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
