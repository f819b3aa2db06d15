package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// prefixWord is the first word of a message followed by a colon
// ("synth" of "synth: bad layout").
var prefixWord = regexp.MustCompile(`^([a-z][a-z0-9]*): `)

// TestSentinelErrorsHaveNoPrefix: every package-level sentinel error
// (var ErrX = errors.New("...")) says what went wrong without a package
// prefix. The caller that wraps it names the input (a scene, a flag), so
// a prefix would stand in the middle of a one-line message
// ("pnec: --layout x: synth: bad layout") and one rule holds for all.
func TestSentinelErrorsHaveNoPrefix(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	packages := map[string]bool{}
	type sentinel struct {
		pos       token.Pos
		name, msg string
	}
	var sentinels []sentinel
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != moduleRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		packages[f.Name.Name] = true
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Err") || i >= len(vs.Values) {
						continue
					}
					msg, ok := errorsNewText(vs.Values[i])
					if !ok {
						continue
					}
					seen++
					sentinels = append(sentinels, sentinel{name.Pos(), name.Name, msg})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 20 {
		t.Fatalf("found %d sentinel errors under %s: not the module", seen, moduleRoot)
	}
	for _, s := range sentinels {
		if m := prefixWord.FindStringSubmatch(s.msg); m != nil && packages[m[1]] {
			t.Errorf("%s: %s = errors.New(%q): a sentinel's text has no package prefix", fset.Position(s.pos), s.name, s.msg)
		}
	}
}

// errorsNewText is the message of errors.New("...") (ok false for any
// other expression).
func errorsNewText(e ast.Expr) (string, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "New" {
		return "", false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "errors" {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
