package main

// The side-by-side phase: pnec's network (bench/cmd/netbench) against the
// PyTorch reference (bench/torch/netbench.py importing
// ../shared/reference/pnec_torch.py) on the same network, scene and machine
// in the same run, each measurement a fresh process, the two sides
// alternating so that load changes hit both. Reported as ratios pnec/PyTorch.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// TorchRow is one comparison: a scene, an encoder and a mode.
type TorchRow struct {
	Scene   string    `json:"scene"`
	Size    string    `json:"size"` // rows x cols x bands, classes
	Encoder string    `json:"encoder"`
	Mode    string    `json:"mode"` // infer or train
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Pnec    TorchSide `json:"pnec"`
	Torch   TorchSide `json:"torch"`
	// Ratios pnec / PyTorch of the medians over runs (below 1: pnec is faster / smaller).
	TimeRatio float64 `json:"time_ratio"`
	RSSRatio  float64 `json:"rss_ratio"`
}

// TorchSide is one implementation's result over the runs.
type TorchSide struct {
	Runs      int       `json:"runs"`
	SecPerOp  []float64 `json:"sec_per_op"` // per run: median of its timed operations
	FirstS    []float64 `json:"first_s"`    // per run: the first operation (compilation, warm-up)
	PeakRSSMB []float64 `json:"peak_rss_mb"`
	Median    float64   `json:"median_s"`
	RSSMedian float64   `json:"peak_rss_mb_median"`
	Version   string    `json:"version,omitempty"`
}

type torchScene struct {
	name                       string
	rows, cols, bands, classes int
}

// torchScenes are Pavia University's and Houston 2013's sizes (a quarter of
// each side's pixels in quick mode).
func torchScenes(quick bool) []torchScene {
	if quick {
		return []torchScene{{"paviau-quarter", 152, 85, 103, 9}}
	}
	return []torchScene{{"paviau", 610, 340, 103, 9}, {"houston", 349, 1905, 144, 15}}
}

// torchPython finds the PyTorch interpreter and the environment it needs
// (OpenBLAS first: Debian's default BLAS is the slow reference one), or says
// why the phase is skipped.
func torchPython(ctx context.Context) ([]string, string) {
	py := "/usr/bin/python3"
	env := os.Environ()
	const openblas = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
	if _, err := os.Stat(openblas); err == nil {
		env = append(env, "LD_LIBRARY_PATH="+openblas+prefixed(os.Getenv("LD_LIBRARY_PATH")))
	}
	cmd := exec.CommandContext(ctx, py, "-c", "import torch")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("PyTorch not importable by %s (apt-get install -y python3-torch libopenblas0-openmp): %s",
			py, lastLineOr(string(out), err))
	}
	if _, err := os.Stat(openblas); err != nil {
		return env, "OpenBLAS (libopenblas0-openmp) missing: PyTorch runs on the reference BLAS, ratios flatter pnec"
	}
	return env, ""
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return ":" + s
}

// lastLineOr is the last line of out, or err's text when out is empty.
func lastLineOr(out string, err error) string {
	if strings.TrimSpace(out) == "" {
		return err.Error()
	}
	return lastLine(out)
}

// runTorchComparison runs every scene x encoder x mode, runs times per side.
func runTorchComparison(ctx context.Context, o options, scratch string) ([]TorchRow, []string, error) {
	ref := filepath.Join(filepath.Dir(o.Root), "shared", "reference")
	if o.Reference != "" {
		ref = o.Reference
	}
	var notes []string
	if _, err := os.Stat(filepath.Join(ref, "pnec_torch.py")); err != nil {
		return nil, []string{"side-by-side with PyTorch skipped: no reference at " + ref}, nil
	}
	pyEnv, why := torchPython(ctx)
	if pyEnv == nil {
		logf("torch phase skipped: %s", why)
		return nil, []string{"side-by-side with PyTorch skipped: " + why}, nil
	}
	if why != "" {
		notes = append(notes, why)
	}
	nb := filepath.Join(scratch, "bin", "netbench")
	build := exec.CommandContext(ctx, "go", "build", "-o", nb, "./bench/cmd/netbench")
	build.Dir, build.Env, build.Stderr = o.Root, goEnv(), os.Stderr
	if err := build.Run(); err != nil {
		return nil, nil, fmt.Errorf("build netbench: %w", err)
	}
	script := filepath.Join(o.Root, "bench", "torch", "netbench.py")
	runs, steps := o.TorchRuns, 3
	if runs == 0 {
		runs = map[bool]int{true: 1, false: 2}[o.Mode == "quick"]
	}
	var rows []TorchRow
	for _, sc := range torchScenes(o.Mode == "quick") {
		for _, enc := range []string{"paper", "cell"} {
			for _, mode := range []string{"infer", "train"} {
				row := TorchRow{Scene: sc.name, Encoder: enc, Mode: mode, Status: "ok",
					Size: fmt.Sprintf("%dx%dx%d, K=%d", sc.rows, sc.cols, sc.bands, sc.classes)}
				common := []string{"--rows", fmt.Sprint(sc.rows), "--cols", fmt.Sprint(sc.cols), "--bands", fmt.Sprint(sc.bands),
					"--classes", fmt.Sprint(sc.classes), "--encoder", enc, "--mode", mode, "--steps", fmt.Sprint(steps)}
				for r := 0; r < runs && row.Status == "ok"; r++ {
					if time.Now().After(o.Deadline) {
						row.Status, row.Reason = "skipped", "past the run's budget"
						break
					}
					logf("torch %s %s %s run %d/%d", sc.name, enc, mode, r+1, runs)
					if err := measureSide(ctx, &row.Pnec, nb, common, goEnv()); err != nil {
						row.Status, row.Reason = "failed", "pnec: "+err.Error()
						break
					}
					args := append([]string{script, "--ref", ref}, common...)
					if err := measureSide(ctx, &row.Torch, "/usr/bin/python3", args, pyEnv); err != nil {
						row.Status, row.Reason = "failed", "torch: "+err.Error()
					}
				}
				if row.Status == "ok" {
					row.Pnec.Median, row.Pnec.RSSMedian = median(row.Pnec.SecPerOp), median(row.Pnec.PeakRSSMB)
					row.Torch.Median, row.Torch.RSSMedian = median(row.Torch.SecPerOp), median(row.Torch.PeakRSSMB)
					row.TimeRatio = row.Pnec.Median / row.Torch.Median
					row.RSSRatio = row.Pnec.RSSMedian / row.Torch.RSSMedian
					logf("  %s %s %s: pnec %.3f s %.0f MB, torch %.3f s %.0f MB: time x%.2f, RSS x%.2f", sc.name, enc, mode,
						row.Pnec.Median, row.Pnec.RSSMedian, row.Torch.Median, row.Torch.RSSMedian, row.TimeRatio, row.RSSRatio)
				} else {
					logf("  %s %s %s: %s: %s", sc.name, enc, mode, row.Status, row.Reason)
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, notes, nil
}

// measureSide runs one process and records its median time per operation
// and its peak RSS (the kernel's maxrss of the child).
func measureSide(ctx context.Context, side *TorchSide, prog string, args, env []string) error {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%w: %s", err, lastLineOr(stderr.String(), err))
	}
	var res struct {
		FirstS  float64 `json:"first_s"`
		MedianS float64 `json:"median_s"`
		Version string  `json:"version"`
		Backend string  `json:"backend"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("parse %q: %w", strings.TrimSpace(string(out)), err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return fmt.Errorf("no rusage for %s", prog)
	}
	side.Runs++
	side.SecPerOp = append(side.SecPerOp, res.MedianS)
	side.FirstS = append(side.FirstS, res.FirstS)
	side.PeakRSSMB = append(side.PeakRSSMB, float64(ru.Maxrss)/1024) // Linux: KiB
	if res.Version != "" {
		side.Version = "torch " + res.Version
	} else if res.Backend != "" {
		side.Version = "pnec, backend " + res.Backend
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// torchMarkdown renders the comparison table.
func torchMarkdown(b *strings.Builder, rows []TorchRow) {
	b.WriteString("## pnec against PyTorch on the same network\n\n")
	b.WriteString("bench/cmd/netbench (pnec) and bench/torch/netbench.py (the reference in ../shared/reference, PyTorch on OpenBLAS) " +
		"on the same synthetic scene, the same encoder and the same machine in this run, alternating, each measurement a fresh process " +
		"with 2 threads. `infer`: full-scene inference (network, bilinear upsampling, softmax, AvgPool recovery, argmax); " +
		"`train`: one full training step (forward, the four losses, backward, Adam, prototype update, calibration on). " +
		"Time: median over runs of each run's median of 3 operations after a first (compile/warm-up) one; peak RSS: the process's maxrss. " +
		"Ratios are pnec / PyTorch: below 1.00 pnec is faster or smaller.\n\n")
	if len(rows) == 0 {
		b.WriteString("(not run)\n\n")
		return
	}
	b.WriteString("| scene | size | encoder | mode | pnec s/op | PyTorch s/op | time ratio | pnec peak RSS MB | PyTorch peak RSS MB | RSS ratio | pnec first op s |\n")
	b.WriteString("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		if r.Status != "ok" {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s: %s | | | | | | |\n", r.Scene, r.Size, r.Encoder, r.Mode, strings.ToUpper(r.Status), mdEscape(r.Reason))
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | **%.2f** | %.0f | %.0f | **%.2f** | %s |\n", r.Scene, r.Size, r.Encoder, r.Mode,
			num(r.Pnec.Median), num(r.Torch.Median), r.TimeRatio, r.Pnec.RSSMedian, r.Torch.RSSMedian, r.RSSRatio, num(median(r.Pnec.FirstS)))
	}
	b.WriteString("\n")
}
