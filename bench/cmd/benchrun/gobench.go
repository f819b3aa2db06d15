package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// buildPnec builds the pnec command the e2e rows run, with the SIMD
// experiment the model's kernels need.
func buildPnec(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/pnec")
	cmd.Dir = root
	cmd.Env = goEnv()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build pnec: %w", err)
	}
	return nil
}

// goEnv is the environment for go commands: GOEXPERIMENT=simd unless set.
func goEnv() []string {
	env := os.Environ()
	if os.Getenv("GOEXPERIMENT") == "" {
		env = append(env, "GOEXPERIMENT=simd")
	}
	return env
}

// benchPackages lists the module's packages that declare a Go benchmark, so
// that go test compiles only those test binaries; with their benchmarks'
// doc comments (first sentence), keyed by package then function name.
func benchPackages(ctx context.Context, root string) ([]string, map[string]map[string]string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}", "./...")
	cmd.Dir = root
	cmd.Env = goEnv()
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []string
	docs := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		d := benchDocs(dir)
		if len(d) > 0 {
			pkgs = append(pkgs, path)
			docs[path] = d
		}
	}
	return pkgs, docs, nil
}

// slowBenchPackages are the packages whose benchmarks take the most time
// (model's train and run Pavia-size networks, some 200 epochs), by import
// path suffix: they run last, so that they get what the quick packages
// leave of the time limit. In the alphabetical order their even share of
// the limit was 2m8s at 89be540 and their later benchmarks were missing.
var slowBenchPackages = []string{"/model"}

// slowPackagesLast is pkgs with slowBenchPackages moved to the end, the
// order otherwise kept.
func slowPackagesLast(pkgs []string) []string {
	slow := func(p string) bool {
		return slices.ContainsFunc(slowBenchPackages, func(s string) bool { return strings.HasSuffix(p, s) })
	}
	out := slices.DeleteFunc(slices.Clone(pkgs), slow)
	for _, p := range pkgs {
		if slow(p) {
			out = append(out, p)
		}
	}
	return out
}

// benchDocs parses dir's _test.go files and returns Benchmark functions with
// the first sentence of their doc comment ("" when undocumented).
func benchDocs(dir string) map[string]string {
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(src, []byte("func Benchmark")) {
			continue
		}
		af, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			continue
		}
		for _, decl := range af.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Benchmark") {
				continue
			}
			docs[fd.Name.Name] = firstSentence(fd.Doc.Text(), fd.Name.Name)
		}
	}
	return docs
}

// firstSentence returns the comment's first sentence without the leading
// function name ("BenchmarkX measures ..." -> "measures ...").
func firstSentence(doc, name string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	doc = strings.TrimPrefix(doc, name+" ")
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i+1]
	}
	return doc
}

// runGoBenchmarks runs go test -bench over the packages with benchmarks
// and aggregates the results per benchmark and unit.
func runGoBenchmarks(ctx context.Context, o options, scratch string) ([]Row, []string, error) {
	pkgs, docs, err := benchPackages(ctx, o.Root)
	if err != nil {
		return nil, nil, err
	}
	if len(pkgs) == 0 {
		return nil, []string{"no Go benchmarks found"}, nil
	}
	pkgs = slowPackagesLast(pkgs)
	logf("Go benchmarks in %d packages: %s (count %d, benchtime %s)", len(pkgs), strings.Join(pkgs, " "), o.Count, o.BenchTime)
	// One go test per package, each with a share of the remaining time, so
	// that a package with slow benchmarks cannot starve the others.
	logPath := filepath.Join(scratch, "go-bench.txt")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	defer logFile.Close()
	res := &benchResult{values: map[string]map[string][]float64{}}
	var notes []string
	deadline := time.Now().Add(o.GoLimit)
	for i, pkg := range pkgs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		share := time.Until(deadline) / time.Duration(len(pkgs)-i)
		if share < 15*time.Second {
			share = 15 * time.Second
		}
		gctx, cancel := context.WithTimeout(ctx, share)
		args := []string{"test", "-run", "^$", "-bench", o.Filter, "-benchmem", "-count", strconv.Itoa(o.Count),
			"-benchtime", o.BenchTime, "-timeout", (share + time.Minute).String(), pkg}
		cmd := exec.CommandContext(gctx, "go", args...)
		cmd.Dir = o.Root
		cmd.Env = goEnv()
		if o.Mode == "quick" {
			cmd.Env = append(cmd.Env, "PNEC_BENCH_QUICK=1")
		}
		cmd.WaitDelay = 5 * time.Second
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			cancel()
			return nil, nil, fmt.Errorf("go test -bench %s: %w", pkg, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait(); pw.Close() }()
		parseGoBenchInto(res, pkg, io.TeeReader(pr, io.MultiWriter(logFile, os.Stderr)))
		runErr := <-done
		if gctx.Err() == context.DeadlineExceeded {
			notes = append(notes, fmt.Sprintf("%s: benchmarks stopped at their %s share of the time limit; later ones are missing", shortPkg(pkg), share.Round(time.Second)))
		} else if runErr != nil {
			notes = append(notes, fmt.Sprintf("%s: go test -bench exited with %v", shortPkg(pkg), runErr))
		}
		cancel()
	}
	rows := res.rows(docs)
	for _, f := range res.failed {
		rows = append(rows, Row{ID: f, Kind: "go", Status: "failed", Reason: "go test reported FAIL"})
	}
	return rows, notes, nil
}

// benchResult collects parsed go test -bench output.
type benchResult struct {
	order  []string                        // pkg + "\x00" + name, first seen order
	values map[string]map[string][]float64 // key -> unit -> values
	failed []string
}

var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(.+)$`)
	procs     = regexp.MustCompile(`-\d+$`)
)

// parseGoBench reads go test -bench output: "pkg:" lines set the package,
// benchmark lines give iterations then value-unit pairs (ns/op, B/op,
// allocs/op, MB/s and b.ReportMetric units), "FAIL pkg" lines mark failures.
func parseGoBench(r io.Reader) *benchResult {
	res := &benchResult{values: map[string]map[string][]float64{}}
	parseGoBenchInto(res, "", r)
	return res
}

// parseGoBenchInto adds r's results to res; pkg is the package until a
// "pkg:" line names one.
func parseGoBenchInto(res *benchResult, pkg string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if f, ok := strings.CutPrefix(line, "FAIL\t"); ok {
			res.failed = append(res.failed, strings.Fields(f)[0])
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		// A benchmark that measures once per process (whole-scene rows) reports
		// 0 iterations and NaN on its repeats: those lines carry no sample.
		if m[2] == "0" {
			continue
		}
		fields := strings.Fields(m[3])
		if len(fields) < 2 || len(fields)%2 != 0 {
			continue
		}
		name := procs.ReplaceAllString(m[1], "")
		key := pkg + "\x00" + name
		units, ok := res.values[key]
		if !ok {
			units = map[string][]float64{}
			res.values[key] = units
			res.order = append(res.order, key)
		}
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil || fields[i+1] == "" || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			units[fields[i+1]] = append(units[fields[i+1]], v)
		}
	}
}

// unitOrder puts custom metrics first, then time, then memory.
func unitOrder(u string) int {
	switch u {
	case "ns/op":
		return 1
	case "MB/s":
		return 2
	case "B/op":
		return 3
	case "allocs/op":
		return 4
	}
	return 0
}

func (res *benchResult) rows(docs map[string]map[string]string) []Row {
	var rows []Row
	for _, key := range res.order {
		pkg, name, _ := strings.Cut(key, "\x00")
		top, _, _ := strings.Cut(name, "/")
		row := Row{ID: shortPkg(pkg) + "." + name, Kind: "go", Package: pkg, Status: "ok", Description: docs[pkg][top]}
		units := make([]string, 0, len(res.values[key]))
		for u := range res.values[key] {
			units = append(units, u)
		}
		sort.Slice(units, func(i, j int) bool {
			if a, b := unitOrder(units[i]), unitOrder(units[j]); a != b {
				return a < b
			}
			return units[i] < units[j]
		})
		for _, u := range units {
			vals := res.values[key][u]
			row.Runs = max(row.Runs, len(vals))
			row.Metrics = append(row.Metrics, summarize(u, vals))
		}
		rows = append(rows, row)
	}
	return rows
}

// shortPkg drops the module path: github.com/pnec/pnec/geo -> geo.
func shortPkg(p string) string {
	if s, ok := strings.CutPrefix(p, "github.com/pnec/pnec/"); ok {
		return s
	}
	return p
}

// summarize returns the median, minimum and maximum of vals.
func summarize(unit string, vals []float64) Metric {
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Metric{Unit: unit, Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}
