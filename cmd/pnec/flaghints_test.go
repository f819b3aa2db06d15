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

// TestLibraryErrorsNameNoFlags: the libraries' strings (every string
// literal of the packages outside cmd/, tests and benchmark tools: error
// messages, report reasons, text reports) name no command-line flag;
// cmd/pnec words typed errors with its flags (withFlagHints). They once
// said "give --max-memory", "--asset", "--shards", "--json gives the WKT",
// "withheld (--on-drift skip)". Arguments of the external programs the
// libraries run (nvidia-smi's --query-gpu=...) and XLA's flags
// (--xla_gpu_...) are not pnec's flags.
func TestLibraryErrorsNameNoFlags(t *testing.T) {
	flagLike := regexp.MustCompile(`(^|[\s(])--[a-z][a-z-]*[a-z]\b`)
	root := filepath.Join("..", "..")
	skipDirs := map[string]bool{"cmd": true, "bench": true, "testdata": true, "scripts": true, "docs": true}
	var found []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fs := token.NewFileSet()
		f, err := parser.ParseFile(fs, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && runsProgram(call) {
				return false
			}
			lit, ok := n.(*ast.BasicLit)
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
	for _, f := range found {
		t.Errorf("library string names a flag: %s", f)
	}
}

// runsProgram says whether call runs an external program, whose arguments
// are that program's flags: exec.Command, exec.CommandContext, nvidiaSMI.
func runsProgram(call *ast.CallExpr) bool {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name == "nvidiaSMI"
	case *ast.SelectorExpr:
		return isIdent(fn.X, "exec") && (fn.Sel.Name == "Command" || fn.Sel.Name == "CommandContext")
	}
	return false
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
