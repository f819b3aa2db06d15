package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// The Options section of every docs/<command>.md page is the command's own
// --help, copied between these markers, so that the pages cannot drift from
// the flags. `go test -run Docs ./cmd/pnec -update` rewrites the blocks.
const (
	optionsBegin = "<!-- options:begin (generated from --help by cmd/pnec/docs_test.go; go test ./cmd/pnec -run Docs -update) -->"
	optionsEnd   = "<!-- options:end -->"
)

// docsUpdateFlag is looked up rather than owned: other test files of this
// package may define -update for their golden files, and a flag defined twice
// panics. Package-level variables are initialised before init functions run,
// so a flag another file defines that way is already there.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files and the generated parts of docs/*.md")
	}
}

func docsUpdate() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	b, _ := g.Get().(bool)
	return b
}

// docPages maps each page under docs/ to the command path whose --help it
// documents.
var docPages = map[string][]string{
	"backends.md":   {"backends"},
	"batch.md":      {"batch"},
	"classify.md":   {"classify"},
	"evaluate.md":   {"evaluate"},
	"experiment.md": {"experiment"},
	"import.md":     {"import", "mat"},
	"info.md":       {"info"},
	"synth.md":      {"synth"},
	"model-item.md": {"model-item"},
	"tiles.md":      {"tiles"},
	"train.md":      {"train"},
}

// globalFlags are valid with every command (the app's flags and urfave/cli's).
var globalFlags = map[string]bool{"config": true, "verbose": true, "help": true, "h": true, "version": true, "v": true}

const docsDir = "../../docs"

// renderHelp runs the real application with COMMAND --help and returns what
// it prints.
func renderHelp(t *testing.T, path []string) string {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	args := append(append([]string{"pnec"}, path...), "--help")
	if err := app.RunContext(context.Background(), args); err != nil {
		t.Fatalf("pnec %s --help: %v", strings.Join(path, " "), err)
	}
	return out.String()
}

// optionsBlock is the OPTIONS section of a command's help as it appears in
// its page: a text code block between the markers.
func optionsBlock(help string) (string, error) {
	i := strings.Index(help, "\nOPTIONS:\n")
	if i < 0 {
		return "", fmt.Errorf("no OPTIONS section in the help text")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(help[i+len("\nOPTIONS:\n"):], "\n"), "\n") {
		lines = append(lines, strings.TrimRight(strings.TrimPrefix(l, "   "), " "))
	}
	return optionsBegin + "\n```text\n" + strings.Join(lines, "\n") + "\n```\n" + optionsEnd, nil
}

// replaceOptions returns page with its marked block replaced by block.
func replaceOptions(page, block string) (string, error) {
	b := strings.Index(page, "<!-- options:begin")
	e := strings.Index(page, optionsEnd)
	if b < 0 || e < b {
		return "", fmt.Errorf("no %q ... %q markers around the Options block", "<!-- options:begin", optionsEnd)
	}
	return page[:b] + block + page[e+len(optionsEnd):], nil
}

func TestDocsOptionsMatchHelp(t *testing.T) {
	names := make([]string, 0, len(docPages))
	for n := range docPages {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		path := docPages[name]
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(docsDir, name)
			page, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%s: %v (every command has a page)", file, err)
			}
			block, err := optionsBlock(renderHelp(t, path))
			if err != nil {
				t.Fatalf("pnec %s --help: %v", strings.Join(path, " "), err)
			}
			want, err := replaceOptions(string(page), block)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if want == string(page) {
				return
			}
			if docsUpdate() {
				if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: Options block regenerated", file)
				return
			}
			t.Errorf("%s: the Options block differs from 'pnec %s --help'; regenerate it with: go test ./cmd/pnec -run Docs -update", file, strings.Join(path, " "))
		})
	}
	// A command without a page is a gap in the docs.
	for _, c := range newApp().Commands {
		if _, ok := docPages[c.Name+".md"]; !ok {
			t.Errorf("command %q has no docs/%s.md page (add it to docPages)", c.Name, c.Name)
		}
	}
}

// commandFlags lists each command path ("import mat", "classify") with the
// names of its flags, aliases included.
func commandFlags() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			key := strings.TrimSpace(prefix + " " + c.Name)
			names := map[string]bool{}
			for _, f := range c.Flags {
				for _, n := range f.Names() {
					names[n] = true
				}
			}
			out[key] = names
			walk(key, c.Subcommands)
		}
	}
	walk("", newApp().Commands)
	return out
}

var (
	fenceRE  = regexp.MustCompile("(?s)```[^\n]*\n(.*?)```")
	inlineRE = regexp.MustCompile("`([^`\n]+)`")
	// A bare flag in inline code: `--tile`, `--tile 256`, `--co KEY=VALUE`.
	bareFlagRE = regexp.MustCompile(`^--([a-z0-9][a-z0-9-]*)`)
	// Shell command separators, and the steps of a `gdal raster pipeline`.
	commandSepRE = regexp.MustCompile(`;|&&|\|\|?|\s!\s`)
)

// isPnec says whether a shell word runs pnec: pnec, bin/pnec, $PNEC (the
// bench rows' variable); not a path such as ./cmd/pnec.
func isPnec(word string) bool {
	return word == "pnec" || strings.HasSuffix(word, "bin/pnec") || word == "$PNEC"
}

// docFlagProblem is a flag a page names for a command that lacks it.
type docFlagProblem struct {
	Command, Flag, Text string
}

// commandLines splits code into logical command lines: backslash-newline
// continues a line; ;, && , || and | end a command.
func commandLines(code string) []string {
	code = strings.ReplaceAll(code, "\\\n", " ")
	var out []string
	for _, line := range strings.Split(code, "\n") {
		for _, part := range commandSepRE.Split(line, -1) {
			out = append(out, part)
		}
	}
	return out
}

// checkCommandText finds `pnec COMMAND ... --flag` in one command line and
// reports the flags COMMAND does not have.
func checkCommandText(text string, flags map[string]map[string]bool) []docFlagProblem {
	var problems []docFlagProblem
	fields := strings.Fields(text)
	for i := 0; i < len(fields); i++ {
		tok := strings.Trim(fields[i], `"'(`)
		if !isPnec(tok) {
			continue
		}
		// A command inside a quoted string (--command "pnec ...") ends with it.
		quote := ""
		if q := fields[i][:1]; q == `"` || q == "'" {
			quote = q
		}
		j := i + 1
		// Global flags before the command: --config takes a value.
		for j < len(fields) && strings.HasPrefix(fields[j], "-") {
			name := strings.TrimLeft(strings.SplitN(fields[j], "=", 2)[0], "-")
			if !globalFlags[name] {
				problems = append(problems, docFlagProblem{"pnec", fields[j], text})
			}
			if name == "config" && !strings.Contains(fields[j], "=") {
				j++
			}
			j++
		}
		if j >= len(fields) {
			continue
		}
		cmd := fields[j]
		if _, ok := flags[cmd]; !ok {
			continue // prose such as "pnec: scene.tif: ..." or a placeholder
		}
		if j+1 < len(fields) {
			if _, ok := flags[cmd+" "+fields[j+1]]; ok {
				cmd += " " + fields[j+1]
				j++
			}
		}
		for k := j + 1; k < len(fields); k++ {
			f := strings.Trim(fields[k], `"'[](),.`)
			if isPnec(f) {
				break // the next command on the line is checked on its own
			}
			if strings.HasPrefix(f, "--") {
				name := strings.SplitN(strings.TrimPrefix(f, "--"), "=", 2)[0]
				if name != "" && !flags[cmd][name] && !globalFlags[name] {
					problems = append(problems, docFlagProblem{cmd, "--" + name, strings.TrimSpace(text)})
				}
			}
			if quote != "" && strings.HasSuffix(fields[k], quote) {
				break
			}
		}
		i = j
	}
	return problems
}

// checkDoc checks one Markdown text. page names the command the page
// documents ("" for README and the topic pages): on a command page a bare
// flag in inline code (`--tile 256`) must be that command's.
func checkDoc(md, page string, flags map[string]map[string]bool) []docFlagProblem {
	// The generated Options block is the help itself.
	if b, e := strings.Index(md, "<!-- options:begin"), strings.Index(md, optionsEnd); b >= 0 && e > b {
		md = md[:b] + md[e+len(optionsEnd):]
	}
	var problems []docFlagProblem
	for _, m := range fenceRE.FindAllStringSubmatch(md, -1) {
		for _, line := range commandLines(m[1]) {
			problems = append(problems, checkCommandText(line, flags)...)
		}
	}
	prose := fenceRE.ReplaceAllString(md, "")
	for _, m := range inlineRE.FindAllStringSubmatch(prose, -1) {
		span := m[1]
		if strings.Contains(span, "pnec") {
			for _, line := range commandLines(span) {
				problems = append(problems, checkCommandText(line, flags)...)
			}
			continue
		}
		if page == "" {
			continue
		}
		if f := bareFlagRE.FindStringSubmatch(span); f != nil && !flags[page][f[1]] && !globalFlags[f[1]] {
			problems = append(problems, docFlagProblem{page, "--" + f[1], span})
		}
	}
	return problems
}

func TestDocsNameOnlyRealFlags(t *testing.T) {
	flags := commandFlags()
	files, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	if len(files) < len(docPages)+1 {
		t.Fatalf("found %d Markdown files, want at least %d: %v", len(files), len(docPages)+1, files)
	}
	checked := 0
	for _, file := range files {
		md, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		page := ""
		if p, ok := docPages[filepath.Base(file)]; ok && filepath.Dir(file) == docsDir {
			page = strings.Join(p, " ")
		}
		for _, p := range checkDoc(string(md), page, flags) {
			t.Errorf("%s: names %s, which 'pnec %s' does not have: %s", file, p.Flag, p.Command, p.Text)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no Markdown file checked")
	}
}

// TestDocsFlagCheckFinds keeps the checker honest: each case holds a flag
// that does or does not exist.
func TestDocsFlagCheckFinds(t *testing.T) {
	flags := commandFlags()
	cases := []struct {
		name, md, page string
		want           []string // flags reported
	}{
		{"code block, real flags", "```sh\npnec classify --model m.pnec --scene s.tif --out p.tif --tile 256\n```\n", "", nil},
		{"code block, unknown flag", "```sh\npnec classify --model m.pnec --tiles 256 s.tif p.tif\n```\n", "", []string{"--tiles"}},
		{"continued line", "```sh\npnec train --scene s.tif \\\n    --labels l.tif --epoch 5\n```\n", "", []string{"--epoch"}},
		{"subcommand", "```\npnec import mat --cube a.mat --out a.tif --labels-out b.tif\n```\n", "", nil},
		{"subcommand, flag of another", "`pnec import mat --scene a.tif`", "", []string{"--scene"}},
		{"global flags before the command", "`pnec --config GDAL_CACHEMAX=512 --verbose info s.tif`", "", nil},
		{"unknown global flag", "`pnec --quiet info s.tif`", "", []string{"--quiet"}},
		{"two commands in a pipe", "```\npnec tiles --scene s.tif --geojson | pnec info --geojson x\n```\n", "", []string{"--geojson"}},
		{"bare flag on its command's page", "use `--max-memory 4G`", "classify", nil},
		{"bare flag of another command", "use `--epochs 5`", "classify", []string{"--epochs"}},
		{"bare flag in README is not attributed", "use `--epochs 5`", "", nil},
		{"quoted command ends with its quote", "```\ngdal raster pipeline ! external --command \"pnec classify --model m.pnec <INPUT> <OUTPUT>\" ! reproject --dst-crs EPSG:4326\n```\n", "", nil},
		{"quoted command, unknown flag", "```\nsbatch --wrap 'pnec batch --model m.pnec --mem 8G in/' --mem=8G\n```\n", "", []string{"--mem"}},
		{"a path ending in pnec is no command", "`go test ./cmd/pnec -run Docs --count 1`", "", nil},
		{"not a command", "`pnec: scene.tif: no valid pixels --x`", "", nil},
		{"generated block skipped", optionsBegin + "\n```text\n--nope\n```\n" + optionsEnd + "\n`pnec info --nope`", "info", []string{"--nope"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range checkDoc(tc.md, tc.page, flags) {
				got = append(got, p.Flag)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("reported %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDocsLinksResolve fails when README.md or a docs page links to a file
// of the repository that is not there (a page renamed or moved).
func TestDocsLinksResolve(t *testing.T) {
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	files, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	links := 0
	for _, file := range files {
		md, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(md), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target = strings.SplitN(target, "#", 2)[0]
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
				t.Errorf("%s: link to %s: %v", file, m[1], err)
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative link found: the link pattern is broken")
	}
}
