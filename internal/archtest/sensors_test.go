package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sensorStems are the sensors pnec reads, named as geo must not name them
// (case matters: "emit" is also a verb in geo's own names). The names the
// sensors' files give (sensorNames) are added to them, so a new sensor is
// covered without this list.
var sensorStems = []string{"AVIRIS", "DESIS", "EMIT", "EnMAP", "PRISMA", "Tanager"}

// sensorNames reads package sensors' files (tests left out) for what names
// a sensor: the string each Name method returns and the values of the
// Product constants.
func sensorNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(moduleRoot, "sensors", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	add := func(lit ast.Expr) {
		if b, ok := lit.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if v, err := strconv.Unquote(b.Value); err == nil && v != "" && !slices.Contains(names, v) {
				names = append(names, v)
			}
		}
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Name" || d.Body == nil || len(d.Body.List) != 1 {
					continue
				}
				if r, ok := d.Body.List[0].(*ast.ReturnStmt); ok && len(r.Results) == 1 {
					add(r.Results[0])
				}
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if strings.HasPrefix(n.Name, "Product") && i < len(vs.Values) {
							add(vs.Values[i])
						}
					}
				}
			}
		}
	}
	return names
}

// mentions are the names of words that text mentions, one line each:
// "file:line: name".
func mentions(file, text string, words []string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, file+":"+strconv.Itoa(i+1)+": "+w)
			}
		}
	}
	return out
}

// TestGeoNamesNoSensor: geo is GDAL access with no sensor in it (its
// non-test files name no sensor, not even in a comment), so that a sensor
// is all in its file of package sensors and geo's primitives are named for
// what they do.
func TestGeoNamesNoSensor(t *testing.T) {
	names := sensorNames(t)
	if len(names) < 2*len(sensorStems) {
		t.Fatalf("read %d sensor and product names in sensors/ (%q): not the sensors' files", len(names), names)
	}
	words := append(slices.Clone(sensorStems), names...)
	files, err := filepath.Glob(filepath.Join(moduleRoot, "geo", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("read %d files in geo: not the package", len(files))
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mentions(filepath.Base(name), string(text), words) {
			t.Errorf("geo/%s: geo names no sensor (its reader is package sensors'; name geo's primitive for what it does)", m)
		}
	}
}

// TestMentionsCatch: the check reports a sensor named in a comment or a
// string, and leaves the verb alone.
func TestMentionsCatch(t *testing.T) {
	text := "package geo\n\n// reads EnMAP's masks\nconst p = \"PRISMA L2D\"\nfunc emitGDALError() {}\n"
	got := mentions("x.go", text, sensorStems)
	want := []string{"x.go:3: EnMAP", "x.go:4: PRISMA"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
