package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sampleBench = `goos: linux
goarch: amd64
pkg: github.com/pnec/pnec/synth
cpu: AMD EPYC
BenchmarkGenerate-2     	       1	1939031714 ns/op	        13.92 Msamples/s	   10592 B/op	     525 allocs/op
BenchmarkGenerate-2     	       2	1539031714 ns/op	        15.50 Msamples/s	   10600 B/op	     525 allocs/op
BenchmarkGenerate-2     	       1	2039031714 ns/op	        12.00 Msamples/s	   10500 B/op	     525 allocs/op
BenchmarkRead/window=512-2 	      10	  1000 ns/op	   2.5 ratio-vs-gdal
PASS
ok  	github.com/pnec/pnec/synth	13.884s
pkg: github.com/pnec/pnec/geo
--- FAIL: BenchmarkBroken
FAIL	github.com/pnec/pnec/geo	0.1s
`

func TestParseGoBench(t *testing.T) {
	res := parseGoBench(strings.NewReader(sampleBench))
	rows := res.rows(map[string]map[string]string{"github.com/pnec/pnec/synth": {"BenchmarkGenerate": "measures synthesis."}})
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2: %+v", len(rows), rows)
	}
	g := rows[0]
	if g.ID != "synth.BenchmarkGenerate" || g.Description != "measures synthesis." || g.Runs != 3 {
		t.Errorf("got row %+v", g)
	}
	want := map[string]Metric{
		"ns/op":      {Unit: "ns/op", Median: 1939031714, Min: 1539031714, Max: 2039031714, N: 3},
		"Msamples/s": {Unit: "Msamples/s", Median: 13.92, Min: 12, Max: 15.5, N: 3},
		"allocs/op":  {Unit: "allocs/op", Median: 525, Min: 525, Max: 525, N: 3},
	}
	got := map[string]Metric{}
	for _, m := range g.Metrics {
		got[m.Unit] = m
	}
	for u, w := range want {
		if got[u] != w {
			t.Errorf("unit %s: got %+v, want %+v", u, got[u], w)
		}
	}
	if g.Metrics[0].Unit != "Msamples/s" {
		t.Errorf("custom metric should come first, got %s", g.Metrics[0].Unit)
	}
	if rows[1].ID != "synth.BenchmarkRead/window=512" || rows[1].Metrics[0].Unit != "ratio-vs-gdal" {
		t.Errorf("got sub-benchmark row %+v", rows[1])
	}
	if len(res.failed) != 1 || res.failed[0] != "github.com/pnec/pnec/geo" {
		t.Errorf("got failed %v, want the geo package", res.failed)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in            []float64
		med, min, max float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{5, 1, 9}, 5, 1, 9},
	} {
		m := summarize("s", tc.in)
		if m.Median != tc.med || m.Min != tc.min || m.Max != tc.max || m.N != len(tc.in) {
			t.Errorf("summarize(%v) = %+v, want median %g min %g max %g", tc.in, m, tc.med, tc.min, tc.max)
		}
	}
}

func TestParseE2E(t *testing.T) {
	good := "# comment\n\nr1\tquick,full\tdesc\t-\techo hi\t100 samples\nr2\tfull\td2\ttrue\tsleep 0\n"
	rows, err := parseE2E(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Setup != "" || rows[0].WorkAmount != 100 || rows[0].WorkUnit != "samples" ||
		!rows[0].inMode("quick") || rows[1].inMode("quick") || rows[1].Setup != "true" {
		t.Errorf("got %+v", rows)
	}
	for name, bad := range map[string]string{
		"fields":    "r1\tfull\tdesc\n",
		"mode":      "r1\tslow\td\t-\techo\n",
		"duplicate": "r1\tfull\td\t-\techo\nr1\tfull\td\t-\techo\n",
		"id":        "r 1\tfull\td\t-\techo\n",
		"work":      "r1\tfull\td\t-\techo\tlots\n",
		"no timed":  "r1\tfull\td\t-\t-\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseE2E(strings.NewReader(bad)); err == nil {
				t.Errorf("parseE2E(%q) accepted a bad row", bad)
			}
		})
	}
}

// TestRepositoryE2E checks that the committed bench/e2e.tsv parses.
func TestRepositoryE2E(t *testing.T) {
	f, err := os.Open("../../e2e.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := parseE2E(f)
	if err != nil {
		t.Fatalf("bench/e2e.tsv: %v", err)
	}
	quick := 0
	for _, r := range rows {
		if r.inMode("quick") {
			quick++
		}
	}
	if len(rows) == 0 || quick == 0 {
		t.Errorf("got %d rows, %d quick; want some of each", len(rows), quick)
	}
}

func TestParseGNUTimeRSS(t *testing.T) {
	out := "\tCommand being timed: \"bash -c true\"\n\tMaximum resident set size (kbytes): 254000\n\tExit status: 0\n"
	if got := parseGNUTimeRSS(out); got != 254000 {
		t.Errorf("got %g, want 254000", got)
	}
	if got := parseGNUTimeRSS("nothing"); got != 0 {
		t.Errorf("got %g, want 0", got)
	}
}

// TestRunRow runs real rows through bash and GNU time: timing, RSS, skip
// (77) and failure statuses.
func TestRunRow(t *testing.T) {
	gnuTime := "/usr/bin/time"
	if _, err := os.Stat(gnuTime); err != nil {
		gnuTime = ""
		t.Log("no /usr/bin/time: RSS not checked")
	}
	o := options{Mode: "full", Runs: 2, RowLimit: 20 * time.Second, DataDir: ""}
	scratch := t.TempDir()
	ctx := context.Background()
	ok := runRow(ctx, o, e2eRow{ID: "ok", Modes: []string{"full"}, Setup: "echo x > f", Timed: "test -f f && sleep 0.2 && test -n \"$WORK\"", WorkAmount: 10, WorkUnit: "things"}, "/bin/true", scratch, gnuTime)
	if ok.Status != "ok" || ok.Runs != 2 {
		t.Fatalf("got %+v, want ok with 2 runs", ok)
	}
	if s := ok.Metrics[0]; s.Unit != "s" || s.Min < 0.2 || s.Max > 10 {
		t.Errorf("wall time %+v, want >= 0.2 s", s)
	}
	if gnuTime != "" && ok.Metrics[len(ok.Metrics)-1].Unit != "MiB peak RSS" {
		t.Errorf("no peak RSS metric in %+v", ok.Metrics)
	}
	skip := runRow(ctx, o, e2eRow{ID: "skip", Timed: "echo 'no GPU here' >&2; exit 77"}, "/bin/true", scratch, gnuTime)
	if skip.Status != "skipped" || skip.Reason != "no GPU here" {
		t.Errorf("got %+v, want skipped with the reason", skip)
	}
	data := runRow(ctx, o, e2eRow{ID: "data", Timed: "ls $DATA"}, "/bin/true", scratch, gnuTime)
	if data.Status != "skipped" {
		t.Errorf("got %+v, want skipped for missing $DATA", data)
	}
	fail := runRow(ctx, o, e2eRow{ID: "fail", Timed: "echo boom >&2; exit 3"}, "/bin/true", scratch, gnuTime)
	if fail.Status != "failed" || !strings.Contains(fail.Reason, "boom") {
		t.Errorf("got %+v, want failed with stderr", fail)
	}
}

func TestWriteMarkdownMarksQuick(t *testing.T) {
	dir := t.TempDir()
	rep := Report{Mode: "quick", Machine: Machine{CPU: "x", Cores: 2},
		E2E: []Row{{ID: "a", Kind: "e2e", Status: "ok", Runs: 1, Metrics: []Metric{{Unit: "s", Median: 1.5, Min: 1, Max: 2, N: 2}}}}}
	p := filepath.Join(dir, "B.md")
	if err := writeMarkdown(p, rep); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	for _, want := range []string{"QUICK run", "| a |", "| 1.500 | 1.000 | 2.000 | s |"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q:\n%s", want, b)
		}
	}
}

func FuzzParseE2E(f *testing.F) {
	f.Add("r1\tquick,full\tdesc\t-\techo hi\t100 samples\n")
	f.Add("# c\nx\tfull\t\t\t\t\n")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := parseE2E(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.Timed == "" || len(r.Modes) == 0 || !idPattern.MatchString(r.ID) {
				t.Errorf("accepted invalid row %+v", r)
			}
		}
	})
}

func FuzzParseGoBench(f *testing.F) {
	f.Add(sampleBench)
	f.Fuzz(func(t *testing.T, s string) {
		res := parseGoBench(strings.NewReader(s))
		for _, r := range res.rows(nil) {
			for _, m := range r.Metrics {
				if m.N == 0 || m.Min > m.Median || m.Median > m.Max {
					t.Errorf("bad summary %+v", m)
				}
			}
		}
	})
}

// TestParseGoBenchSkipsOnceOnlyRepeats: whole-scene benchmarks measure once
// per process and report 0 iterations with NaN on later -count repeats; those
// lines must not reach the report (JSON cannot hold NaN).
func TestParseGoBenchSkipsOnceOnlyRepeats(t *testing.T) {
	out := "pkg: example.com/p\n" +
		"BenchmarkWhole-2   \t       1\t5545271061 ns/op\t       128.1 MiB-peak\n" +
		"BenchmarkWhole-2   \t       0\t               NaN ns/op\t       0 B/op\t       0 allocs/op\n"
	res := parseGoBench(strings.NewReader(out))
	units := res.values["example.com/p\x00BenchmarkWhole"]
	if got := len(units["ns/op"]); got != 1 {
		t.Fatalf("got %d ns/op samples, want 1 (the 0-iteration line skipped)", got)
	}
	if _, ok := units["B/op"]; ok {
		t.Errorf("got B/op from the 0-iteration line, want none")
	}
}

// TestWriteMarkdownNewestTorch: BENCHMARKS.md shows make bench-torch's
// rows (bench/torch.json beside it) when that run is newer than the full
// run's, says so, and keeps the full run's own rows otherwise.
func TestWriteMarkdownNewestTorch(t *testing.T) {
	row := func(ratio float64) TorchRow {
		return TorchRow{Scene: "paviau", Size: "s", Encoder: "cell", Mode: "train", Status: "ok", TimeRatio: ratio, RSSRatio: ratio}
	}
	full := Report{Mode: "full", Started: "2026-11-24T06:00:00Z", Machine: Machine{CPU: "Intel", Cores: 2}, Torch: []TorchRow{row(1.43)}}
	for _, tc := range []struct {
		name      string
		torch     *Report
		want      string
		wantFrom  bool
		wantOther string
	}{
		{"no torch.json", nil, "**1.43**", false, ""},
		{"newer bench-torch", &Report{Started: "2026-11-25T01:55:05Z", Machine: Machine{CPU: "AMD EPYC", Cores: 2, Commit: "abc"}, Torch: []TorchRow{row(0.93)}}, "**0.93**", true, "**1.43**"},
		{"older bench-torch", &Report{Started: "2026-11-23T01:00:00Z", Torch: []TorchRow{row(0.5)}}, "**1.43**", false, "**0.50**"},
		{"empty bench-torch", &Report{Started: "2026-11-26T01:00:00Z"}, "**1.43**", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.torch != nil {
				if err := os.MkdirAll(filepath.Join(dir, "bench"), 0o755); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(tc.torch)
				if err := os.WriteFile(filepath.Join(dir, "bench", "torch.json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(dir, "BENCHMARKS.md")
			if err := writeMarkdown(p, full); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(p)
			md := string(b)
			if !strings.Contains(md, tc.want) {
				t.Errorf("report lacks %q:\n%s", tc.want, md)
			}
			if tc.wantOther != "" && strings.Contains(md, tc.wantOther) {
				t.Errorf("report shows %q, which is not the newest run:\n%s", tc.wantOther, md)
			}
			if got := strings.Contains(md, "from `make bench-torch`"); got != tc.wantFrom {
				t.Errorf("names make bench-torch's run: %v, want %v:\n%s", got, tc.wantFrom, md)
			}
			if tc.wantFrom && !strings.Contains(md, "AMD EPYC") {
				t.Errorf("the provenance line lacks the CPU:\n%s", md)
			}
		})
	}
}
