package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// e2eRow is one line of bench/e2e.tsv.
type e2eRow struct {
	ID          string
	Modes       []string // "quick", "full"
	Description string
	Setup       string // "" when "-"
	Timed       string
	// Work is how much one timed run processes, for a throughput column
	// ("21362200 samples" -> samples/s); zero when absent.
	WorkAmount float64
	WorkUnit   string
	Line       int
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// parseE2E reads the TSV format documented at the top of bench/e2e.tsv.
func parseE2E(r io.Reader) ([]e2eRow, error) {
	var rows []e2eRow
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 && len(f) != 6 {
			return nil, fmt.Errorf("line %d: %d tab-separated fields, want 5 or 6 (ID, modes, description, setup, timed command[, work])", n, len(f))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		row := e2eRow{ID: f[0], Description: f[2], Setup: f[3], Timed: f[4], Line: n}
		if !idPattern.MatchString(row.ID) {
			return nil, fmt.Errorf("line %d: ID %q: want letters, digits, '.', '_' or '-'", n, row.ID)
		}
		if prev, dup := seen[row.ID]; dup {
			return nil, fmt.Errorf("line %d: ID %s already used on line %d", n, row.ID, prev)
		}
		seen[row.ID] = n
		for _, m := range strings.Split(f[1], ",") {
			m = strings.TrimSpace(m)
			if m != "quick" && m != "full" {
				return nil, fmt.Errorf("line %d: mode %q: want quick, full or quick,full", n, m)
			}
			row.Modes = append(row.Modes, m)
		}
		if row.Setup == "-" {
			row.Setup = ""
		}
		if row.Timed == "" || row.Timed == "-" {
			return nil, fmt.Errorf("line %d: row %s has no timed command", n, row.ID)
		}
		if len(f) == 6 && f[5] != "" && f[5] != "-" {
			amt, unit, ok := strings.Cut(f[5], " ")
			v, err := strconv.ParseFloat(amt, 64)
			if !ok || err != nil || v <= 0 || strings.TrimSpace(unit) == "" {
				return nil, fmt.Errorf("line %d: work %q: want AMOUNT UNIT, e.g. \"21362200 samples\"", n, f[5])
			}
			row.WorkAmount, row.WorkUnit = v, strings.TrimSpace(unit)
		}
		rows = append(rows, row)
	}
	return rows, sc.Err()
}

func (r e2eRow) inMode(mode string) bool {
	for _, m := range r.Modes {
		if m == mode {
			return true
		}
	}
	return false
}

// needsData reports whether a command refers to $DATA.
func needsData(cmd string) bool {
	return strings.Contains(cmd, "$DATA") || strings.Contains(cmd, "${DATA")
}

// skipExit is the exit status by which a row's command says "skip me"
// (the automake convention); its last stderr line is the reason.
const skipExit = 77

// runE2E runs the rows of the current mode.
func runE2E(ctx context.Context, o options, pnec, scratch string) ([]Row, error) {
	f, err := os.Open(under(o.Root, o.E2E))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := parseE2E(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.E2E, err)
	}
	gnuTime := "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		logf("no %s (Debian package 'time'): peak RSS is not measured", gnuTime)
		gnuTime = ""
	}
	var out []Row
	for _, r := range rows {
		if !r.inMode(o.Mode) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, runRow(ctx, o, r, pnec, scratch, gnuTime))
	}
	return out, nil
}

func runRow(ctx context.Context, o options, r e2eRow, pnec, scratch, gnuTime string) Row {
	row := Row{ID: r.ID, Kind: "e2e", Description: r.Description, Command: r.Timed, Status: "ok"}
	if !o.Deadline.IsZero() && time.Until(o.Deadline) < 5*time.Second {
		row.Status, row.Reason = "skipped", "the run's time budget was spent before this row"
		logf("e2e %s: skipped (%s)", r.ID, row.Reason)
		return row
	}
	if o.DataDir == "" && (needsData(r.Setup) || needsData(r.Timed)) {
		row.Status, row.Reason = "skipped", "needs $DATA (../shared/data), which is absent"
		logf("e2e %s: skipped (%s)", r.ID, row.Reason)
		return row
	}
	work := filepath.Join(scratch, "e2e", r.ID)
	if err := os.MkdirAll(work, 0o755); err != nil {
		row.Status, row.Reason = "failed", err.Error()
		return row
	}
	defer os.RemoveAll(work)
	env := append(os.Environ(), "PNEC="+pnec, "WORK="+work, "DATA="+o.DataDir, "ROOT="+o.Root)
	if o.Mode == "quick" {
		env = append(env, "PNEC_BENCH_QUICK=1")
	}
	if r.Setup != "" {
		logf("e2e %s: setup", r.ID)
		if _, _, err := bash(ctx, r.Setup, work, env, "", o.limit(2*o.RowLimit)); err != nil {
			row.Status, row.Reason = classify(err)
			logf("e2e %s: setup %s: %s", r.ID, row.Status, row.Reason)
			return row
		}
	}
	var wall, rss, thr []float64
	for i := 0; i < o.Runs; i++ {
		if i > 0 && !o.Deadline.IsZero() && time.Now().After(o.Deadline) {
			row.Reason = fmt.Sprintf("time budget spent after %d runs", i)
			break
		}
		logf("e2e %s: run %d/%d", r.ID, i+1, o.Runs)
		sec, rssKB, err := bash(ctx, r.Timed, work, env, gnuTime, o.limit(o.RowLimit))
		if err != nil {
			row.Status, row.Reason = classify(err)
			logf("e2e %s: %s: %s", r.ID, row.Status, row.Reason)
			break
		}
		wall = append(wall, sec)
		if rssKB > 0 {
			rss = append(rss, rssKB/1024)
		}
		if r.WorkAmount > 0 {
			thr = append(thr, r.WorkAmount/sec)
		}
	}
	row.Runs = len(wall)
	if len(wall) > 0 {
		row.Metrics = append(row.Metrics, summarize("s", wall))
	}
	if len(thr) > 0 {
		row.Metrics = append(row.Metrics, summarize(r.WorkUnit+"/s", thr))
	}
	if len(rss) > 0 {
		row.Metrics = append(row.Metrics, summarize("MiB peak RSS", rss))
	}
	return row
}

// cmdError is a failed command with its exit status and stderr tail.
type cmdError struct {
	status int
	tail   string
	err    error
}

func (e *cmdError) Error() string { return fmt.Sprintf("%v: %s", e.err, e.tail) }

// classify turns a command error into a row status and reason.
func classify(err error) (string, string) {
	var ce *cmdError
	if errors.As(err, &ce) && ce.status == skipExit {
		return "skipped", ce.tail
	}
	return "failed", err.Error()
}

// bash runs command with bash in dir; with gnuTime, under GNU time -v,
// returning wall seconds (measured here) and peak RSS in KiB (from time).
func bash(ctx context.Context, command, dir string, env []string, gnuTime string, limit time.Duration) (float64, float64, error) {
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	timeOut := filepath.Join(dir, ".gnu-time.txt")
	var cmd *exec.Cmd
	if gnuTime != "" {
		cmd = exec.CommandContext(cctx, gnuTime, "-v", "-o", timeOut, "bash", "-c", command)
	} else {
		cmd = exec.CommandContext(cctx, "bash", "-c", command)
	}
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	sec := time.Since(start).Seconds()
	if err != nil {
		status := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		}
		if cctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("over the %s limit", limit)
		}
		return 0, 0, &cmdError{status: status, tail: lastLine(stderr.String()), err: err}
	}
	var rss float64
	if gnuTime != "" {
		if b, err := os.ReadFile(timeOut); err == nil {
			rss = parseGNUTimeRSS(string(b))
		}
	}
	return sec, rss, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "Command exited with") {
			if len(l) > 300 {
				l = l[:300] + "..."
			}
			return l
		}
	}
	return "(no message)"
}

// parseGNUTimeRSS returns "Maximum resident set size (kbytes)" from GNU
// time -v output, 0 when absent.
func parseGNUTimeRSS(s string) float64 {
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Maximum resident set size (kbytes):"); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return 0
}

// limit caps a command's time limit so that the run ends at most 30 s past
// its budget.
func (o options) limit(d time.Duration) time.Duration {
	if o.Deadline.IsZero() {
		return d
	}
	if rem := time.Until(o.Deadline) + 30*time.Second; rem < d {
		return max(rem, time.Second)
	}
	return d
}
