package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pnec/pnec/pipelines"
	"github.com/pnec/pnec/processor"
	"github.com/pnec/pnec/stac"
)

// TestLibraryErrorsNameNoFlags: the libraries' error messages (the format
// strings of fmt.Errorf and errors.New outside cmd/, tests and benchmark
// tools) name no command-line flag; cmd/pnec words typed errors with its
// flags (withFlagHints). They once said "give --max-memory", "--asset",
// "--shards".
func TestLibraryErrorsNameNoFlags(t *testing.T) {
	flagLike := regexp.MustCompile(`(^|[\s(])--[a-z][a-z-]+`)
	root := filepath.Join("..", "..")
	var found []string
	for _, dir := range []string{"pipelines", "processor", "geo", "model", "tiling", "evaluation", "synth", "importer", "matfile", "grid", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			fs := token.NewFileSet()
			f, err := parser.ParseFile(fs, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !((sel.Sel.Name == "Errorf" || sel.Sel.Name == "Sprintf") && isIdent(sel.X, "fmt") || sel.Sel.Name == "New" && isIdent(sel.X, "errors")) {
					return true
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && flagLike.MatchString(s) {
					found = append(found, fs.Position(lit.Pos()).String()+": "+s)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range found {
		t.Errorf("library message names a flag: %s", f)
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// TestFlagHints: cmd/pnec adds its flags to the libraries' typed errors,
// also when a batch wraps them (pipelines.FailedError).
func TestFlagHints(t *testing.T) {
	budget := &processor.BudgetError{Cols: 100, Rows: 100, Bands: 3, NeedBytes: 300 << 20, BudgetBytes: 100 << 20}
	forced := &processor.BudgetError{Cols: 100, Rows: 100, Bands: 3, TileSize: 512, NeedBytes: 3 << 30, BudgetBytes: 1 << 30}
	asset := &pipelines.InputError{Input: "x.json", Err: pipelines.ErrNoAsset}
	batch := &pipelines.FailedError{Failed: 1, Scenes: 2, First: budget.Error(), FirstErr: budget}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{budget, "give --max-memory 300M or more"},
		{forced, "give --max-memory 3.0G or more, or a smaller --tile"},
		{asset, "choose one with --asset"},
		{batch, "give --max-memory 300M or more"},
		{&stac.LicenseError{License: "mine"}, `--license "mine": want an SPDX`},
	} {
		got := withFlagHints(tc.err)
		if !strings.Contains(got.Error(), tc.want) {
			t.Errorf("withFlagHints(%q) = %q, want it to say %q", tc.err, got, tc.want)
		}
	}
	if withFlagHints(nil) != nil {
		t.Error("withFlagHints(nil) is not nil")
	}
}
